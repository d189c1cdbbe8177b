# Run by sh, dash or ksh as `SHELL -c THIS SHELL RC` (cli/prompt.lua):
# RC becomes the shell's $ENV file, the user's $ENV kept in
# FLEMMA_SANDBOX_ENV; the shell as it is where that fails.
if f=$(mktemp 2>/dev/null) && printf '%s\n' "$1" >"$f"; then
  FLEMMA_SANDBOX_ENV=${ENV-}
  ENV=$f
  export FLEMMA_SANDBOX_ENV ENV
  exec "$0" -i
fi
exec "$0"
