# bash's rc file in a sandbox's interactive shell (cli/prompt.lua puts the
# prompt's prefix for the placeholder): the user's rc files, then a hook that puts
# the prefix back when their prompt replaced PS1. It removes itself.
rm -f -- "${BASH_SOURCE[0]}"
# the user's own files, whatever they hold
# shellcheck source=/dev/null
if [ -r /etc/bash.bashrc ]; then . /etc/bash.bashrc; fi
# shellcheck source=/dev/null
if [ -r ~/.bashrc ]; then . ~/.bashrc; fi
__flemma_sandbox_prompt() {
  case $PS1 in
  'PREFIX'*) ;;
  *) PS1='PREFIX'$PS1 ;;
  esac
}
PROMPT_COMMAND="${PROMPT_COMMAND:+$PROMPT_COMMAND
}__flemma_sandbox_prompt"
