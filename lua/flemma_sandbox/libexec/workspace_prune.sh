#!/bin/sh
# workspace_prune.sh (called from lua/flemma_sandbox/backends/workspace_keep.lua)
# $@ the refs to delete (none: only the list); the user's git folder at
# /user.git. Prints the refs under PREFIX that are left.
set -eu
export GIT_DIR=/user.git
g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0 "$@"; }
for r in "$@"; do g update-ref -d "$r"; done
g for-each-ref --format='left %(refname)' refs/flemma-sandbox/discarded/
echo listed
