#!/bin/sh
# workspace_sync_copy.sh (called from lua/flemma_sandbox/backends/workspace_copies.lua)
# The sync, in two views. First ($1 the repository's path, where the copy
# is shown, writable; $2 the chat's name; the user's git folder read-only
# at /user.git): a commit of the copy's tree as it is (refs/flemma/wip;
# the last one kept when its tree and parent are the same), and the
# user's branches into the copy as refs/remotes/origin/* (not fetched
# when the copy has them as they are). The answer says "same": true when
# the user's refs/remotes/sandbox-NAME/* already hold every branch, wip
# and base of the copy as they are, so the second view
# (workspace_sync_user.sh) has nothing to bring. The copy's own git
# folder is named to git outright (GIT_COMMON_DIR), so nothing the
# sandbox wrote there points git at another one; its config, which git
# reads, the sandbox cannot write.
set -eu
top=$1 name=$2
g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0 "$@"; }
cd "$top"
export GIT_DIR="$top/.git" GIT_COMMON_DIR="$top/.git" GIT_WORK_TREE="$top" GIT_INDEX_FILE=/tmp/wip-index
if [ -f "$top/.git/index" ]; then cp -p "$top/.git/index" "$GIT_INDEX_FILE"; fi
g ls-files --stage -- .git-none >/dev/null 2>&1 || rm -f "$GIT_INDEX_FILE"
g add -A --ignore-errors >/dev/null 2>&1 || true
tree=$(g write-tree)
head=$(g rev-parse -q --verify HEAD || true)
old=$(g rev-parse -q --verify refs/flemma/wip || true)
if [ -z "$old" ] || [ "$(g rev-parse "$old^{tree}")" != "$tree" ] ||
  [ "$(g rev-parse -q --verify "$old^1" || true)" != "$head" ]; then
  wip=$(echo "the copy's tree after a call" | g commit-tree "$tree" ${head:+-p "$head"})
  g update-ref refs/flemma/wip "$wip"
fi
unset GIT_WORK_TREE GIT_INDEX_FILE
# "OBJECT NAME" lines of the refs below $2..., the first $1 parts of each
# name cut
refs_below() {
  cut=$1
  shift
  g for-each-ref --format="%(objectname) %(refname:lstrip=$cut)" "$@"
}
theirs=$(GIT_DIR=/user.git GIT_COMMON_DIR=/user.git refs_below 2 refs/heads/)
# (the clone's origin/HEAD is no branch of the user's)
if [ "$theirs" != "$(refs_below 3 refs/remotes/origin/ | grep -v ' HEAD$')" ]; then
  g fetch -q --no-tags --no-write-fetch-head --no-recurse-submodules /user.git "+refs/heads/*:refs/remotes/origin/*"
fi
refs_below 2 refs/heads/ refs/flemma/wip refs/flemma/base >/tmp/copy-refs
GIT_DIR=/user.git GIT_COMMON_DIR=/user.git refs_below 3 "refs/remotes/sandbox-$name/" >/tmp/user-refs
if grep -q -v -x -F -f /tmp/user-refs /tmp/copy-refs; then
  echo '{"answer":"copied","same":false}'
else
  echo '{"answer":"copied","same":true}'
fi
