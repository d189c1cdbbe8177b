--- An agent CLI inside (Claude Code, from CLAUDE_BIN: CI installs it from
--- npm): with policy.home_overlay its configuration is the sandbox's copy,
--- and what it writes there never reaches the host's. The control runs it
--- with the host's files writable (a bwrap without a network), where it
--- writes the host's configuration. No spec here talks to any network.
local cli = require("support.cli")
local h = require("support.helpers")

local CLAUDE = os.getenv("CLAUDE_BIN")

--- The host's configuration of the agent, file by file, with hashes.
local function manifest(w)
  return h.capture(
    "cd "
      .. h.shell_quote(w.home)
      .. " && find .claude -print0 | sort -z | xargs -0 -r ls -ld --time-style=+%s;"
      .. " find .claude -type f -print0 | sort -z | xargs -0 -r md5sum"
  )
end

--- Claude Code with its whole configuration in ~/.claude (CLAUDE_CONFIG_DIR:
--- it replaces its .claude.json by renaming a new file over it, which needs
--- a writable folder), a prompt it cannot send (not logged in, no
--- network), then what ~/.claude holds.
local function prompt_and_list(claude)
  return "export CLAUDE_CONFIG_DIR=$HOME/.claude; timeout 60 "
    .. h.shell_quote(claude)
    .. " -p hi </dev/null; ls -A ~/.claude"
end

describe("an agent CLI in a command line sandbox", function()
  local w
  cli.each_world(function(world)
    w = world
  end)

  it("Claude Code runs with its configuration as the sandbox's copy", function()
    if not CLAUDE or vim.fn.executable(CLAUDE) == 0 then
      return pending("CLAUDE_BIN names no Claude Code (CI installs it from npm)")
    end
    vim.fn.mkdir(w.home .. "/.claude", "p")
    h.write(w.home .. "/.claude/settings.json", '{"model":"sonnet"}\n')
    h.write(w.home .. "/.claude/.claude.json", '{"numStartups":1}\n')
    cli.setup(w, { policy = { network = false, home_overlay = { "~/.claude" } } })
    local before = manifest(w)
    local r = cli.run(w, { "run", "--direct", "agent", "--", CLAUDE, "--version" })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("Claude Code", r.stdout)
    r = cli.run(w, { "run", "--direct", "agent", "--", "sh", "-c", prompt_and_list(CLAUDE) })
    local inside = r.stdout
    assert.matches("settings%.json", inside)
    assert.are.equal(before, manifest(w))
    -- control: with the host's files writable (and no network) it writes the host's
    local unprotected = { "bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--" }
    local control = h.run(vim.list_extend(unprotected, { "sh", "-c", prompt_and_list(CLAUDE) }), cli.env(w), w.proj)
    assert.are_not.equal(before, manifest(w), control.stderr)
    -- what it made in the copy inside, it made in the host's in the control
    for _, made in ipairs({ "projects", "sessions" }) do
      assert.is_nil(before:find(made, 1, true))
      assert.matches(made, inside)
      assert.matches(made, control.stdout)
    end
  end)
end)
