--- What a clone mode copy hides (backends/workspace.lua): the lists
--- its making and its sync read (the secret names, the hidden paths,
--- beside the copy in the chat's workspace folder, which no sandbox
--- sees), the sync's step that holds back a ref whose new commits change
--- or delete a hidden file, and the identity the copy gets.
local git_box = require("flemma_sandbox.backends.git_box")
local core = require("flemma_sandbox.core")
local notice = require("flemma_sandbox.notice")

local M = {}

-- The sync's second step (after backends/workspace.lua's SYNC_COPY): $1
-- the repository's path, where the copy is shown read-only, $2 the
-- chat's name, $3 the secret names, $4 the hidden paths (as for the
-- copy's making); the user's git folder writable at /user.git. The copy's branches, wip and the tree it started from
-- (refs/flemma/base) into the user's repository as
-- refs/remotes/sandbox-NAME/*, fetched first under
-- refs/flemma-sandbox-incoming/NAME/. A ref whose new commits (not yet in
-- the user's branches, tags or sandbox-NAME refs) hold one that changes or
-- deletes a file the copy hides (one its parent has, of a secret name or
-- at a hidden path; in a merge, against every parent) is not updated: a
-- line "held REF COMMIT<TAB>FILE<TAB>..." says so ("(unreadable-tree)"
-- for a tree git cannot read, which the sandbox can forge). Nothing here reads the copy's
-- index.
local SYNC_USER = [=[
set -eu
top=$1 name=$2 secrets=$3 hidden=$4
git_safe="git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0"
g() { $git_safe "$@"; }
export GIT_DIR=/user.git
in="refs/flemma-sandbox-incoming/$name"
out="refs/remotes/sandbox-$name"
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
  xargs -0 -r env GIT_INDEX_FILE=/tmp/idx GIT_WORK_TREE=/tmp/wt $git_safe ls-files -z -c -- <"$hidden" >>/tmp/h
}
# the hidden files commit $1 changes or deletes (against every parent);
# "(unreadable-tree)" when git cannot read its tree or a parent's
touched() {
  parents=$(g rev-parse "$1^@")
  n=$(echo $parents | wc -w)
  unreadable="$(printf '\t')(unreadable-tree)"
  GIT_INDEX_FILE=/tmp/idx-c g read-tree "$1" 2>/dev/null || { printf '%s' "$unreadable"; return; }
  : >/tmp/all
  for p in $parents; do
    hidden_of "$p" || { printf '%s' "$unreadable"; return; }
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
    if [ -n "$files" ]; then bad="$c$files"; break; fi
  done
  if [ -n "$bad" ]; then
    echo "held $dest $bad"
  else
    echo "update $dest $(g rev-parse "$ref")" >>/tmp/updates
  fi
done
g update-ref --stdin </tmp/updates
drop_incoming
echo synced
]=]

--- The argv of the sync's second step: the caller's binds (the copy
--- read-only, the user's git folder writable at /user.git) and the lists
--- beside the copy, read-only at their own paths.
---@param spec flemma_sandbox.WorkspaceSpec
---@param parent string the copy's parent (the chat's workspace folder)
---@param name string the chat's name
---@param binds string[]
---@return string[]
function M.sync_user_argv(spec, parent, name, binds)
  local lists = { parent .. "/secrets", spec.clone .. ".hidden" }
  for _, path in ipairs(lists) do
    vim.list_extend(binds, { "--ro-bind", path, path })
  end
  return git_box.argv(spec.bwrap, binds, SYNC_USER, { spec.top, name, lists[1], lists[2] })
end

--- The identity git resolves for the user's repository (its own config,
--- the user's global one and their includeIf sections): asked of git on
--- the host, in the repository, with no hook and no fsmonitor (config
--- reading runs neither); "" for what is set nowhere (or a repository git
--- refuses to read, one of another owner).
---@param top string
---@return string name, string email
function M.user_identity(top)
  local function get(key)
    local out = vim.fn.system({
      "git",
      "-c",
      "core.hooksPath=/dev/null",
      "-c",
      "core.fsmonitor=false",
      "-C",
      top,
      "config",
      "--get",
      key,
    })
    if vim.v.shell_error ~= 0 then
      return ""
    end
    return vim.trim(out)
  end
  return get("user.name"), get("user.email")
end

--- The hidden paths of a spec within its repository, relative and
--- NUL-separated (the copy's making and the sync read them).
---@param spec flemma_sandbox.WorkspaceSpec
---@return string
local function hidden_lines(spec)
  local out = {}
  for _, path in ipairs(spec.hidden) do
    if path ~= spec.top then
      out[#out + 1] = path:sub(#spec.top + 2) .. "\0"
    end
  end
  return table.concat(out)
end

--- Writes the secret names and the hidden paths of a copy beside it (in
--- the chat's workspace folder, which no sandbox sees).
---@param spec flemma_sandbox.WorkspaceSpec
---@return string|nil parent, string|nil err
function M.write_lists(spec)
  local parent, base = spec.clone:match("^(.*)/([^/]+)$")
  local ok, err = core.make_dirs(parent, 448)
  if not ok then
    return nil, err
  end
  ok, err = core.write_atomic(parent, "secrets", git_box.ignore_lines(spec.secrets), 384)
  if ok then
    ok, err = core.write_atomic(parent, base .. ".hidden", hidden_lines(spec), 384)
  end
  if not ok then
    return nil, err
  end
  return parent
end

--- The note on the refs the sync held back (SYNC_USER's "held" lines),
--- said to the user; nil when none was.
---@param out string
---@return string|nil
function M.held_note(out)
  local refs, commits, files, seen = {}, {}, {}, {}
  local function add(list, item)
    if not seen[list .. item] then
      seen[list .. item] = true
      table.insert(list == "r" and refs or list == "c" and commits or files, item)
    end
  end
  for ref, commit, names in out:gmatch("held (%S+) (%x+)\t([^\n]*)") do
    add("r", (ref:gsub("^refs/remotes/", "")))
    add("c", commit:sub(1, 12))
    for name in names:gmatch("[^\t]+") do
      add("f", name == "(unreadable-tree)" and "a tree git cannot read" or name)
    end
  end
  if #refs == 0 then
    return nil
  end
  local note = string.format(
    "%s: %s not updated (commit %s changes or deletes a file hidden from the sandbox by"
      .. " secret_files or a hidden path, or has a tree git cannot read; drop it from the copy's branch)",
    table.concat(files, ", "),
    table.concat(refs, ", "),
    table.concat(commits, ", ")
  )
  notice.say(note, vim.log.levels.WARN)
  return note
end

return M
