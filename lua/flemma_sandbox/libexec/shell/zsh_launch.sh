# Run by zsh as `zsh -c THIS zsh RC` (cli/prompt.lua), written in sh (read
# as sh by shellcheck): RC becomes the .zshenv of a $ZDOTDIR of its own,
# the user's ZDOTDIR kept in FLEMMA_SANDBOX_ZDOTDIR.
if d=$(mktemp -d 2>/dev/null) && printf '%s\n' "$1" >"$d/.zshenv"; then
  FLEMMA_SANDBOX_ZDOTDIR=${ZDOTDIR-}
  ZDOTDIR=$d
  export FLEMMA_SANDBOX_ZDOTDIR ZDOTDIR
  exec "$0" -i
fi
exec "$0"
