#!/bin/sh
# workspace_create.sh (called from lua/flemma_sandbox/backends/workspace_copies.lua)
# $1 the repository, $2 the copy's folder, $3 the secret names
# (gitignore lines), $4 the hidden paths in the repository (relative,
# NUL-separated), $5 and $6 the user's name and email for it (may be
# empty). The copy starts as the user's tree is now: HEAD and its
# branch, and in the work tree the tracked, modified and untracked
# files (not ignored ones, not secret ones); its index is HEAD's, so the
# user's changes show as changes. A tracked file the copy hides (a secret
# name, a hidden path) stays tracked as HEAD has it, skip-worktree, and
# out of the work tree, a sparse checkout that leaves those names out:
# git status is clean, `git add -A` never records its deletion (the base
# tree keeps it too), a merge that changes it changes the index alone.
# Each submodule the user has checked out (one level) becomes a copy of
# its own the same way, listed with the user's objects of it in
# "$clone.submodules" (view_options). Made under another name and
# renamed: a copy is whole or absent.
set -eu
top=$1 clone=$2 secrets=$3 hidden=$4 user_name=$5 user_email=$6
tmp="$clone.making"
rm -rf "$tmp"
git_safe="git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0"
g() { $git_safe "$@"; }
# hidden_in INDEX [HIDDEN]: INDEX's tracked files the copy hides, NUL-separated
hidden_in() {
  GIT_INDEX_FILE=$1 g ls-files -z -c -i --exclude-from="$secrets"
  # shellcheck disable=SC2086 # $git_safe: git and its options, split on purpose
  if [ -n "${2:-}" ]; then xargs -0 -r env GIT_INDEX_FILE="$1" $git_safe ls-files -z -c -- <"$2"; fi
}
# copy_of SRC DST: DST a shared clone of SRC's repository, its work tree
# SRC's as it is; prints the user's objects folder of SRC
copy_of() {
  src=$1 dst=$2
  user_git=$(g -C "$src" rev-parse --absolute-git-dir)
  g clone -q --shared --no-checkout "$src" "$dst" 2>/dev/null
  export GIT_DIR="$dst/.git"
  cp "$secrets" "$GIT_DIR/info/exclude"
  snap="$GIT_DIR/snapshot-index"
  # the user's index: its stat data saves hashing every tracked file
  if [ -f "$user_git/index" ]; then cp -p "$user_git/index" "$snap"; fi
  GIT_INDEX_FILE="$snap" GIT_WORK_TREE="$src" g ls-files --stage -- .git-none >/dev/null 2>&1 || rm -f "$snap"
  head=$(g rev-parse -q --verify HEAD || true)
  paths=""
  if [ "$src" = "$top" ]; then paths=$hidden; fi
  export GIT_WORK_TREE="$src"
  # the hidden files: none of the user's versions is read; HEAD's are kept
  hidden_in "$snap" "$paths" | GIT_INDEX_FILE="$snap" g update-index -z --force-remove --stdin
  GIT_INDEX_FILE="$snap" g -c core.excludesFile="$user_git/info/exclude" \
    add -A --ignore-errors >/dev/null 2>&1 || true
  kept="$GIT_DIR/flemma-hidden"
  : >"$kept"
  if [ -n "$head" ]; then
    GIT_INDEX_FILE="$GIT_DIR/head-index" g read-tree "$head"
    hidden_in "$GIT_DIR/head-index" "$paths" >"$kept"
    # shellcheck disable=SC2086 # as above
    xargs -0 -r env GIT_INDEX_FILE="$GIT_DIR/head-index" $git_safe ls-files -z -s -- <"$kept" |
      GIT_INDEX_FILE="$snap" g update-index -z --index-info
    GIT_INDEX_FILE="$snap" g update-index -z --skip-worktree --stdin <"$kept"
    rm -f "$GIT_DIR/head-index"
  fi
  unset GIT_WORK_TREE
  if [ "$src" = "$top" ]; then
    # the folders git ignores at the top (node_modules, build output): shown
    # from the user's tree (view_options), listed outside the copy
    GIT_INDEX_FILE="$snap" GIT_WORK_TREE="$src" g -c core.excludesFile="$user_git/info/exclude" \
      ls-files -o -i --exclude-standard --directory 2>/dev/null | grep -E '^[^/]+/$' >"$clone.ignored" || true
  fi
  tree=$(GIT_INDEX_FILE="$snap" g write-tree)
  base=$(echo "the user's tree when the copy was made" | g commit-tree "$tree" ${head:+-p "$head"})
  g update-ref refs/flemma/base "$base"
  GIT_INDEX_FILE="$snap" GIT_WORK_TREE="$dst" g checkout-index -a -f -u
  if [ -n "$head" ]; then
    mv "$snap" "$GIT_DIR/index"
    GIT_WORK_TREE="$dst" g reset -q --mixed HEAD
    GIT_WORK_TREE="$dst" g update-index -z --skip-worktree --stdin <"$kept"
  else
    rm -f "$snap"
  fi
  rm -f "$kept"
  git config -f "$GIT_DIR/config" core.fsmonitor false
  git config -f "$GIT_DIR/config" gc.auto 0
  # a sparse checkout without them (info/, the config: read-only inside)
  { echo '/*'; sed '/^$/d; s/^/!/' "$secrets"
    if [ -n "$paths" ]; then tr '\0' '\n' <"$paths" | sed 's/[][*?\\!#]/\\&/g; s|^|!/|'; fi
  } >"$GIT_DIR/info/sparse-checkout"
  git config -f "$GIT_DIR/config" core.sparseCheckout true
  git config -f "$GIT_DIR/config" core.sparseCheckoutCone false
  if [ -n "$user_name" ]; then git config -f "$GIT_DIR/config" user.name "$user_name"; fi
  if [ -n "$user_email" ]; then git config -f "$GIT_DIR/config" user.email "$user_email"; fi
  mkdir "$GIT_DIR/flemma-user-objects"
  unset GIT_DIR
  echo "$user_git/objects"
}
copy_of "$top" "$tmp" >/dev/null
# inside, the user's objects are shown here (view_options)
printf '%s\n' "$top/.git/flemma-user-objects" >"$tmp/.git/objects/info/alternates"
: >"$clone.submodules"
# quoted paths (odd bytes) are left out
GIT_DIR="$tmp/.git" g ls-files --stage | grep '^160000 ' | cut -f2- | grep -v '^"' | while IFS= read -r sub; do
  if [ -e "$top/$sub/.git" ]; then
    rmdir "$tmp/$sub" 2>/dev/null || true
    if [ -e "$tmp/$sub" ]; then continue; fi
    objects=$(copy_of "$top/$sub" "$tmp/$sub") || continue
    printf '%s\n' "$top/$sub/.git/flemma-user-objects" >"$tmp/$sub/.git/objects/info/alternates"
    printf '%s\t%s\n' "$sub" "$objects" >>"$clone.submodules"
  fi
done
mv "$tmp" "$clone"
echo '{"answer":"created"}'
