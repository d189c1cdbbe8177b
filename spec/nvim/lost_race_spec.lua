--- A protected file that vanishes between a call's plan and its sandbox's
--- start (issue 38, item 8: "bwrap: Can't find source path .../.mcp.json"
--- after a restart): the call is planned afresh and runs. A bwrap in front
--- of the real one deletes the file right before the sandbox starts, once
--- armed.
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")

--- The test's old predicate (backends/helper.lua lost_race before): only
--- a fresh run's bwrap exit, nothing said before it.
local function old_lost_race(code, stdout, stderr)
  return code == 1 and stdout == "" and stderr:match("^bwrap: Can't [^\n]*\n?$") ~= nil
end

describe("a protected file deleted between plan and start", function()
  local p, arm

  local function setup(ro)
    sandbox.setup({
      backend = "bwrap",
      backends = { bwrap = { path = p.dir .. "/bwrap" } },
      policy = { rw_paths = { "$CWD", "/tmp" }, deny_read = ro, network = false },
    })
  end

  before_each(function()
    p = project.enter("git init -q . && echo '{}' > .mcp.json")
    arm = p.dir .. "/arm"
    -- once armed, the next bwrap that binds .mcp.json deletes it first
    h.write(
      p.dir .. "/bwrap",
      "#!/bin/sh\nfor a; do case $a in */.mcp.json) if [ -e "
        .. h.shell_quote(arm)
        .. " ]; then rm -f "
        .. h.shell_quote(arm)
        .. " "
        .. h.shell_quote(p.proj .. "/.mcp.json")
        .. "; fi;; esac; done\nexec "
        .. h.shell_quote(vim.fn.exepath("bwrap"))
        .. ' "$@"\n'
    )
    h.sh("chmod +x " .. h.shell_quote(p.dir .. "/bwrap"))
  end)

  after_each(function()
    vim.cmd("silent! %bwipeout!")
    project.leave(p)
  end)

  it("runs the call that restarts the chat's sandbox (control: without the retry it fails)", function()
    setup(nil)
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    local r = n.run_tool("bash", { command = "echo one" }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, r.stderr)
    -- armed, after a policy change that starts the sandbox again: the
    -- tool call is planned afresh and runs
    h.write(arm, "")
    setup({ "/srv" })
    r = n.run_tool("bash", { command = "echo two; ls -a" }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.matches("^two\n", r.stdout)
    assert.is_nil(h.read(arm), "the bwrap in front deleted it on the way")
    assert.is_nil(h.read(p.proj .. "/.mcp.json"))
    assert.is_nil(r.stdout:find(".mcp.json", 1, true))
    -- control: the wrapped call alone (no retry), armed, restarted again
    h.write(p.proj .. "/.mcp.json", "{}")
    r = n.run_tool("bash", { command = "echo three" }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, r.stderr)
    h.write(arm, "")
    setup({ "/srv", "/opt" })
    local argv, _, record = assert(sandbox.wrap_command({ "sh", "-c", "echo four" }, bufnr))
    local raw = h.run_wrapped(argv, nil, nil, record)
    assert.are.equal(126, raw.code, raw.stderr)
    assert.matches("sandbox was started again", raw.stderr)
    assert.matches("bwrap: Can't find source path [^\n]*/%.mcp%.json", raw.stderr)
    assert.is_nil(h.read(p.proj .. "/.mcp.json"), "the race was lost")
    assert.is_false(old_lost_race(raw.code, raw.stdout, raw.stderr), "the check before did not see it")
    -- the keeper's host side said so: bwrap ended before the init program started
    assert.are.equal(1, #h.records_of(raw.records, "setup_failed"), vim.inspect(raw.records))
    assert.are.equal("bwrap", h.records_of(raw.records, "setup_failed")[1].by)
    assert.is_true(require("flemma_sandbox.run.records").lost_race(raw.code, raw.records))
  end)

  it("runs a fresh run's call the same way (a sandbox kept by no chat)", function()
    setup(nil)
    h.write(arm, "")
    local r = n.run_job({ "sh", "-c", "echo once" }, { wrap = sandbox.wrapper(nil) })
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.are.equal("once\n", r.stdout)
    assert.is_nil(h.read(arm))
    -- the wrapped call alone, armed: bwrap's exit, and the host side's record of it
    h.write(p.proj .. "/.mcp.json", "{}")
    h.write(arm, "")
    local argv, _, record = assert(sandbox.wrap_command({ "sh", "-c", "echo twice" }, nil))
    local raw = h.run_wrapped(argv, nil, nil, record)
    assert.are.equal(1, raw.code, raw.stderr)
    assert.are.equal("", raw.stdout)
    assert.are.same(
      { "bwrap" },
      vim.tbl_map(function(rec)
        return rec.by
      end, h.records_of(raw.records, "setup_failed"))
    )
    assert.is_true(require("flemma_sandbox.run.records").lost_race(raw.code, raw.records))
  end)

  --- A command that prints bwrap's own words and fails: what the old check
  --- (the words on stderr) took for a lost race, and ran again.
  local function says_lost(count, code, restarted)
    return string.format(
      "echo ran >> %s; %sprintf '%%s\\n' \"bwrap: Can't find source path /x: No such file or directory\" >&2; exit %d",
      h.shell_quote(count),
      restarted and 'echo "flemma-sandbox: this chat\'s sandbox was started again: x" >&2; ' or "",
      code
    )
  end

  it("runs once a command that prints bwrap's words itself (control: the words-based check ran it twice)", function()
    setup(nil)
    local count = p.proj .. "/count"
    local r = n.run_job({ "sh", "-c", says_lost(count, 1) }, { wrap = sandbox.wrapper(nil) })
    assert.are.equal(1, r.exit_code, r.stderr)
    assert.is_true(old_lost_race(r.exit_code, r.stdout, r.stderr), "the words fooled the check before")
    assert.are.same({}, h.records_of(r.records, "setup_failed"))
    assert.are.equal("ran\n", h.read(count), "the command ran once")
    -- a chat's live call: exit 126 after the line of a sandbox started again
    local bufnr = n.open_chat(p.proj .. "/b.chat", { "@You:", "hi" })
    os.remove(count)
    r = n.run_tool("bash", { command = says_lost(count, 126, true) }, { bufnr = bufnr, approved = true })
    assert.are.equal(126, r.exit_code, r.stderr)
    assert.matches("sandbox was started again: x\nbwrap: Can't find", r.stderr)
    assert.are.equal("ran\n", h.read(count), "the command ran once")
  end)
end)
