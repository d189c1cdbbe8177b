#!/bin/sh
# workspace_mark_applied.sh (called from lua/flemma_sandbox/backends/workspace_copies.lua)
# $1 the repository's path, where the copy is shown writable: the copy's
# refs/flemma/base becomes its refs/flemma/wip (what was just brought into
# the user's tree).
set -eu
GIT_DIR="$1/.git" GIT_COMMON_DIR="$1/.git" git -c core.hooksPath=/dev/null update-ref refs/flemma/base refs/flemma/wip
echo '{"answer":"marked"}'
