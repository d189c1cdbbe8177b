--- flemma-sandbox run as a job of the user's shell, in a real terminal
--- (tmux, an interactive bash with job control): Ctrl-Z suspends the
--- whole run and the shell gets its prompt back, the command inside
--- stopped; `fg` continues it (control: the same command run bare behaves
--- the same in the same terminal).
local cli = require("support.cli")
local h = require("support.helpers")
local tmux = require("support.tmux")

--- The state letter (ps STAT's first) of the process pid.
---@param pid string
---@return string|nil
local function state(pid)
  local stat = h.read("/proc/" .. pid .. "/stat")
  return stat and stat:match("^%d+ %b() (%a)")
end

--- An interactive bash (job control on) in a terminal, in w's project,
--- with w's environment; its prompt is "P$ ".
---@param w support.CliWorld
---@return support.Tmux
local function shell(w)
  local t = tmux.new("job")
  local rc = w.base .. "/bashrc"
  h.write(rc, "PS1='P$ '\n")
  t:start(cli.shell_line(w, { "bash", "--noprofile", "--rcfile", rc, "-i" }), 100, 30)
  t:wait_for("P$ ")
  return t
end

--- Runs line in t's shell, Ctrl-Z once the process marked `marker` runs,
--- then `fg`; returns what was seen: the state of that process and the
--- screen while suspended, whether AFTER-42 (that the command shows
--- once its sleep is over) was on screen while suspended, and the
--- screen at the end.
---@param t support.Tmux
---@param line string
---@param marker string
---@return table
local function suspend_and_fg(t, line, marker)
  local seen = {}
  t:keys(line, "Enter")
  local pid = cli.eventually(function()
    local p = cli.host_pids(marker)
    return p ~= "" and p:match("%d+")
  end)
  assert.truthy(pid, "the command did not start: " .. t:screen())
  vim.loop.sleep(300)
  t:keys("C-z")
  seen.suspended_screen = t:wait_for("Stopped", 5000)
  seen.suspended_state = cli.eventually(function()
    return state(pid) == "T" and "T"
  end) or state(pid)
  -- the command's sleep (1.5 s) would be over by now had it run on
  vim.loop.sleep(2500)
  seen.after_while_suspended = t:screen():find("AFTER-42", 1, true) ~= nil
  t:keys("fg; echo EXITED-$?", "Enter")
  seen.final_screen = t:wait_for("\nEXITED-", 30000)
  return seen
end

describe("flemma-sandbox run as a job of the user's shell", function()
  local w, t
  local pids = {}
  tmux.kill_after_each(function()
    return t
  end)
  after_each(function()
    t = nil
    for _, pid in ipairs(pids) do
      vim.loop.kill(tonumber(pid), 9)
    end
    pids = {}
  end)
  cli.each_world(function(world)
    w = world
  end)

  it("Ctrl-Z suspends the whole run and gives the shell its prompt; fg continues the command", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local marker = string.format(": job-%06d", math.random(0, 999999))
    local inner = marker .. "; sleep 1.5; echo AFTER-$((40+2))"
    t = shell(w)
    local line = cli.shell_line(w, { cli.BIN, "run", "jc", "--", "sh", "-c", inner }, { term = false })
    local seen = suspend_and_fg(t, line, "sh -c " .. marker)
    -- the user's shell has its prompt, the command inside is stopped
    assert.matches("Stopped", seen.suspended_screen)
    assert.matches("P%$%s*$", seen.suspended_screen)
    assert.are.equal("T", seen.suspended_state)
    assert.is_false(seen.after_while_suspended)
    -- fg: the command went on and finished, the run's exit code is its
    assert.matches("AFTER%-42\r?\nEXITED%-0", seen.final_screen)
  end)

  it("control: the same command run bare in the same terminal", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local marker = string.format(": job-%06d", math.random(0, 999999))
    t = shell(w)
    local line = "sh -c " .. h.shell_quote(marker .. "; sleep 1.5; echo AFTER-$((40+2))")
    local seen = suspend_and_fg(t, line, "sh -c " .. marker)
    assert.matches("Stopped", seen.suspended_screen)
    assert.are.equal("T", seen.suspended_state)
    assert.is_false(seen.after_while_suspended)
    assert.matches("AFTER%-42\r?\nEXITED%-0", seen.final_screen)
  end)
end)
