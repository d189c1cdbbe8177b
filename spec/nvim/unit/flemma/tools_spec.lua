--- flemma/tools.lua (run in Neovim, no Flemma: the real Flemma runs this
--- tool module in spec/flemma/bridge_spec's "the git tool module"). What
--- Flemma hands a tool is stood in for: its ExecutionContext (cwd,
--- truncate, and sandbox.wrap_command, here our own backend's), its
--- flemma.sandbox module (the buffer's policy) and the user's answer in
--- the question window. The git tool runs reads sandboxed (real bwrap),
--- a repository write on the host only once the user said yes, refuses a
--- network subcommand when Flemma's policy has the network off, and an
--- unsupported subcommand with the list of those it has.
local h = require("support.helpers")
local questions = require("flemma_sandbox.questions")
local sandbox = require("flemma_sandbox")
local tools = require("flemma_sandbox.flemma.tools")

describe("flemma.tools (git, without Flemma)", function()
  local dir, old_cwd, bufnr, saved_prompt, saved_flemma_sandbox, answer, asked, network

  local def = tools.definitions[1]

  --- Runs the git tool as Flemma would (run by hand: no approval of
  --- Flemma's) and waits for its result.
  local function git(args)
    local result
    local ctx = {
      bufnr = bufnr,
      tool_id = "toolu_spec",
      cwd = dir,
      timeout = 20,
      truncate = {
        truncate_with_overflow = function(text)
          return { content = text }
        end,
      },
      sandbox = { wrap_command = sandbox.wrapper(bufnr) },
    }
    def.execute({ label = "spec", args = args }, ctx, function(r)
      result = r
    end)
    assert.is_true(vim.wait(20000, function()
      return result ~= nil
    end, 10))
    return result
  end

  local function staged()
    return h.run({ "git", "diff", "--cached", "--name-only" }, nil, dir).stdout
  end

  before_each(function()
    dir = h.tmpdir()
    h.sh("cd " .. h.shell_quote(dir) .. " && git init -q -b main . && printf 'x\\n' > f.txt")
    h.write(dir .. "/secret.txt", "SECRET-SPEC\n")
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "/tmp" }, network = false, deny_read = { dir .. "/secret.txt" } },
    })
    old_cwd = vim.fn.getcwd()
    vim.cmd("cd " .. vim.fn.fnameescape(dir))
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/a.chat"))
    bufnr = vim.api.nvim_get_current_buf()
    saved_prompt, asked, answer, network = questions.prompt, {}, "deny", false
    questions.prompt = function(question, respond)
      asked[#asked + 1] = question.lines[1]
      vim.schedule(function()
        respond(answer)
      end)
      return function() end
    end
    saved_flemma_sandbox = package.loaded["flemma.sandbox"]
    package.loaded["flemma.sandbox"] = {
      resolve_config = function()
        return { enabled = true }
      end,
      get_policy = function()
        return { network = network }
      end,
    }
  end)

  after_each(function()
    questions.prompt = saved_prompt
    package.loaded["flemma.sandbox"] = saved_flemma_sandbox
    vim.cmd("silent! %bwipeout!")
    vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
    sandbox.setup()
    h.rmdir(dir)
  end)

  it("is one tool, git, whose preview shows the command", function()
    assert.are.equal(1, #tools.definitions)
    assert.are.equal("git", def.name)
    assert.is_true(def.async)
    assert.are.same(
      { label = "l", detail = "$ git log -n 1" },
      def.format_preview({ label = "l", args = { "log", "-n", "1" } })
    )
  end)

  it("runs a read in the sandbox: git status of the project, a hidden file hidden", function()
    local r = git({ "status" })
    assert.is_true(r.success, r.error)
    assert.matches("On branch main", r.output)
    assert.matches("f%.txt", r.output)
    assert.are.same({}, asked, "a read is not asked")
    -- a path the policy hides is hidden from git too (the host reads it)
    r = git({ "diff", "--no-index", "/dev/null", dir .. "/secret.txt" })
    assert.is_nil((r.output or r.error or ""):find("SECRET-SPEC", 1, true), vim.inspect(r))
    assert.are.equal("SECRET-SPEC\n", h.read(dir .. "/secret.txt"))
  end)

  it("writes on the host only once the user says yes (control: declined, nothing staged)", function()
    local r = git({ "add", "f.txt" })
    assert.are.same({ "$ git add f.txt" }, asked)
    assert.are.equal("not run: the user declined git add on the host", r.error)
    assert.are.equal("", staged())
    answer = "once"
    r = git({ "add", "f.txt" })
    assert.is_true(r.success, r.error)
    assert.are.equal("f.txt\n", staged())
  end)

  it("refuses a network subcommand while Flemma's policy has no network, and an unknown subcommand", function()
    local r = git({ "fetch" })
    assert.matches("git fetch needs the network, and Flemma's sandbox.policy.network is off", r.error)
    assert.are.same({}, asked)
    network = true
    r = git({ "fetch" })
    assert.are.equal(
      "not run: the user declined git fetch on the host",
      r.error,
      "control: with the network it is asked"
    )
    r = git({ "frobnicate" })
    assert.matches("^unsupported git subcommand: frobnicate", r.error)
  end)
end)
