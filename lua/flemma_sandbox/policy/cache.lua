--- Resolved policies kept between commands. Resolving one looks at a few
--- hundred paths (and at every ".git" in the projects), so it is done again
--- only when something it depends on changed: the configured policy, the
--- buffer, the working directory, the environment variables it names, or
--- one of the paths it looked at. Those are watched with inotify (core.watch):
--- a path's folders are told when an entry in them is made, removed or
--- renamed, so checking an entry is one read that finds nothing. A
--- project's top is watched whole (a new folder there may hold a
--- repository), but a plain file made, removed or renamed there, or a
--- folder with no ".git" in it, keeps the resolution (M.unaffected): the
--- fresh one would be the same. Where
--- inotify cannot watch (its limit reached, a folder not readable) the
--- entry keeps a stamp of the folders instead (core.stamp: a folder's times
--- change when an entry in it changes). What may change between planning
--- and running without any of that (secret files, host sockets, a new
--- ".git" deep in a project) the helper looks at right before each run.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")

local M = {}

--- At most this many policies are kept (one per buffer and config).
M.LIMIT = 16

--- Variables every policy depends on (the XDG folders, the home folder).
local ENV = {
  "HOME",
  "TMPDIR",
  "XDG_CONFIG_HOME",
  "XDG_CACHE_HOME",
  "XDG_DATA_HOME",
  "XDG_STATE_HOME",
  "XDG_RUNTIME_DIR",
  "NVIM_APPNAME",
}

---@class flemma_sandbox.CacheEntry
---@field folders string[]|nil without inotify: the folders (and files) the resolution depends on
---@field stamp string|nil core.stamp(folders) when it was resolved
---@field resolved flemma_sandbox.ResolvedPolicy
---@field skipped flemma_sandbox.Skipped[]
---@field env_stamp string|nil surroundings.environ_stamp() when env was taken
---@field env table<string, string>|nil

---@type table<string, flemma_sandbox.CacheEntry>
local entries = {}
local count = 0

--- The inotify watcher (nil until needed, false where there is none) and,
--- per watch descriptor, the entries any event of it ends (`all`), those
--- an event about one name in it ends (`names`), and those for which it is
--- a project's top, with the path each knows it by (`tops`: a folder
--- renamed keeps its watch; the entries that knew it by the old path ended
--- then): an event there ends them only when the entry may change the
--- resolution (M.unaffected).
---@type any
local watcher = nil
---@class flemma_sandbox.CacheWatch
---@field all table<string, boolean>
---@field names table<string, table<string, boolean>>
---@field tops table<string, string>
---@type table<integer, flemma_sandbox.CacheWatch>
local watches = {}

--- How core.file_type says "no such entry" (lstat("") is ENOENT in any
--- locale): another text only makes an entry end that could have stayed.
---@type string|false|nil
local enoent_text = nil

local function forget(key)
  if entries[key] then
    entries[key] = nil
    count = count - 1
  end
end

--- Forgets every resolution.
function M.clear()
  if watcher then
    watcher:close()
  end
  entries, count, watcher, watches = {}, 0, nil, {}
end

--- Whether an entry coming or going at a project's top (a folder the
--- resolution looked at only for the repositories a new folder may hold)
--- leaves the resolution as it is: the name is no path it looked at (else
--- its `names` watch ended it), not ".git", and is now a plain file,
--- nothing (a removed folder held no ".git": each found one is a looked
--- path through it) or a folder with no ".git" at any depth (the same
--- search as the resolution's, without following a link), and the search
--- for repositories was not cut short. A link or anything else may point
--- at a repository: the resolution is done again.
---@param entry flemma_sandbox.CacheEntry
---@param folder string
---@param name string
---@return boolean
function M.unaffected(entry, folder, name)
  if name == "" or name == ".git" or #(entry.resolved.repos_truncated or {}) > 0 then
    return false
  end
  local kind, err = core.file_type(folder .. "/" .. name)
  if kind == "directory" then
    local found, truncated = core.find_names(folder .. "/" .. name, { ".git" }, 1)
    return found ~= nil and #found == 0 and not truncated
  elseif kind then
    return kind == "file"
  end
  if enoent_text == nil then
    enoent_text = select(2, core.file_type("")) or false
  end
  return enoent_text ~= false and err == enoent_text
end

--- Ends the entries that what happened since the last look touches.
local function drain()
  if not watcher then
    return
  end
  local events, overflowed = watcher:events()
  if overflowed then
    M.clear() -- the kernel dropped events (or the read failed): nothing is known
    return
  end
  for i = 1, #(events or {}), 2 do
    local w = watches[events[i]]
    if w then
      for key in pairs(w.all) do
        forget(key)
      end
      -- no name: the event is about the watched folder or file itself
      local name = events[i + 1]
      for n, keys in pairs(w.names) do
        if name == "" or n == name then
          for key in pairs(keys) do
            forget(key)
          end
        end
      end
      for key, top in pairs(w.tops) do
        if entries[key] and not M.unaffected(entries[key], top, name) then
          forget(key)
        end
      end
    end
  end
end

--- Whether path is one of tops or lies in one.
---@param path string
---@param tops table<string, boolean>
---@return boolean
local function in_a_top(path, tops)
  for top in pairs(tops) do
    if path == top or core.is_within(path, top) then
      return true
    end
  end
  return false
end

--- Watches what a resolution looked at for key: for each path, every
--- folder above it (told when the next step of the path comes or goes),
--- and a "/"-ended path itself (told when anything in it changes; for a
--- project's top, when an entry that may change the resolution does).
---@param key string
---@param looked string[]
---@param tops table<string, boolean> the projects' tops among looked's "/"-ended paths
---@return boolean ok false when inotify cannot watch all of it
local function watch(key, looked, tops)
  if watcher == nil then
    watcher = core.watch() or false
  end
  if not watcher then
    return false
  end
  local added, whole_added = {}, {}
  --- The watch descriptor; false for a missing path (the folder above it
  --- is watched for it to come); nil when it cannot be watched. A folder
  --- on the way to a path outside the projects is told of its entries
  --- only (core.watch: a first watch for its entries' own changes costs a
  --- pass over every cached entry, tens of ms for a busy /tmp); a path
  --- watched whole, or one in a project, of its own changes too (a
  --- folder's mode decides what a command could make in it).
  local function add(path, whole)
    whole = whole or in_a_top(path, tops)
    if added[path] == nil or (whole and not whole_added[path] and added[path]) then
      local wd, _, reason = watcher:add(path, not whole)
      if wd then
        added[path], whole_added[path] = wd, whole or whole_added[path]
      elseif reason == "ENOENT" or reason == "ENOTDIR" then
        added[path] = false
      else
        added[path] = "unwatchable"
      end
    end
    if added[path] == "unwatchable" then
      return nil
    end
    return added[path]
  end
  local function slot(wd)
    watches[wd] = watches[wd] or { all = {}, names = {}, tops = {} }
    return watches[wd]
  end
  for _, raw in ipairs(looked) do
    local whole = raw:sub(-1) == "/"
    local path = whole and raw:sub(1, -2) or raw
    if path:sub(1, 1) ~= "/" and raw ~= "/" then
      return false
    end
    local folder = "/"
    for name, after in path:gmatch("([^/]+)()") do
      local wd = add(folder)
      if wd == nil then
        return false
      elseif wd == false then
        break -- nothing deeper exists: its coming shows in the folder above
      end
      local names = slot(wd).names
      names[name] = names[name] or {}
      names[name][key] = true
      folder = path:sub(1, after - 1)
    end
    if whole then
      local top = path == "" and "/" or path
      local wd = add(top, true)
      if wd == nil then
        return false
      elseif wd then
        local w = slot(wd)
        if tops[top] then
          w.tops[key] = top
        else
          w.all[key] = true
        end
      end
    end
  end
  return true
end

--- Policy tables whose key text is known already (config.resolve makes a
--- new one each call, from layers that seldom change).
---@type table<table, any[]>
local remembered = setmetatable({}, { __mode = "k" })

--- The key text of a policy table, and the variables its strings name.
---@param policy table
---@return string text, string[] names
function M.policy_text(policy)
  local text, names = core.key(policy)
  -- in the order of a table's walk, which two equal policies need not share
  table.sort(names)
  return text, names
end

--- Says that policy's key text is text (with names), so M.key need not
--- work it out; the table must not be changed in place afterwards.
---@param policy table
---@param text string
---@param names string[]
function M.remember(policy, text, names)
  remembered[policy] = { text, names }
end

--- What a resolution for this policy and buffer depends on, besides the
--- paths it looks at.
---@param policy table
---@param bufnr integer|nil
---@return string
function M.key(policy, bufnr)
  local known = remembered[policy]
  local text, named
  if known then
    text, named = known[1], known[2]
  else
    text, named = M.policy_text(policy)
  end
  local parts = {
    tostring(surroundings.generation),
    text,
    surroundings.cwd() or "",
    surroundings.buffer_dir(bufnr) or "",
    surroundings.buffer_file(bufnr) or "",
  }
  for _, list in ipairs({ ENV, named }) do
    for _, name in ipairs(list) do
      parts[#parts + 1] = name .. "=" .. (surroundings.getenv(name) or "")
    end
  end
  for _, name in ipairs(named) do
    if name == "NVIM_RUNTIMEPATH" then
      parts[#parts + 1] = table.concat(surroundings.runtimepath(), ",")
    end
  end
  return table.concat(parts, "\0")
end

--- The cached resolution for key, if nothing it looked at changed.
---@param key string
---@return flemma_sandbox.CacheEntry|nil
function M.get(key)
  drain()
  local entry = entries[key]
  if entry and entry.stamp and core.stamp(entry.folders) ~= entry.stamp then
    forget(key)
    return nil
  end
  return entry
end

--- Keeps a resolution; looked are the paths it looked at.
---@param key string
---@param looked string[] paths whose coming and going matters, and "/"-ended ones whose content does too
---@param resolved flemma_sandbox.ResolvedPolicy
---@param skipped flemma_sandbox.Skipped[]
---@param tops? string[] "/"-ended paths of looked that are projects' tops (M.unaffected), without the "/"
function M.put(key, looked, resolved, skipped, tops)
  if not entries[key] then
    count = count + 1
    if count > M.LIMIT then
      M.clear()
      count = 1
    end
  end
  local entry = { resolved = resolved, skipped = skipped }
  entries[key] = entry
  local top_set = {}
  for _, top in ipairs(tops or {}) do
    top_set[top] = true
  end
  if not watch(key, looked, top_set) then
    -- the folders each path is in, and "/"-ended paths themselves
    local folders, seen = {}, {}
    for _, path in ipairs(looked) do
      local folder = path:sub(-1) == "/" and path:sub(1, -2) or path:match("^(.*)/[^/]*$")
      folder = (folder == nil or folder == "") and "/" or folder
      if not seen[folder] then
        seen[folder] = true
        folders[#folders + 1] = folder
      end
    end
    entry.folders, entry.stamp = folders, core.stamp(folders)
  end
end

return M
