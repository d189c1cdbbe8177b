--- The interactive shell of `flemma-sandbox run NAME`: the user's $SHELL,
--- started as it starts outside (its own config, read-only), with
--- "(sandbox NAME) " in front of its prompt, set for that shell only
--- (never exported to what it runs). bash gets an rc file (/etc/bash.bashrc
--- and ~/.bashrc, then a PROMPT_COMMAND hook that puts the prefix back
--- when a prompt of the user's replaced PS1); sh, dash and ksh an $ENV file
--- (the user's $ENV, then PS1); zsh a $ZDOTDIR with a .zshenv (the
--- user's ZDOTDIR back, their .zshenv, and a precmd hook); fish
--- --init-command (after its config: fish_prompt wrapped). The file is
--- made in the sandbox's /tmp by the shell itself and removed as it is
--- read. Another shell starts as it is.
local surroundings = require("flemma_sandbox.base.surroundings")

local M = {}

--- The shell's files (lua/flemma_sandbox/libexec/shell/, read by
--- shellcheck in make lint but zsh's and fish's): per kind of shell, the
--- launcher run with `-c` that makes the start-up file from "$1" and
--- starts the shell "$0" with it (the shell as it is where that fails),
--- and the start-up file, whose placeholder PREFIX becomes the prefix.
-- never relative to the working directory (the project, which a command
-- may have written): without the plugin's folder nothing is read
local SHELL_DIR = (surroundings.lua_dir() or error("flemma-sandbox: the plugin's folder is unknown"))
  .. "/libexec/shell/"
local LAUNCH = { bash = "bash_launch.sh", sh = "sh_launch.sh", zsh = "zsh_launch.sh" }
local RC = { bash = "bash_rc.bash", sh = "sh_rc.sh", zsh = "zsh_rc.zsh", fish = "fish_rc.fish" }

--- A file of SHELL_DIR, without its last newline.
---@param name string
---@return string
local function shell_file(name)
  local f = assert(io.open(SHELL_DIR .. name, "rb"), "flemma-sandbox: missing " .. SHELL_DIR .. name)
  local text = f:read("*a"):gsub("\n$", "")
  f:close()
  return text
end

local KIND = {
  bash = "bash",
  sh = "sh",
  dash = "sh",
  ash = "sh",
  ksh = "sh",
  mksh = "sh",
  ksh93 = "sh",
  zsh = "zsh",
  fish = "fish",
}

--- What the prompt starts with in sandbox name.
---@param name string
---@return string
function M.prefix(name)
  return "(sandbox " .. name .. ") "
end

--- The command that starts shell interactively in sandbox name.
---@param shell string the path of the user's $SHELL
---@param name string the sandbox's name (cli.sandbox.check_name)
---@return string[]
function M.command(shell, name)
  local kind = KIND[shell:match("([^/]*)$")]
  if not kind then
    return { shell }
  end
  local prefix = M.prefix(name)
  assert(not prefix:find("['\\%%$`]"), "a sandbox name a prompt would expand")
  local rc = shell_file(RC[kind]):gsub("PREFIX", prefix)
  if kind == "fish" then
    return { shell, "--init-command", rc }
  end
  return { shell, "-c", shell_file(LAUNCH[kind]), shell, rc }
end

return M
