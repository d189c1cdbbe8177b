#!/bin/sh
# shadow_step.sh (called from lua/flemma_sandbox/run/shadow.lua)
# The shadow store's steps: $1 is the step, then the spec, then the
# step's own arguments. Each step but "init" and "plan" answers in a JSON
# line ({"answer":"checkpoint","n":"N","tree":TREE}, after, settled, warm,
# recorded); "plan" in NUL-separated sections (run/change_plan.lua). git
# with the store as its repository and none of the user's or the
# project's config but the project's own exclude file; hooks and
# fsmonitor off; pathspecs literal.
#
# Refs of the store (N: the call's number in the chat, 10 digits):
#   refs/checkpoints/N  the tree before call N
#   refs/after/N        the tree after it: its change is the difference
#   refs/undo-saves/K   the tree as it was before undo or redo K
#   refs/undone/K       what undo K wrote (its parent: the tree before it);
#                       redo takes the newest back
set -eu
step=$1 top=$2 rel=$3 store=$4 keep=$5 label=$6 n=$7 from=$8 to=$9
if [ "$step" = init ]; then
  [ -d "$store/objects" ] || git init -q --bare "$store"
  printf '%s\n' "$top/.git/objects" >"$store/objects/info/alternates"
  exit 0
fi
export GIT_DIR="$store" GIT_WORK_TREE="$top" GIT_INDEX_FILE="$store/index"
g() {
  git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.untrackedCache=true \
    -c core.excludesFile="$top/.git/info/exclude" -c gc.auto=0 -c advice.addEmbeddedRepo=false "$@"
}
cd "$top"
# one step at a time per store, also across Neovims with the same chat
exec 9>>"$store/lock"
flock 9
# A nested repository with no commit yet (`git init` and nothing more):
# git add refuses it, as it records a nested repository only as its
# commit. Its folder goes to the store's exclude file; no nested
# repository's files are in a checkpoint anyway. rev-parse runs no hook.
exclude_unborn_repos() {
  g ls-files -z -o --directory --exclude-standard -- "$rel" | tr '\0' '\n' | while IFS= read -r d; do
    case $d in */) ;; *) continue ;; esac
    [ -e "$top/$d.git" ] || continue
    if ! (unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
      git -C "$top/$d" -c core.fsmonitor=false -c core.hooksPath=/dev/null \
        rev-parse -q --verify 'HEAD^{commit}' >/dev/null 2>&1); then
      printf '/%s\n' "$d" >>"$store/info/exclude"
    fi
  done
}
snapshot() {
  if [ ! -f "$store/index" ] && [ -f "$top/.git/index" ]; then
    # the project's index: its stat data saves hashing every tracked file
    cp "$top/.git/index" "$store/index"
    g ls-files --stage -- .git-none >/dev/null 2>&1 || rm -f "$store/index"
  fi
  # secret files are as ignored: never in a checkpoint, tracked or not
  cp "$store/secrets" "$store/info/exclude"
  g ls-files -z -i -c --exclude-from="$store/secrets" -- "$rel" | g update-index -z --force-remove --stdin
  if ! g add -A --ignore-errors -- "$rel" >/dev/null 2>&1; then
    exclude_unborn_repos
    g add -A --ignore-errors -- "$rel" >/dev/null
  fi
  g write-tree
}
newest() { # the number of the newest ref under $1, 0 when none
  last=$(g for-each-ref --count=1 --sort=-refname --format='%(refname:lstrip=2)' "$1")
  printf '%s' "${last:-0}" | sed 's/^0*//;s/^$/0/'
}
case $step in
settled)
  # every step queued before this one has ended (the lock is held here)
  echo '{"answer":"settled"}'
  ;;
warm)
  # the index brought up to date, nothing recorded: the next take only
  # looks at what changed since
  snapshot >/dev/null
  echo '{"answer":"warm"}'
  ;;
take)
  tree=$(snapshot)
  last=$(newest refs/checkpoints/)
  # the chat's call number; past the newest kept (a store made before)
  [ "${n:-0}" -gt "$last" ] 2>/dev/null || n=$((last + 1))
  commit=$(printf '%s\n' "$label" | g commit-tree "$tree")
  g update-ref "refs/checkpoints/$(printf %010d "$n")" "$commit"
  g for-each-ref --sort=-refname --format='%(refname:lstrip=2)' refs/checkpoints/ | tail -n +$((keep + 1)) |
    while read -r old; do
      g update-ref -d "refs/checkpoints/$old"
      g update-ref -d "refs/after/$old" 2>/dev/null || true
    done
  # the trees kept before undos and redos, and the undos: as many
  for kept in refs/undo-saves/ refs/undone/; do
    g for-each-ref --sort=-refname --format='%(refname)' "$kept" | tail -n +$((keep + 1)) |
      while read -r old; do g update-ref -d "$old"; done
  done
  printf '{"answer":"checkpoint","n":"%s","tree":"%s"}\n' "$n" "$tree"
  ;;
after)
  # the tree when call n ended: its change is what differs from before
  tree=$(snapshot)
  if g rev-parse -q --verify "refs/checkpoints/$(printf %010d "$n")" >/dev/null; then
    # the newest call started by now: those between ran at the same time
    commit=$(printf 'after %s last %s\n' "$n" "$(newest refs/checkpoints/)" | g commit-tree "$tree")
    g update-ref "refs/after/$(printf %010d "$n")" "$commit"
  fi
  printf '{"answer":"after","n":"%s","tree":"%s"}\n' "$n" "$tree"
  ;;
plan)
  # for taking a change from $from to $to back or again: the tree now
  # (kept, for a way back), what the change did, and which of its paths
  # differ now from either end; sections NUL-separated, each ended by an
  # empty field
  now=$(snapshot)
  k=$(( $(newest refs/undo-saves/) + 1 ))
  save=$(printf '%s\n' "$label" | g commit-tree "$now")
  g update-ref "refs/undo-saves/$(printf %010d "$k")" "$save"
  printf 'now %s %s\0\0' "$now" "$save"
  g diff-tree -r -z --no-renames "$from" "$to" -- "$rel"
  printf '\0'
  g diff-tree -r -z --no-renames --name-only "$from" "$now" -- "$rel"
  printf '\0'
  g diff-tree -r -z --no-renames --name-only "$to" "$now" -- "$rel"
  printf '\0'
  ;;
record)
  # what an undo (or redo) wrote, on the tree it found ($from: the saved
  # commit): refs/undone/K for an undo; a redo drops the undo it took back
  export GIT_INDEX_FILE="$store/record-index"
  g read-tree "$from^{tree}"
  g update-index -z --index-info <"$store/written"
  tree=$(g write-tree)
  rm -f "$store/record-index"
  if [ "$to" = undo ]; then
    commit=$(printf '%s\n' "$label" | g commit-tree "$tree" -p "$from")
    k=$(( $(newest refs/undone/) + 1 ))
    g update-ref "refs/undone/$(printf %010d "$k")" "$commit"
  else
    g update-ref -d "refs/undone/$n"
  fi
  printf '{"answer":"recorded","tree":"%s"}\n' "$tree"
  ;;
esac
