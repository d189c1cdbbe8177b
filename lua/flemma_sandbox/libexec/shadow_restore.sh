#!/bin/sh
# shadow_restore.sh (called from lua/flemma_sandbox/run/shadow_restore.lua)
# Writing back the paths of a change that are still as it left them, one
# by one, checked again right before each: $store/apply holds lines
# "FROM_MODE FROM_OID TO_MODE TO_OID PATH" (mode 0: no file; the path as
# printf's %b reads it, every byte but [A-Za-z0-9._/-] as \0ooo). A path
# whose way holds a link or a non-folder, or that differs now from FROM,
# is a conflict and left as it is. The store is read-only here; git's
# index is a private one in /tmp. Answers in JSON lines, a path as
# encoded in $store/apply: {"answer":"done","mode","oid","path"} for a
# path written, {"answer":"conflict","why","path"} for one left, and
# {"answer":"applied"} at the end.
set -eu
top=$1 store=$2
export GIT_DIR="$store" GIT_WORK_TREE="$top" GIT_INDEX_FILE=/tmp/apply-index
cd "$top"
exec 9<"$store/lock"
flock 9
g() { git -c core.hooksPath=/dev/null -c core.fsmonitor=false "$@"; }
# $1 as a JSON string's inside (an encoded path: only \ needs escaping;
# sed only for a path that has one)
json() { case $1 in *\\*) printf '%s' "$1" | sed 's/\\/\\\\/g' ;; *) printf '%s' "$1" ;; esac; }
# an answer: {"answer":$1,"why":$2,"path":$3}
answer() { printf '{"answer":"%s","why":"%s","path":"%s"}\n' "$1" "$2" "$(json "$3")"; }
# "MODE OID" of what is at ./$1 now, "0 0" when nothing
state() {
  if [ -L "./$1" ]; then
    printf '120000 %s' "$(readlink -- "./$1" | tr -d '\n' | g hash-object --stdin)"
  elif [ -f "./$1" ]; then
    if [ -n "$(find "./$1" -prune -perm -u=x)" ]; then m=100755; else m=100644; fi
    printf '%s %s' "$m" "$(g hash-object -- "./$1")"
  elif [ -e "./$1" ]; then
    printf 'other 0'
  else
    printf '0 0'
  fi
}
# whether the folders on the way to $1 are folders or missing, no link
clear_way() {
  d=$1
  while [ "${d%/*}" != "$d" ]; do
    d=${d%/*}
    if [ -L "./$d" ] || { [ -e "./$d" ] && [ ! -d "./$d" ]; }; then return 1; fi
  done
  return 0
}
same() { # mode and oid $1 $2 equal to state $3
  case "$1" in 0) [ "$3" = "0 0" ] ;; *) [ "$3" = "$1 $2" ] ;; esac
}
write_one() { # $1 mode (0: remove), $2 oid, $3 path
  if [ "$1" = 0 ]; then
    rm -f -- "./$3"
    dir=${3%/*}
    [ "$dir" = "$3" ] || rmdir -p --ignore-fail-on-non-empty -- "./$dir" 2>/dev/null || true
  else
    g update-index --add --cacheinfo "$1,$2,$3" &&
      rm -f -- "./$3" &&
      g checkout-index -f -- "$3"
  fi
}
while IFS= read -r line; do
  fm=${line%% *} rest=${line#* }
  fo=${rest%% *} rest=${rest#* }
  tm=${rest%% *} rest=${rest#* }
  to=${rest%% *} enc=${rest#* }
  path=$(printf '%bx' "$enc")
  path=${path%x}
  if ! clear_way "$path"; then
    answer conflict "a link or a file is on the way" "$enc"
    continue
  fi
  now=$(state "$path")
  if ! same "$fm" "$fo" "$now"; then
    answer conflict "changed since" "$enc"
    continue
  fi
  if write_one "$tm" "$to" "$path"; then
    printf '{"answer":"done","mode":"%s","oid":"%s","path":"%s"}\n' "$tm" "$to" "$(json "$enc")"
  else
    answer conflict "could not be written" "$enc"
  fi
done <"$store/apply"
echo '{"answer":"applied"}'
