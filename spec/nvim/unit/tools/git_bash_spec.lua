--- tools/git.lua and tools/bash.lua's own logic (run in Neovim): what a
--- git call plans to run (the subcommands it takes, the safe config in
--- front, a clone's destination in the playground, on the host or not,
--- its environment, the question it shows), and the bash tool's time
--- limit, network line and loopback hint.
local git = require("flemma_sandbox.tools.git")
local bash = require("flemma_sandbox.tools.bash")
local surroundings = require("flemma_sandbox.base.surroundings")
local h = require("support.helpers")

describe("tools.git", function()
  local dir, playground

  before_each(function()
    dir = h.tmpdir()
    playground = dir .. "/data/flemma-sandbox/playground"
    vim.fn.mkdir(dir .. "/project", "p")
    surroundings.use({
      getenv = function(name)
        if name == "XDG_DATA_HOME" then
          return dir .. "/data"
        end
        return os.getenv(name)
      end,
    })
  end)

  after_each(function()
    surroundings.use(nil)
    h.rmdir(dir)
  end)

  it("names a repository after its address", function()
    assert.are.equal("b", git.repo_name("https://host/a/b.git/"))
    assert.are.equal("repo", git.repo_name("git@host:org/repo.git"))
    assert.are.equal("x", git.repo_name("/srv/git/x"))
    assert.are.equal("name.with.dots", git.repo_name("https://h/name.with.dots"))
  end)

  it("refuses args that are no list of strings, naming the index", function()
    assert.are.same({ nil, 'git: "args" must be a non-empty list of strings, e.g. ["status"]' }, { git.plan({}, dir) })
    assert.are.same(
      { nil, 'git: "args" must be a non-empty list of strings, e.g. ["status"]' },
      { git.plan("st", dir) }
    )
    assert.are.same({ nil, 'git: "args"[2] must be a string' }, { git.plan({ "log", 3 }, dir) })
  end)

  it("refuses a subcommand it does not take, listing the ones it does", function()
    local plan, err = git.plan({ "config", "user.name", "x" }, dir)
    assert.is_nil(plan)
    assert.matches("^unsupported git subcommand: config %(read: status, log, diff, show; write: ", err)
  end)

  it("passes git_args' refusal on", function()
    local plan, err = git.plan({ "diff", "--ext-diff" }, dir)
    assert.is_nil(plan)
    assert.is_truthy(err)
  end)

  it("runs a read in the sandbox with hooks and fsmonitor off, never prompting", function()
    local plan = assert(git.plan({ "log", "-1" }, dir))
    assert.are.same({ "git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "log", "-1" }, plan.argv)
    assert.is_false(plan.on_host)
    assert.is_false(plan.wants_network)
    assert.are.same(
      { GIT_TERMINAL_PROMPT = "0", GIT_EDITOR = "true", GIT_ALLOW_PROTOCOL = "https:http:ssh:git" },
      plan.env
    )
  end)

  it("runs a repository write, fetch and pull on the host", function()
    for _, sub in ipairs({ "commit", "checkout", "rebase", "fetch", "pull" }) do
      local plan = assert(git.plan({ sub }, dir))
      assert.is_true(plan.on_host, sub)
    end
    assert.is_true(assert(git.plan({ "fetch" }, dir)).wants_network)
  end)

  it("clones into the playground by default, in the sandbox", function()
    local plan = assert(git.plan({ "clone", "https://example.com/org/tool.git" }, dir .. "/project"))
    assert.are.equal(playground .. "/tool", plan.argv[#plan.argv])
    assert.are.same({ dest = playground .. "/tool", playground = playground, in_playground = true }, plan.clone)
    assert.is_false(plan.on_host)
    assert.is_true(plan.wants_network)
    local lines = git.question_lines({ "clone", "https://example.com/org/tool.git" }, plan, dir .. "/project")
    assert.are.equal("network: yes", lines[3])
    assert.are.equal("into " .. playground .. "/tool", lines[4])
    assert.is_nil(lines[5])
  end)

  it("clones elsewhere on the host, and the question says so", function()
    local args = { "clone", "https://example.com/org/tool.git", "vendor/tool" }
    local plan = assert(git.plan(args, dir .. "/project"))
    assert.are.equal(dir .. "/project/vendor/tool", plan.clone.dest)
    assert.is_false(plan.clone.in_playground)
    assert.is_true(plan.on_host)
    assert.are.equal("vendor/tool", plan.argv[#plan.argv], "the destination as given, not added twice")
    local lines = git.question_lines(args, plan, dir .. "/project")
    assert.are.equal("runs OUTSIDE the sandbox, with your git config (hooks and fsmonitor off)", lines[#lines])
  end)

  it("refuses an option after the address of a network call", function()
    local plan, err = git.plan({ "fetch", "origin", "--", "-x" }, dir)
    assert.is_nil(plan)
    assert.is_truthy(err)
  end)

  it("in clone mode runs nothing on the host and refuses a clone outside the playground", function()
    local ctx = { cwd = dir .. "/project", copies = { { top = dir .. "/project", clone = dir .. "/c" } } }
    local request = assert(git.prepare({ args = { "commit", "-m", "x" } }, ctx))
    assert.is_false(ctx.git.on_host)
    assert.is_nil(request.must_ask)
    local _, err = git.prepare({ args = { "clone", "https://example.com/a/b", "/var/tmp/elsewhere" } }, ctx)
    assert.are.equal('git clone outside the playground is not available with sandboxes.workspace = "clone"', err)
  end)

  it("always asks before a call that runs on the host", function()
    local ctx = { cwd = dir .. "/project" }
    assert.is_true(assert(git.prepare({ args = { "commit", "-m", "x" } }, ctx)).must_ask)
    assert.is_nil(assert(git.prepare({ args = { "status" } }, ctx)).must_ask)
  end)
end)

describe("tools.bash", function()
  local tools = { timeout_ms = 120000, max_timeout_ms = 600000 }

  it("takes the call's time limit in seconds, at least 1 ms, capped with a note naming the key", function()
    assert.are.same({ 120000, nil }, { bash.timeout(nil, tools) })
    assert.are.same({ 5000, nil }, { bash.timeout(5, tools) })
    assert.are.same({ 1, nil }, { bash.timeout(0, tools) })
    assert.are.same({ 1500, nil }, { bash.timeout(1.5, tools) })
    assert.are.same({
      600000,
      "[sandbox] timeout 900 s is above tools.max_timeout_ms: capped at 600000 ms",
    }, { bash.timeout(900, tools) })
    assert.are.same(
      { 600000, "[sandbox] timeout 700 s is above tools.max_timeout_ms: capped at 600000 ms" },
      { bash.timeout(nil, { timeout_ms = 700000, max_timeout_ms = 600000 }) }
    )
  end)

  it("says what the command's network will be", function()
    local function cfg(enabled, network)
      return { enabled = enabled, policy = { network = network } }
    end
    assert.are.equal("yes, the host's (the sandbox is off)", bash.network_line(cfg(false, false), false))
    assert.are.equal("no (the call says it needs it)", bash.network_line(cfg(true, false), true))
    assert.are.equal("yes, the host's", bash.network_line(cfg(true, "host"), false))
    assert.are.equal(
      "yes, through the proxy: allow_domains, other hosts after asking",
      bash.network_line(cfg(true, "ask"), false)
    )
    assert.are.equal("yes, through the proxy: allow_domains only", bash.network_line(cfg(true, "allowlist"), false))
    assert.are.equal("yes, through the proxy: allow_domains only", bash.network_line(cfg(true, true), false))
  end)

  it("knows a failed connection to the loopback, and nothing else", function()
    assert.is_true(
      bash.looks_like_loopback_failure("curl: (7) Failed to connect to 127.0.0.1 port 8080: Connection refused")
    )
    assert.is_true(bash.looks_like_loopback_failure("connect to localhost port 5432 failed: Connection refused"))
    assert.is_false(
      bash.looks_like_loopback_failure("curl: (7) Failed to connect to 10.0.0.1 port 80: Connection refused")
    )
    assert.is_false(bash.looks_like_loopback_failure("listening on 127.0.0.1:8080"))
  end)
end)
