--- The shadow store of direct mode's checkpoints: per chat and repository,
--- a bare git repository of the plugin's own (in the chat's folder, hidden
--- from every sandbox) whose objects borrow the project's (alternates), so
--- a checkpoint of an unchanged tracked file costs no new object. A
--- checkpoint is a commit of the tree as the sandbox sees it: tracked,
--- modified and untracked files, not ignored ones, hidden files as empty.
--- Nothing goes into the project's refs, stash, index or status.
---
--- git runs in a bwrap of its own that shows only the system folders, the
--- repository (read-only) and the store: a link the sandbox plants or
--- swaps while git walks the tree leads nowhere else (host-side code never
--- follows a path the sandbox could have changed to anything outside what
--- the sandbox may reach). An undo writes with the writable root alone
--- writable and the store read-only.
local core = require("flemma_sandbox.core")
local git_box = require("flemma_sandbox.backends.git_box")
local workspace = require("flemma_sandbox.policy.workspace")
local surroundings = require("flemma_sandbox.surroundings")

local M = {}

---@class flemma_sandbox.ShadowSpec
---@field bwrap string the bwrap program
---@field git string the git program
---@field top string the repository's work tree (real path)
---@field rel string the writable root below it ("." for the top itself)
---@field store string the shadow store's folder
---@field hidden string[] hidden paths in the repository: shown empty to git
---@field secrets string[] secret_files: names never in a checkpoint
---@field keep integer checkpoints kept (older ones are dropped)

--- The store of one repository in a chat's folder.
---@param chat_dir string
---@param top string
---@return string
function M.store_for(chat_dir, top)
  local name = (top:match("([^/]+)$") or "root"):gsub("[^%w._-]", "_")
  return chat_dir .. "/checkpoints/" .. name .. "-" .. surroundings.sha256(top):sub(1, 12)
end

--- The repository a writable root is in (policy/workspace.lua).
M.repository_of = workspace.repository_of

-- The steps, in sh: $1 is the step, then the spec. git with the store as
-- its repository and none of the user's or the project's config but the
-- project's own exclude file; hooks and fsmonitor off; pathspecs literal.
local SCRIPT = [=[
set -eu
step=$1 top=$2 rel=$3 store=$4 keep=$5 label=$6
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
snapshot() {
  if [ ! -f "$store/index" ] && [ -f "$top/.git/index" ]; then
    # the project's index: its stat data saves hashing every tracked file
    cp "$top/.git/index" "$store/index"
    g ls-files --stage -- .git-none >/dev/null 2>&1 || rm -f "$store/index"
  fi
  # secret files are as ignored: never in a checkpoint, tracked or not
  cp "$store/secrets" "$store/info/exclude"
  g ls-files -z -i -c --exclude-from="$store/secrets" -- "$rel" | g update-index -z --force-remove --stdin
  g add -A --ignore-errors -- "$rel" >/dev/null 2>&1 || g add -A --ignore-errors -- "$rel" >/dev/null
  g write-tree
}
case $step in
warm)
  # the index brought up to date, nothing recorded: the next take only
  # looks at what changed since
  snapshot >/dev/null
  echo warm
  ;;
take)
  tree=$(snapshot)
  last=$(g for-each-ref --count=1 --sort=-refname --format='%(refname:lstrip=2)' refs/checkpoints/)
  n=$(( $(printf '%s' "${last:-0}" | sed 's/^0*//;s/^$/0/') + 1 ))
  commit=$(printf '%s\n' "$label" | g commit-tree "$tree")
  g update-ref "refs/checkpoints/$(printf %010d "$n")" "$commit"
  g for-each-ref --sort=-refname --format='%(refname)' refs/checkpoints/ | tail -n +$((keep + 1)) |
    while read -r old; do g update-ref -d "$old"; done
  echo "checkpoint $n $tree"
  ;;
plan)
  # the newest checkpoint whose tree differs from the tree now: the one
  # before the last call that changed it (the others changed nothing)
  now=$(snapshot)
  for ref in $(g for-each-ref --sort=-refname --format='%(refname)' refs/checkpoints/); do
    if g diff-tree --quiet "$now" "$ref^{tree}" -- "$rel"; then
      g update-ref -d "$ref"
      continue
    fi
    n=$(g for-each-ref --count=1 --format='%(refname:lstrip=2)' refs/undo-saves/ --sort=-refname)
    n=$(( $(printf '%s' "${n:-0}" | sed 's/^0*//;s/^$/0/') + 1 ))
    save=$(printf '%s\n' "before undo to ${ref#refs/checkpoints/}" | g commit-tree "$now")
    g update-ref "refs/undo-saves/$(printf %010d "$n")" "$save"
    # in the tree now but not then: made by the calls since; the rest back
    g diff-tree -r -z --no-renames --name-only --diff-filter=D "$now" "$ref^{tree}" -- "$rel" >"$store/undo-remove"
    g diff-tree -r -z --no-renames --name-only --diff-filter=AMT "$now" "$ref^{tree}" -- "$rel" >"$store/undo-write"
    echo "target $(g rev-parse "$ref^{tree}") ${ref#refs/checkpoints/}"
    g update-ref -d "$ref"
    exit 0
  done
  echo "nothing"
  ;;
esac
]=]

-- Removing what the call made and writing what it changed, with an index
-- of its own in a private /tmp; the store is read-only here.
local RESTORE = [=[
set -eu
top=$1 store=$2 tree=$3
export GIT_DIR="$store" GIT_WORK_TREE="$top" GIT_INDEX_FILE=/tmp/undo-index
cd "$top"
exec 9<"$store/lock"
flock 9
if [ -s "$store/undo-remove" ]; then
  xargs -0 rm -f -- <"$store/undo-remove"
  # folders the removed files leave empty, deepest first
  tr '\0' '\n' <"$store/undo-remove" | sed -n 's|/[^/]*$||p' | sort -ru |
    while IFS= read -r dir; do rmdir -p --ignore-fail-on-non-empty -- "$dir" 2>/dev/null || true; done
fi
git read-tree "$tree"
git -c core.hooksPath=/dev/null checkout-index -f -z --stdin <"$store/undo-write"
echo restored
]=]

--- bwrap's argv for a step: writable is the folder git may write in the
--- tree (nil: none), store_rw whether the store is writable.
---@param spec flemma_sandbox.ShadowSpec
---@param script string
---@param args string[]
---@param writable string|nil
---@param store_rw boolean
---@return string[]
local function argv(spec, script, args, writable, store_rw)
  local binds = { "--ro-bind", spec.top, spec.top }
  if writable then
    vim.list_extend(binds, { "--bind", writable, writable })
  end
  vim.list_extend(binds, git_box.hidden_covers(spec.hidden, spec.store .. "/empty"))
  vim.list_extend(binds, { store_rw and "--bind" or "--ro-bind", spec.store, spec.store })
  return git_box.argv(spec.bwrap, binds, script, args)
end

--- The argv of a step of the store ("init", "warm", "take", "plan").
---@param spec flemma_sandbox.ShadowSpec
---@param step string
---@param label? string
---@return string[]
function M.step_argv(spec, step, label)
  return argv(spec, SCRIPT, { step, spec.top, spec.rel, spec.store, tostring(spec.keep), label or "" }, nil, true)
end

--- The argv that writes the tree back for an undo (after "plan").
---@param spec flemma_sandbox.ShadowSpec
---@param tree string the checkpoint's tree
---@return string[]
function M.restore_argv(spec, tree)
  local root = spec.rel == "." and spec.top or (spec.top .. "/" .. spec.rel)
  return argv(spec, RESTORE, { spec.top, spec.store, tree }, root, false)
end

--- Makes the store's folder (0700, every folder on the way a folder), its
--- empty file and its list of secret names.
---@param spec flemma_sandbox.ShadowSpec
---@return boolean|nil ok, string|nil err
function M.prepare(spec)
  local ok, err = core.make_dirs(spec.store, 448)
  if not ok then
    return nil, err
  end
  if core.file_type(spec.store .. "/empty") ~= "file" then
    ok, err = core.write_atomic(spec.store, "empty", "", 384)
    if not ok then
      return nil, err
    end
  end
  return core.write_atomic(spec.store, "secrets", git_box.ignore_lines(spec.secrets), 384)
end

--- The checkpoints kept in a store, newest first: git on the store alone
--- (it is the plugin's; no sandbox reaches it).
---@param spec flemma_sandbox.ShadowSpec
---@return { n: integer, label: string, time: integer }[]
function M.list(spec)
  if core.file_type(spec.store .. "/objects") ~= "directory" then
    return {}
  end
  local out = {}
  local lines = vim.fn.systemlist({
    spec.git,
    "--git-dir=" .. spec.store,
    "for-each-ref",
    "--sort=-refname",
    "--format=%(refname:lstrip=2) %(creatordate:unix) %(contents:subject)",
    "refs/checkpoints/",
  })
  if vim.v.shell_error ~= 0 then
    return out
  end
  for _, line in ipairs(lines) do
    local n, time, label = line:match("^(%d+) (%d+) ?(.*)$")
    if n then
      out[#out + 1] = { n = tonumber(n), time = tonumber(time), label = label }
    end
  end
  return out
end

return M
