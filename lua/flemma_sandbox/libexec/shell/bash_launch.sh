# Run by bash as `bash -c THIS bash RC` (cli/prompt.lua): writes RC to a
# file and starts bash interactive with it; bash as it is where that fails.
if f=$(mktemp 2>/dev/null) && printf '%s\n' "$1" >"$f"; then
  exec "$0" --rcfile "$f" -i
fi
exec "$0"
