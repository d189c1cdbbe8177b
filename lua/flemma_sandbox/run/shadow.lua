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
local process = require("flemma_sandbox.base.process")
local workspace = require("flemma_sandbox.policy.clone_plan")
local surroundings = require("flemma_sandbox.base.surroundings")

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

--- The repository a writable root is in (policy/clone_plan.lua).
M.repository_of = workspace.repository_of

-- The store's steps, and its refs (which list() reads): said in the script.
local SCRIPT = "shadow_step.sh"

--- bwrap's argv for a step: writable is the folder git may write in the
--- tree (nil: none), store_rw whether the store is writable.
---@param spec flemma_sandbox.ShadowSpec
---@param script string a script's file name in libexec/
---@param args string[]
---@param writable string|nil
---@param store_rw boolean
---@return string[]
function M.box_argv(spec, script, args, writable, store_rw)
  local binds = { "--ro-bind", spec.top, spec.top }
  if writable then
    vim.list_extend(binds, { "--bind", writable, writable })
  end
  vim.list_extend(binds, git_box.hidden_covers(spec.hidden, spec.store .. "/empty"))
  vim.list_extend(binds, { store_rw and "--bind" or "--ro-bind", spec.store, spec.store })
  return git_box.script_argv(spec.bwrap, binds, script, args)
end

--- The argv of a step of the store ("init", "settled", "warm", "take",
--- "after", "plan", "record").
---@param spec flemma_sandbox.ShadowSpec
---@param step string
---@param label? string
---@return string[]
---@param n? integer|string the call's number ("take", "after"), the undo's ref ("record")
---@param from? string plan and record: the change's start (a tree or commit)
---@param to? string plan: its end; record: "undo" or "redo"
function M.step_argv(spec, step, label, n, from, to)
  local args = { step, spec.top, spec.rel, spec.store, tostring(spec.keep), label or "" }
  vim.list_extend(args, { tostring(n or ""), from or "", to or "" })
  return M.box_argv(spec, SCRIPT, args, nil, true)
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

---@class flemma_sandbox.ShadowEntry
---@field n integer the call's number in the chat
---@field label string what the call did
---@field time integer when its checkpoint was taken
---@field after boolean whether its end was recorded (its change is known)
---@field undone boolean whether an undo took its change back
---@field last integer|nil the newest call started when it ended: calls n+1..last ran at the same time

---@class flemma_sandbox.ShadowUndo
---@field k string the undo's ref name (10 digits)
---@field n integer the call it took back
---@field label string

--- git on the store alone (it is the plugin's; no sandbox reaches it).
---@param spec flemma_sandbox.ShadowSpec
---@param args string[]
---@return string[]|nil lines
local function store_git(spec, args)
  if core.file_type(spec.store .. "/objects") ~= "directory" then
    return nil
  end
  local lines, code = process.lines(vim.list_extend({ spec.git, "--git-dir=" .. spec.store }, args))
  return code == 0 and lines or nil
end

--- The undos that redo can take back, newest first.
---@param spec flemma_sandbox.ShadowSpec
---@return flemma_sandbox.ShadowUndo[]
function M.undos(spec)
  local out = {}
  local lines = store_git(spec, {
    "for-each-ref",
    "--sort=-refname",
    "--format=%(refname:lstrip=2) %(contents:subject)",
    "refs/undone/",
  }) or {}
  for _, line in ipairs(lines) do
    local k, n, label = line:match("^(%d+) undo of call (%d+): ?(.*)$")
    if k then
      out[#out + 1] = { k = k, n = tonumber(n), label = label }
    end
  end
  return out
end

--- The checkpoints kept in a store, newest first.
---@param spec flemma_sandbox.ShadowSpec
---@return flemma_sandbox.ShadowEntry[]
function M.list(spec)
  local lines = store_git(spec, {
    "for-each-ref",
    "--sort=-refname",
    "--format=%(refname:lstrip=1) %(creatordate:unix) %(contents:subject)",
    "refs/checkpoints/",
    "refs/after/",
  }) or {}
  local undone = {}
  for _, u in ipairs(M.undos(spec)) do
    undone[u.n] = true
  end
  local out, after = {}, {}
  for _, line in ipairs(lines) do
    local kind, n, time, label = line:match("^(%a+)/(%d+) (%d+) ?(.*)$")
    if kind == "after" then
      after[tonumber(n)] = tonumber(label:match("^after %d+ last (%d+)")) or tonumber(n)
    elseif kind == "checkpoints" then
      out[#out + 1] = { n = tonumber(n), time = tonumber(time), label = label }
    end
  end
  for _, e in ipairs(out) do
    e.after = after[e.n] ~= nil
    e.last = after[e.n]
    e.undone = undone[e.n] == true
  end
  return out
end

--- The name of call n's refs (10 digits).
---@param n integer
---@return string
function M.ref_name(n)
  return string.format("%010d", n)
end

--- The paths call n changed, exactly (git's -z output: Neovim's system()
--- gives its NULs as \1); empty when its start or end is not kept.
---@param spec flemma_sandbox.ShadowSpec
---@param n integer
---@return string[]
function M.call_paths(spec, n)
  if core.file_type(spec.store .. "/objects") ~= "directory" then
    return {}
  end
  local name = M.ref_name(n)
  local out, code = process.run({
    spec.git,
    "--git-dir=" .. spec.store,
    "diff-tree",
    "-r",
    "-z",
    "--no-renames",
    "--name-only",
    "refs/checkpoints/" .. name,
    "refs/after/" .. name,
    "--",
    spec.rel,
  })
  if code ~= 0 then
    return {}
  end
  local paths = {}
  for path in out:gmatch("[^\1%z]+") do
    paths[#paths + 1] = path
  end
  return paths
end

--- A change of call n as git sees it: its paths, their status (A, M, D,
--- T) and its diff; nil when call n's start or end is not kept.
---@param spec flemma_sandbox.ShadowSpec
---@param n integer
---@param patch boolean the diff's text too
---@return string[]|nil lines
function M.call_diff(spec, n, patch)
  local name = M.ref_name(n)
  return store_git(spec, {
    "-c",
    "core.quotePath=false",
    "diff-tree",
    "-r",
    "--no-renames",
    patch and "-p" or "--name-status",
    "refs/checkpoints/" .. name,
    "refs/after/" .. name,
    "--",
    spec.rel,
  })
end

return M
