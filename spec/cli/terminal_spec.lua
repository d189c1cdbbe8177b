--- flemma-sandbox run with no command, in a real terminal (tmux): the
--- user's own shell, interactive, on the sandbox's pseudo-terminal: its
--- prompt, its read-only config, Ctrl-C to a running command, a window
--- resize, and the exit code passed on.
local cli = require("support.cli")
local h = require("support.helpers")
local tmux = require("support.tmux")

--- Starts `flemma-sandbox run --direct term` with shell as $SHELL in a
--- 100x30 terminal; the shell line after it prints the exit code.
local function start(w, shell)
  local t = tmux.new("cli")
  local cmd_line = cli.shell_line(w, { cli.BIN, "run", "--direct", "term" }, { env = { SHELL = shell } })
  t:start("sh -c " .. h.shell_quote(cmd_line .. "; echo EXITED-$?; sleep 60"), 100, 30)
  return t
end

--- Types a line and waits for text to show.
local function line(t, text, wait_for)
  t:keys(text, "Enter")
  return t:wait_for(wait_for)
end

--- What both shells must do: Ctrl-C stops the running command (and only
--- it), the window size reaches the sandbox, the exit code comes back.
local function common(t, w, exit_line)
  local marker = string.format("sleep 55.%06d", math.random(0, 999999))
  t:keys(marker, "Enter")
  assert.truthy(
    cli.eventually(function()
      return cli.host_pids(marker) ~= ""
    end),
    "the command did not start: " .. t:screen()
  )
  t:keys("C-c")
  assert.are.equal("", cli.eventually(function()
    return cli.host_pids(marker) == "" and ""
  end) or "still running", t:screen())
  assert.matches("rows=30 cols=100", line(t, "echo rows=$(tput lines) cols=$(tput cols)", "cols=100"))
  vim.fn.system({ "tmux", "resize-window", "-t", t.name, "-x", "120", "-y", "40" })
  vim.loop.sleep(300)
  assert.matches("rows=40 cols=120", line(t, "echo rows=$(tput lines) cols=$(tput cols)", "cols=120"))
  assert.matches("EXITED%-4", line(t, exit_line, "EXITED-"))
  assert.are.equal("", cli.host_pids(marker))
  return w
end

describe("flemma-sandbox run in a terminal", function()
  local w, t
  tmux.kill_after_each(function() -- before the world is removed
    return t
  end)
  cli.each_world(function(world)
    w = world
  end)

  it("runs bash interactive: prompt, read-only config, Ctrl-C, resize, exit code", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    h.write(w.home .. "/.bashrc", "PS1='cli-prompt> '\n")
    t = start(w, "/bin/bash")
    assert.matches("cli%-prompt>", t:wait_for("cli-prompt>"))
    local shown = line(t, 'echo "in=$FLEMMA_SANDBOX"; echo evil >> ~/.bashrc', "Read-only")
    assert.matches("in=term", shown)
    assert.matches("Read%-only file system", shown)
    assert.are.equal("PS1='cli-prompt> '\n", h.read(w.home .. "/.bashrc"))
    -- job control: the shell has the terminal (no "no job control" warning)
    assert.is_nil(shown:find("job control", 1, true), shown)
    common(t, w, "exit 4")
  end)

  it("runs a command in the terminal with its own terminal; a redirected stderr stays redirected", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    t = tmux.new("cli")
    local err = w.base .. "/err.txt"
    local inner = "test -t 0 && test -t 1 && echo on-a-tty; echo to-stderr >&2"
    -- TERM stays the terminal's own
    local cmd_line = cli.shell_line(w, { cli.BIN, "run", "--direct", "cmd", "--", "sh", "-c", inner }, { term = false })
    t:start("sh -c " .. h.shell_quote(cmd_line .. " 2>" .. h.shell_quote(err) .. "; echo EXITED-$?; sleep 60"), 100, 30)
    local shown = t:wait_for("EXITED-")
    assert.matches("on%-a%-tty\n", shown)
    assert.matches("EXITED%-0", shown)
    assert.is_nil(shown:find("to-stderr", 1, true), shown)
    assert.are.equal("to-stderr\n", h.read(err))
  end)

  it("runs fish interactive: $FISH_VERSION, its read-only config, Ctrl-C, resize, exit code", function()
    if not tmux.available() or vim.fn.executable("fish") == 0 then
      return pending("tmux or fish is not installed")
    end
    local config = w.home .. "/.config/fish/config.fish"
    vim.fn.mkdir(vim.fn.fnamemodify(config, ":h"), "p")
    local text = "function fish_prompt; echo 'fish-prompt> '; end\n"
    h.write(config, text)
    t = start(w, vim.fn.exepath("fish"))
    assert.matches("fish%-prompt>", t:wait_for("fish-prompt>"))
    local shown = line(t, "echo fish=$FISH_VERSION; echo evil >> ~/.config/fish/config.fish", "fish=")
    assert.matches("fish=%d+%.%d+", shown)
    assert.are.equal(text, h.read(config))
    common(t, w, "exit 4")
  end)
end)
