--- flemma-sandbox run as a job of the user's shell, in a real terminal
--- (tmux, an interactive bash with job control): Ctrl-Z suspends the
--- whole run and the shell gets its prompt back, the command inside
--- stopped; `fg` continues it (control: the same command run bare behaves
--- the same in the same terminal); so does vim's own Ctrl-Z (vim in raw
--- mode stops itself: the sandbox's job holder lets it) and fg brings it
--- back redrawn. A line typed while the command sleeps
--- reaches it when it reads; one it never reads stays with it (as with
--- `ssh -t`): it never runs in the user's shell after. fish with the
--- user's fish_variables starts with no error line (its universal
--- variables and generated folders are the sandbox's, kept with it; its
--- config stays read-only).
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

  --- vim in t's shell on a file of one line (VIM-MARK-1), by line (the
  --- command that starts it): Ctrl-Z, then fg, then a line added and
  --- :wq; what was seen.
  ---@param line string
  ---@param file string
  ---@return table
  local function vim_suspend_and_fg(line, file)
    local seen = {}
    -- (alone on its line: a stopped command of a list lets bash go on)
    t:keys(line, "Enter")
    seen.started = cli.eventually(function()
      local shown = t:screen()
      if shown:find("Press ENTER", 1, true) then
        -- vim 9 in the sandbox: "E1286: Could not set timeout" (no timer_create)
        t:keys("Enter")
        return nil
      end
      return shown:find("VIM-MARK-1", 1, true) and not shown:find("P$ ", 1, true) and shown
    end) or t:screen()
    local pid = cli.eventually(function()
      local p = cli.host_pids("vim -u NONE -N -i NONE -n " .. file)
      return p ~= "" and p:match("%d+")
    end)
    t:keys("C-z")
    seen.suspended_screen = t:wait_for("Stopped", 5000)
    seen.suspended_state = pid
      and (cli.eventually(function()
        return state(pid) == "T" and "T"
      end) or state(pid))
    t:keys("fg", "Enter")
    seen.resumed_screen = cli.eventually(function()
      local shown = t:screen()
      return shown:find("VIM-MARK-1", 1, true) and not shown:find("Stopped", 1, true) and shown
    end) or t:screen()
    t:keys("oVIM-MARK-2", "Escape", ":wq", "Enter")
    t:keys("echo EXITED-$?", "Enter")
    seen.final_screen = t:wait_for("\nEXITED-", 20000)
    return seen
  end

  --- Why the vim specs cannot run here, or nil: they need tmux and Vim
  --- itself (`vim` is Neovim on some systems: its TUI's own Ctrl-Z in the
  --- sandbox is not handled yet).
  ---@return string|nil
  local function no_vim()
    if not tmux.available() or vim.fn.executable("vim") == 0 then
      return "tmux or vim is not installed"
    end
    if not vim.fn.system({ "vim", "--version" }):find("^VIM %- Vi IMproved") then
      return "`vim` is not Vim here (Neovim?)"
    end
    return nil
  end

  it("vim's own Ctrl-Z suspends the whole run; fg brings vim back, redrawn, and it goes on", function()
    if no_vim() then
      return pending(no_vim())
    end
    local file = w.proj .. "/vim-" .. math.random(0, 999999) .. ".txt"
    h.write(file, "VIM-MARK-1\n")
    t = shell(w)
    local argv = { cli.BIN, "run", "--direct", "jc", "--", "vim", "-u", "NONE", "-N", "-i", "NONE", "-n", file }
    local seen = vim_suspend_and_fg(cli.shell_line(w, argv, { term = false }), file)
    assert.matches("VIM%-MARK%-1", seen.started)
    -- the user's shell has its prompt, vim is stopped
    assert.matches("Stopped", seen.suspended_screen)
    assert.matches("P%$%s*$", seen.suspended_screen)
    assert.are.equal("T", seen.suspended_state)
    -- fg: vim's screen again, and vim goes on
    assert.matches("VIM%-MARK%-1", seen.resumed_screen)
    assert.matches("EXITED%-0", seen.final_screen)
    assert.are.equal("VIM-MARK-1\nVIM-MARK-2\n", h.read(file))
  end)

  it("control: the same vim run bare in the same terminal", function()
    if no_vim() then
      return pending(no_vim())
    end
    local file = w.proj .. "/vim-" .. math.random(0, 999999) .. ".txt"
    h.write(file, "VIM-MARK-1\n")
    t = shell(w)
    local seen = vim_suspend_and_fg("vim -u NONE -N -i NONE -n " .. h.shell_quote(file), file)
    assert.matches("Stopped", seen.suspended_screen)
    assert.are.equal("T", seen.suspended_state)
    assert.matches("VIM%-MARK%-1", seen.resumed_screen)
    assert.matches("EXITED%-0", seen.final_screen)
    assert.are.equal("VIM-MARK-1\nVIM-MARK-2\n", h.read(file))
  end)

  it("a line typed while the command sleeps reaches it when it reads", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    t = shell(w)
    local inner = "sleep 2; read x; echo got:$x"
    local line = cli.shell_line(w, { cli.BIN, "run", "jc", "--", "sh", "-c", inner }, { term = false })
    t:keys(line .. "; echo RUN-$((1+1))", "Enter")
    vim.loop.sleep(500)
    t:keys("typed-ahead", "Enter")
    -- (and the run is over: nothing of it writes while the world goes)
    assert.matches("got:typed%-ahead.*RUN%-2", t:wait_for("RUN-2", 20000))
  end)

  it("a line the command never reads does not run in the user's shell after", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    t = shell(w)
    local ran = w.base .. "/shell-ran"
    local line = cli.shell_line(w, { cli.BIN, "run", "jc", "--", "sleep", "2" }, { term = false })
    t:keys(line .. "; echo RUN-$((1+1))", "Enter")
    vim.loop.sleep(500)
    t:keys("touch " .. h.shell_quote(ran), "Enter")
    assert.matches("RUN%-2", t:wait_for("RUN-2", 20000))
    -- the shell would run a line left for it now
    vim.loop.sleep(1000)
    assert.is_nil(vim.loop.fs_stat(ran), "the typed line ran in the user's shell")
  end)

  it("fish with the user's fish_variables starts without errors; set -U stays with the sandbox", function()
    if not tmux.available() or vim.fn.executable("fish") == 0 then
      return pending("tmux or fish is not installed")
    end
    local dir = w.home .. "/.config/fish"
    vim.fn.mkdir(dir .. "/functions", "p")
    local uvars = "# VERSION: 3.0\nSETUVAR __fish_initialized:3400\nSETUVAR host_uvar:host\n"
    h.write(dir .. "/fish_variables", uvars)
    local config = "function fish_prompt; echo 'fish-prompt> '; end\n"
    h.write(dir .. "/config.fish", config)
    h.write(dir .. "/functions/userfn.fish", "function userfn; echo USER-FN-$argv; end\n")
    t = tmux.new("job")
    local line = cli.shell_line(w, { cli.BIN, "run", "fi" }, { env = { SHELL = vim.fn.exepath("fish") } })
    t:start("sh -c " .. h.shell_quote(line .. "; " .. line .. "; echo EXITED-$?; sleep 60"), 100, 30)
    local shown = t:wait_for("fish-prompt>", 20000)
    assert.matches("fish%-prompt>", shown)
    local errors = {}
    for l in shown:gmatch("[^\n]+") do
      if l:find("error") or l:find("warning") or l:find("mkdir") or l:find("Read%-only") then
        errors[#errors + 1] = l
      end
    end
    assert.is_true(#errors <= 1, shown)
    t:keys("userfn 1; set -U sandbox_uvar kept; echo evil >> ~/.config/fish/config.fish; exit", "Enter")
    -- the second run: the sandbox's universal variable is there
    assert.truthy(
      cli.eventually(function()
        local _, prompts = t:screen():gsub("fish%-prompt>", "")
        return prompts >= 2
      end),
      t:screen()
    )
    t:keys("echo UVAR-$sandbox_uvar; exit", "Enter")
    local last = t:wait_for("\nEXITED-", 20000)
    assert.matches("USER%-FN%-1", last)
    assert.matches("UVAR%-kept", last)
    -- the user's files are as they were
    assert.are.equal(config, h.read(dir .. "/config.fish"))
    assert.are.equal(uvars, h.read(dir .. "/fish_variables"))
    assert.is_nil(vim.loop.fs_stat(dir .. "/conf.d"))
  end)
end)
