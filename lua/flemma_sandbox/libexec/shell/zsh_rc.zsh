# zsh's .zshenv in a sandbox's interactive shell (cli/prompt.lua puts the
# prompt's prefix for the placeholder): the user's ZDOTDIR back, their .zshenv,
# and a precmd hook. It removes itself and its folder. (zsh: no linter
# reads it.)
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
precmd_functions+=(__flemma_sandbox_prompt)
