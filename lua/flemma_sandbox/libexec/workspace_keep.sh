#!/bin/sh
# workspace_keep.sh (called from lua/flemma_sandbox/backends/workspace_keep.lua)
# $1 the repository's path, where the copy is shown read-only, $2 the
# chat's name, $3 the ref to make, $4 the message; the user's git folder
# writable at /user.git. The copy's branches, wip (its work tree, just
# committed by the sync) and base are fetched from the copy itself under
# refs/flemma-sandbox/keeping/NAME/ (so what the sync holds back is kept
# too), and dropped after. Nothing is kept when wip's tree is base's and
# no commit is new to the user's repository. Else one commit with wip's
# tree and as parents wip and the copy's other branches. The ref is made
# new (a name taken gets -2, -3, ...). Answers {"answer":"kept","ref":REF}
# or {"answer":"nothing"}.
set -eu
top=$1 name=$2 ref=$3 msg=$4
export GIT_DIR=/user.git
g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0 "$@"; }
r=refs/flemma-sandbox/keeping/$name
# $1 as a JSON string's inside: \ and " escaped, a tab as \t, other
# control characters as ?
json() { printf '%s' "$1" | sed 's/[\\"]/\\&/g; s/\t/\\t/g' | tr '\001-\037' '?'; }
drop() { g for-each-ref --format='delete %(refname)' "$r/" | g update-ref --stdin; }
drop
g fetch -q --no-tags --no-write-fetch-head --no-recurse-submodules \
  --upload-pack="env GIT_COMMON_DIR=$top/.git git -c core.hooksPath=/dev/null upload-pack" "$top" \
  "+refs/heads/*:$r/heads/*" "+refs/flemma/wip:$r/wip" "+refs/flemma/base:$r/base"
wip=$(g rev-parse -q --verify "$r/wip^{commit}" || true)
base=$(g rev-parse -q --verify "$r/base^{commit}" || true)
if [ -z "$wip" ]; then drop; echo '{"answer":"nothing"}'; exit 0; fi
parents=$wip
for c in $(g for-each-ref --format='%(objecttype) %(objectname)' "$r/heads/" | sed -n 's/^commit //p'); do
  case " $parents " in *" $c "*) continue ;; esac
  parents="$parents $c"
done
changed=yes
if [ -n "$base" ] && [ "$(g rev-parse "$wip^{tree}")" = "$(g rev-parse "$base^{tree}")" ]; then
  heads=$(echo "$parents" | sed "s/^$wip//")
  head=$(g rev-parse -q --verify "$wip^" || true)
  set --
  for c in $head $heads; do set -- "$@" "$c"; done
  new=$(g rev-list -n 1 "$@" --not --exclude='refs/remotes/sandbox-*' --exclude='refs/flemma-sandbox/*' --all)
  if [ -z "$new" ]; then changed=no; fi
fi
if [ "$changed" = no ]; then drop; echo '{"answer":"nothing"}'; exit 0; fi
tree=$(g rev-parse "$wip^{tree}")
set --
for c in $parents; do set -- "$@" -p "$c"; done
keep=$(printf '%s\n' "$msg" | g commit-tree "$tree" "$@")
i=1 n=""
until g update-ref "$ref$n" "$keep" "" 2>/dev/null; do
  i=$((i + 1)) n="-$i"
  if [ "$i" -gt 50 ]; then drop; exit 1; fi
done
drop
printf '{"answer":"kept","ref":"%s"}\n' "$(json "$ref$n")"
