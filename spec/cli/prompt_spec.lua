--- flemma-sandbox run NAME without a command, in a real terminal (tmux):
--- the user's shell starts with its own config and its prompt shows
--- "(sandbox NAME) " in front; set for that shell only (nothing of it in
--- the environment of what it runs, no file of it left in /tmp).
--- bash (also with a PROMPT_COMMAND of the user's that rewrites PS1),
--- dash, zsh and fish where they are installed.
local cli = require("support.cli")
local h = require("support.helpers")
local tmux = require("support.tmux")

--- Starts `flemma-sandbox run --direct NAME` with shell as $SHELL; the
--- shell line after it prints the exit code.
---@return support.Tmux
local function start(w, shell, name)
  local t = tmux.new("prompt")
  local cmd_line = cli.shell_line(w, { cli.BIN, "run", "--direct", name }, { env = { SHELL = shell } })
  t:start("sh -c " .. h.shell_quote(cmd_line .. "; echo EXITED-$?; sleep 60"), 100, 30)
  return t
end

--- What the shell's commands see: no prompt variable or start-up file of
--- ours, $FLEMMA_SANDBOX; then exit 3 and its code back.
---@param t support.Tmux
local function leaves_nothing(t)
  t:keys(
    "env | grep -c -e ^PS1= -e ^PROMPT -e ^ENV= -e ^ZDOTDIR= -e ^FLEMMA_SANDBOX_; echo in=$FLEMMA_SANDBOX",
    "Enter"
  )
  t:keys("ls -A /tmp | grep -c '^tmp[.]'; echo LISTED", "Enter")
  local shown = t:wait_for("LISTED\n")
  assert.matches("\n0\r?\nin=pr", shown)
  assert.matches("\n0\r?\nLISTED", shown)
  t:keys("exit 3", "Enter")
  assert.matches("EXITED%-3", t:wait_for("EXITED-"))
end

describe("flemma-sandbox run's interactive prompt", function()
  local w, t
  tmux.kill_after_each(function()
    return t
  end)
  cli.each_world(function(world)
    w = world
  end)

  it("bash: (sandbox NAME) before the user's PS1, also when their PROMPT_COMMAND sets it", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local rc = "PS1='cli-prompt> '\nPROMPT_COMMAND='PS1=\"pc-\\$ \"'\n"
    h.write(w.home .. "/.bashrc", rc)
    t = start(w, vim.fn.exepath("bash"), "pr")
    assert.matches("%(sandbox pr%) pc%-%$$", vim.trim(t:wait_for("pc-")))
    -- a bash started in it reads the user's config as it is
    t:keys("bash -i", "Enter")
    t:keys("echo NESTED; exit", "Enter")
    assert.matches("\npc%-%$ echo NESTED", t:wait_for("NESTED\n"))
    leaves_nothing(t)
  end)

  it("dash: (sandbox NAME) before its PS1", function()
    if not tmux.available() or vim.fn.executable("dash") == 0 then
      return pending("tmux or dash is not installed")
    end
    t = start(w, vim.fn.exepath("dash"), "pr")
    assert.matches("%(sandbox pr%) [%$#]$", vim.trim(t:wait_for("(sandbox pr)")))
    leaves_nothing(t)
  end)

  it("zsh: (sandbox NAME) before the user's PROMPT, their .zshenv and .zshrc read", function()
    if not tmux.available() or vim.fn.executable("zsh") == 0 then
      return pending("tmux or zsh is not installed")
    end
    h.write(w.home .. "/.zshenv", "FROM_ZSHENV=yes\n")
    h.write(w.home .. "/.zshrc", "PROMPT='zsh-prompt> '\n")
    t = start(w, vim.fn.exepath("zsh"), "pr")
    assert.matches("%(sandbox pr%) zsh%-prompt> $", vim.trim(t:wait_for("zsh-prompt>")) .. " ")
    t:keys("echo from=$FROM_ZSHENV", "Enter")
    assert.matches("from=yes", t:wait_for("from="))
    leaves_nothing(t)
  end)

  it("fish: (sandbox NAME) before the user's fish_prompt", function()
    if not tmux.available() or vim.fn.executable("fish") == 0 then
      return pending("tmux or fish is not installed")
    end
    local config = w.home .. "/.config/fish/config.fish"
    vim.fn.mkdir(vim.fn.fnamemodify(config, ":h"), "p")
    h.write(config, "function fish_prompt; echo -n 'fish-prompt> '; end\n")
    t = start(w, vim.fn.exepath("fish"), "pr")
    assert.matches("%(sandbox pr%) fish%-prompt> $", vim.trim(t:wait_for("fish-prompt>")) .. " ")
    t:keys("echo in=$FLEMMA_SANDBOX; exit 3", "Enter")
    local shown = t:wait_for("EXITED-")
    assert.matches("in=pr", shown)
    assert.matches("EXITED%-3", shown)
  end)
end)
