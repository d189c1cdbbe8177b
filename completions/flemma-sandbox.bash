# bash completion for flemma-sandbox: its commands, their options, and the
# names of this project's sandboxes (from `flemma-sandbox list`).
# Source it from ~/.bashrc, or copy it to
# ~/.local/share/bash-completion/completions/flemma-sandbox
_flemma_sandbox_names() {
  flemma-sandbox list 2>/dev/null | awk '$3 == "KiB" && $2 ~ /^[0-9]+$/ { print $1 }'
}
_flemma_sandbox() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "run list status log diff apply discard reset delete gc help" -- "$cur"))
    return
  fi
  case "$cmd" in
    run) COMPREPLY=($(compgen -W "--direct --raw-terminal $(_flemma_sandbox_names)" -- "$cur")) ;;
    list) COMPREPLY=($(compgen -W "--all" -- "$cur")) ;;
    gc) COMPREPLY=($(compgen -W "--force" -- "$cur")) ;;
    delete|discard) COMPREPLY=($(compgen -W "--force $(_flemma_sandbox_names)" -- "$cur")) ;;
    status | log | diff | apply | reset) COMPREPLY=($(compgen -W "$(_flemma_sandbox_names)" -- "$cur")) ;;
  esac
}
complete -F _flemma_sandbox flemma-sandbox
