# The $ENV file of sh, dash or ksh in a sandbox's interactive shell
# (cli/prompt.lua puts the prompt's prefix for the placeholder): the user's $ENV,
# then PS1. It removes itself.
rm -f -- "$ENV"
if [ -n "${FLEMMA_SANDBOX_ENV-}" ]; then
  ENV=$FLEMMA_SANDBOX_ENV
  eval "__flemma_sandbox_rc=\"$ENV\""
  # set by the eval (as the shell expands $ENV); the user's own file
  # shellcheck disable=SC2154 source=/dev/null
  if [ -r "$__flemma_sandbox_rc" ]; then . "$__flemma_sandbox_rc"; fi
  unset __flemma_sandbox_rc
else
  unset ENV
fi
unset FLEMMA_SANDBOX_ENV
PS1='PREFIX'${PS1-'$ '}
