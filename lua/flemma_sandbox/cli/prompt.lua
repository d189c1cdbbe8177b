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
local M = {}

--- Makes the file (or folder, for zsh) from "$1" and starts the shell
--- "$0" with it; the shell as it is where that fails.
local LAUNCH = {
  bash = [==[
if f=$(mktemp 2>/dev/null) && printf '%s\n' "$1" >"$f"; then
  exec "$0" --rcfile "$f" -i
fi
exec "$0"]==],
  sh = [==[
if f=$(mktemp 2>/dev/null) && printf '%s\n' "$1" >"$f"; then
  FLEMMA_SANDBOX_ENV=${ENV-}
  ENV=$f
  export FLEMMA_SANDBOX_ENV ENV
  exec "$0" -i
fi
exec "$0"]==],
  zsh = [==[
if d=$(mktemp -d 2>/dev/null) && printf '%s\n' "$1" >"$d/.zshenv"; then
  FLEMMA_SANDBOX_ZDOTDIR=${ZDOTDIR-}
  ZDOTDIR=$d
  export FLEMMA_SANDBOX_ZDOTDIR ZDOTDIR
  exec "$0" -i
fi
exec "$0"]==],
}

--- The start-up file of each shell; PREFIX is replaced by the prompt's
--- prefix (a sandbox's name has no character a shell would expand).
local RC = {
  bash = [==[
rm -f -- "${BASH_SOURCE[0]}"
if [ -r /etc/bash.bashrc ]; then . /etc/bash.bashrc; fi
if [ -r ~/.bashrc ]; then . ~/.bashrc; fi
__flemma_sandbox_prompt() {
  case $PS1 in
  'PREFIX'*) ;;
  *) PS1='PREFIX'$PS1 ;;
  esac
}
PROMPT_COMMAND="${PROMPT_COMMAND:+$PROMPT_COMMAND
}__flemma_sandbox_prompt"]==],
  sh = [==[
rm -f -- "$ENV"
if [ -n "${FLEMMA_SANDBOX_ENV-}" ]; then
  ENV=$FLEMMA_SANDBOX_ENV
  eval "__flemma_sandbox_rc=\"$ENV\""
  if [ -r "$__flemma_sandbox_rc" ]; then . "$__flemma_sandbox_rc"; fi
  unset __flemma_sandbox_rc
else
  unset ENV
fi
unset FLEMMA_SANDBOX_ENV
PS1='PREFIX'${PS1-'$ '}]==],
  zsh = [==[
rm -f -- "$ZDOTDIR/.zshenv"; rmdir -- "$ZDOTDIR" 2>/dev/null
if [[ -n ${FLEMMA_SANDBOX_ZDOTDIR-} ]]; then
  ZDOTDIR=$FLEMMA_SANDBOX_ZDOTDIR
else
  unset ZDOTDIR
fi
unset FLEMMA_SANDBOX_ZDOTDIR
if [[ -r ${ZDOTDIR:-$HOME}/.zshenv ]]; then . "${ZDOTDIR:-$HOME}/.zshenv"; fi
__flemma_sandbox_prompt() {
  [[ $PROMPT == 'PREFIX'* ]] || PROMPT='PREFIX'$PROMPT
}
typeset -ga precmd_functions
precmd_functions+=(__flemma_sandbox_prompt)]==],
  fish = [==[
if functions -q fish_prompt
  functions -c fish_prompt __flemma_sandbox_fish_prompt
  function fish_prompt
    printf '%s' 'PREFIX'
    __flemma_sandbox_fish_prompt $argv
  end
end]==],
}

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
  local rc = RC[kind]:gsub("PREFIX", prefix)
  if kind == "fish" then
    return { shell, "--init-command", rc }
  end
  return { shell, "-c", LAUNCH[kind], shell, rc }
end

return M
