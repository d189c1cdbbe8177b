#!/bin/sh
# workspace_sync_copy.sh (called from lua/flemma_sandbox/backends/workspace.lua)
# The sync, in two views. First ($1 the repository's path, where the copy
# is shown, writable; the user's git folder read-only at /user.git): a
# commit of the copy's tree as it is (refs/flemma/wip), and the user's
# branches into the copy as refs/remotes/origin/*. The copy's own git
# folder is named to git outright (GIT_COMMON_DIR), so nothing the
# sandbox wrote there points git at another one; its config, which git
# reads, the sandbox cannot write.
set -eu
top=$1
g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0 "$@"; }
cd "$top"
export GIT_DIR="$top/.git" GIT_COMMON_DIR="$top/.git" GIT_WORK_TREE="$top" GIT_INDEX_FILE=/tmp/wip-index
if [ -f "$top/.git/index" ]; then cp -p "$top/.git/index" "$GIT_INDEX_FILE"; fi
g ls-files --stage -- .git-none >/dev/null 2>&1 || rm -f "$GIT_INDEX_FILE"
g add -A --ignore-errors >/dev/null 2>&1 || true
tree=$(g write-tree)
head=$(g rev-parse -q --verify HEAD || true)
wip=$(echo "the copy's tree after a call" | g commit-tree "$tree" ${head:+-p "$head"})
g update-ref refs/flemma/wip "$wip"
unset GIT_WORK_TREE GIT_INDEX_FILE
g fetch -q --no-tags --no-write-fetch-head --no-recurse-submodules /user.git "+refs/heads/*:refs/remotes/origin/*"
echo '{"answer":"copied"}'
