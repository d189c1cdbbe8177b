#!/bin/sh
# workspace_prune.sh (called from lua/flemma_sandbox/backends/workspace_keep.lua)
# $@ the refs to delete (none: only the list); the user's git folder at
# /user.git. Answers {"answer":"left","ref":REF} for each ref under PREFIX
# that is left, then {"answer":"listed"}.
set -eu
export GIT_DIR=/user.git
# $1 as a JSON string's inside: \ and " escaped, a tab as \t, other
# control characters as ?
json() { printf '%s' "$1" | sed 's/[\\"]/\\&/g; s/\t/\\t/g' | tr '\001-\037' '?'; }
g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0 "$@"; }
for r in "$@"; do g update-ref -d "$r"; done
g for-each-ref --format='%(refname)' refs/flemma-sandbox/discarded/ >/tmp/left
while IFS= read -r r; do
  printf '{"answer":"left","ref":"%s"}\n' "$(json "$r")"
done </tmp/left
echo '{"answer":"listed"}'
