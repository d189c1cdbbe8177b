--- The plan of a run's checks, Neovim's part (csrc/exec/check_plan.h,
--- exec_check_plan, is the helper's reading of it): made once from a
--- resolved policy into one typed table, and written in one format, the
--- check file's words (KEY and VALUE, two by two), which
--- csrc/exec/check_plan.c reads in one place. The host side adds its
--- facts before the run (known, expect, present, started).
local protect = require("flemma_sandbox.policy.protect")

local M = {}

---@class flemma_sandbox.CheckLink
---@field path string a protected symlink
---@field target string what it points at

---@class flemma_sandbox.CheckScan
---@field roots string[] the projects the secret scan covers
---@field patterns string[] secret_files name patterns
---@field skip string[] folder names the scan does not enter
---@field depth integer levels the scan goes down

---@class flemma_sandbox.CheckPlan
---@field quarantine string where the check after the run moves what it finds
---@field index string where the helper's scans keep their index (csrc/shared/scan.h)
---@field watch string[] protected paths missing when planned
---@field links flemma_sandbox.CheckLink[]
---@field repos string[] projects, whose ".git" entries are recorded
---@field user_hooks string|nil the user's own core.hooksPath: a repository made after the plan
--- keeps the folder it names (or its own config's) read-only
---@field own string[] the sandbox's own repositories (clone mode)
---@field ro string[] bound read-only
---@field hidden string[] hidden
---@field sockets boolean the host's sockets are covered
---@field privileged boolean root in the sandbox keeps root's rights
---@field open string[] folders whose sockets stay reachable
---@field private string[] fresh folders in the sandbox
---@field disk string[] writable roots on the host's disk (free space watched)
---@field visible string[] folders bound from the host
---@field scan flemma_sandbox.CheckScan|nil the secret scan, when it has roots

--- The paths of a list of paths or { path = } entries.
---@param list any[]|nil
---@return string[]
local function paths(list)
  local out = {}
  for _, v in ipairs(list or {}) do
    out[#out + 1] = type(v) == "table" and v.path or v
  end
  return out
end

--- The paths of each list, one after the other (the wrap runs without
--- Neovim too: the command line, plain LuaJIT).
---@return string[]
local function joined(...)
  local out = {}
  -- by count: a list may be nil
  for i = 1, select("#", ...) do
    for _, path in ipairs(paths((select(i, ...)))) do
      out[#out + 1] = path
    end
  end
  return out
end

--- A set of the paths in each list.
---@return table<string, boolean>
local function set_of(...)
  local set = {}
  for _, path in ipairs(joined(...)) do
    set[path] = true
  end
  return set
end

--- The writable roots on the host's disk: rw_paths but for the private
--- /tmp and what is part of it (a tmpfs) and the paths a chat's own
--- folders stand at; and those folders themselves (a chat's /tmp, home).
---@param policy flemma_sandbox.ResolvedPolicy
---@return string[]
local function disk_roots(policy)
  local skip = set_of(policy.private and policy.private.writable, policy.private_paths, policy.persist_paths)
  local out = {}
  for _, path in ipairs(policy.rw_paths or {}) do
    if not skip[path] then
      out[#out + 1] = path
    end
  end
  return joined(out, policy.persist_sources)
end

--- The folders bound from the host: rw_paths but where a chat's own
--- folder stands, and show_paths.
---@param policy flemma_sandbox.ResolvedPolicy
---@return string[]
local function visible_roots(policy)
  local persisted = set_of(policy.persist_paths)
  local out = {}
  for _, path in ipairs(policy.rw_paths or {}) do
    if not persisted[path] then
      out[#out + 1] = path
    end
  end
  return joined(out, policy.show_paths)
end

--- The plan of a call's checks (its own_git: clone mode's, backends/call_plan.lua).
---@param policy flemma_sandbox.CallPlan
---@param quarantine string
---@param index string
---@return flemma_sandbox.CheckPlan
function M.of_policy(policy, quarantine, index)
  local links = {}
  for _, l in ipairs(policy.links or {}) do
    if l.target then
      links[#links + 1] = { path = l.path, target = l.target }
    end
  end
  local scan = policy.secret_scan
  ---@type flemma_sandbox.CheckPlan
  return {
    quarantine = quarantine,
    index = index,
    watch = paths(policy.watched),
    links = links,
    repos = paths(policy.projects),
    user_hooks = policy.user_hooks,
    own = paths(policy.own_git),
    ro = paths(policy.ro_paths),
    hidden = paths(policy.deny_paths),
    -- host sockets: reachable in the projects and allow_sockets, unseen
    -- in a private folder unless bound into it
    sockets = true,
    privileged = policy.allow_privileged == true,
    open = joined(policy.project_roots, policy.allow_sockets),
    private = joined(policy.private_paths, policy.persist_paths),
    disk = disk_roots(policy),
    visible = visible_roots(policy),
    scan = scan and #scan.roots > 0 and {
      roots = paths(scan.roots),
      patterns = paths(scan.patterns),
      skip = paths(protect.SCAN_SKIP),
      depth = scan.depth,
    } or nil,
  }
end

--- The check file's words of plan (mask_at, which differs per command,
--- not among them), and their length in bytes with their NULs.
---@param plan flemma_sandbox.CheckPlan
---@return string[] words, integer bytes
function M.words(plan)
  local words = { "quarantine", plan.quarantine, "index", plan.index }
  local function add(key, list)
    for _, v in ipairs(list) do
      words[#words + 1] = key
      words[#words + 1] = v
    end
  end
  add("watch", plan.watch)
  for _, l in ipairs(plan.links) do
    add("link", { l.path })
    add("target", { l.target })
  end
  for _, key in ipairs({ "repos", "own", "ro", "hidden" }) do
    add(key, plan[key])
  end
  if plan.user_hooks then
    add("user_hooks", { plan.user_hooks })
  end
  add("sockets", { plan.sockets and "1" or "0" })
  add("privileged", { plan.privileged and "1" or "0" })
  for _, key in ipairs({ "open", "private", "disk", "visible" }) do
    add(key, plan[key])
  end
  if plan.scan then
    add("secrets", plan.scan.roots)
    add("pattern", plan.scan.patterns)
    add("skip", plan.scan.skip)
    add("depth", { tostring(plan.scan.depth) })
  end
  local bytes = 0
  for _, w in ipairs(words) do
    bytes = bytes + #w + 1
  end
  return words, bytes
end

--- The policy fields the plan is made of: the last words are kept while
--- these are the same (a cached policy's tables).
local FIELDS = {
  "watched",
  "links",
  "projects",
  "user_hooks",
  "own_git",
  "ro_paths",
  "deny_paths",
  "allow_privileged",
  "project_roots",
  "allow_sockets",
  "private_paths",
  "private",
  "rw_paths",
  "show_paths",
  "secret_scan",
  "persist_sources",
  "persist_paths",
}

---@type { fields: any[], words: string[], bytes: integer }|nil
local last = nil

--- Whether two values of a field are the same: the same value, or lists
--- of the same items (clone mode makes own_git and ro_paths anew for each
--- call, policy/clone_plan.lua).
---@return boolean
local function same_field(a, b)
  if a == b then
    return true
  end
  if type(a) ~= "table" or type(b) ~= "table" or #a ~= #b then
    return false
  end
  if #a == 0 then
    -- two empty lists; a table with keys (secret_scan) only as itself
    return next(a) == nil and next(b) == nil
  end
  for i = 1, #a do
    if a[i] ~= b[i] then
      return false
    end
  end
  return true
end

--- The check file's words for policy (M.words of M.of_policy), made again
--- only when a field differs from the last call's.
---@param policy flemma_sandbox.CallPlan
---@param quarantine string
---@param index string
---@return string[] words, integer bytes
function M.words_for(policy, quarantine, index)
  -- a field may be nil: compared by position, not by the table's length
  local fields = { quarantine .. "\0" .. index }
  for i, name in ipairs(FIELDS) do
    fields[i + 1] = policy[name]
  end
  if last then
    local same = true
    for i = 1, #FIELDS + 1 do
      same = same and same_field(last.fields[i], fields[i])
    end
    if same then
      return last.words, last.bytes
    end
  end
  local words, bytes = M.words(M.of_policy(policy, quarantine, index))
  last = { fields = fields, words = words, bytes = bytes }
  return words, bytes
end

return M
