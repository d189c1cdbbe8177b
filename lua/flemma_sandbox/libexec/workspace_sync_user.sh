#!/bin/sh
# workspace_sync_user.sh (called from lua/flemma_sandbox/backends/workspace_hidden.lua)
# The sync's second step (after workspace_sync_copy.sh): $1
# the repository's path, where the copy is shown read-only, $2 the
# chat's name, $3 the secret names, $4 the hidden paths (as for the
# copy's making); the user's git folder writable at /user.git. The
# copy's branches, wip and the tree it started from (refs/flemma/base)
# into the user's repository as
# refs/remotes/sandbox-NAME/*, fetched first under
# refs/flemma-sandbox-incoming/NAME/. A ref whose new commits (not yet in
# the user's branches, tags or sandbox-NAME refs) hold one that changes or
# deletes a file the copy hides (one its parent has, of a secret name or
# at a hidden path; in a merge, against every parent) is not updated: an
# answer {"answer":"held","ref":REF,"commit":COMMIT,"files":[FILE,...]}
# says so ("(unreadable-tree)" for a tree git cannot read, which the
# sandbox can forge); {"answer":"synced"} ends a sync that went through.
# Nothing here reads the copy's index.
set -eu
top=$1 name=$2 secrets=$3 hidden=$4
git_safe="git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0"
g() { $git_safe "$@"; }
export GIT_DIR=/user.git
in="refs/flemma-sandbox-incoming/$name"
out="refs/remotes/sandbox-$name"
# $1 as a JSON string's inside: \ and " escaped, a tab as \t, other
# control characters as ?
json() { printf '%s' "$1" | sed 's/[\\"]/\\&/g; s/\t/\\t/g' | tr '\001-\037' '?'; }
drop_incoming() { g for-each-ref --format='delete %(refname)' "$in/" | g update-ref --stdin; }
drop_incoming
g fetch -q --no-tags --no-write-fetch-head --no-recurse-submodules \
  --upload-pack="env GIT_COMMON_DIR=$top/.git git -c core.hooksPath=/dev/null upload-pack" "$top" \
  "+refs/heads/*:$in/heads/*" "+refs/flemma/wip:$in/wip" "+refs/flemma/base:$in/base"
mkdir -p /tmp/wt
# the files of commit $1 the copy hides, NUL-separated, in /tmp/h; fails
# on a tree git cannot read into an index (the sandbox can forge one)
hidden_of() {
  rm -f /tmp/idx
  GIT_INDEX_FILE=/tmp/idx g read-tree "$1" 2>/dev/null || return 1
  GIT_INDEX_FILE=/tmp/idx GIT_WORK_TREE=/tmp/wt g ls-files -z -c -i --exclude-from="$secrets" >/tmp/h || return 1
  # shellcheck disable=SC2086 # $git_safe: git and its options, split on purpose
  xargs -0 -r env GIT_INDEX_FILE=/tmp/idx GIT_WORK_TREE=/tmp/wt $git_safe ls-files -z -c -- <"$hidden" >>/tmp/h
}
# the hidden files commit $1 changes or deletes (against every parent);
# "(unreadable-tree)" when git cannot read its tree or a parent's
touched() {
  parents=$(g rev-parse "$1^@")
  n=$(echo "$parents" | wc -w)
  unreadable="$(printf '\t')(unreadable-tree)"
  GIT_INDEX_FILE=/tmp/idx-c g read-tree "$1" 2>/dev/null || { printf '%s' "$unreadable"; return; }
  : >/tmp/all
  for p in $parents; do
    hidden_of "$p" || { printf '%s' "$unreadable"; return; }
    # shellcheck disable=SC2086 # as above
    xargs -0 -r $git_safe diff-tree -r -z --no-renames --name-only "$p" "$1" -- </tmp/h >/tmp/d ||
      { printf '%s' "$unreadable"; return; }
    tr '\0\n' '\n?' </tmp/d >>/tmp/all
  done
  sort /tmp/all | uniq -c | sed -n "s/^ *$n /\t/p" | tr -d '\n'
}
: >/tmp/updates
for ref in $(g for-each-ref --format='%(refname)' "$in/"); do
  rest=${ref#"$in/"}
  dest="$out/${rest#heads/}"
  bad=""
  for c in $(g rev-list --reverse --topo-order "$ref" --not --branches --tags --glob="$out/*"); do
    files=$(touched "$c")
    if [ -n "$files" ]; then bad=$c; break; fi
  done
  if [ -n "$bad" ]; then
    # the files, tab-separated after a tab, as a JSON list's strings
    list=$(printf '%s' "${files#?}" | sed 's/[\\"]/\\&/g' | tr '\001-\010\012-\037' '?' | sed 's/\t/","/g')
    printf '{"answer":"held","ref":"%s","commit":"%s","files":["%s"]}\n' "$(json "$dest")" "$bad" "$list"
  else
    echo "update $dest $(g rev-parse "$ref")" >>/tmp/updates
  fi
done
g update-ref --stdin </tmp/updates
drop_incoming
echo '{"answer":"synced"}'
