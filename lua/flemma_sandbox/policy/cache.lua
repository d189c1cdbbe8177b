--- Resolved policies kept between commands. Resolving one looks at a few
--- hundred paths (and at every ".git" in the projects), so it is done again
--- only when something it depends on changed: the configured policy, the
--- buffer, the working directory, the environment variables it names, or
--- one of the folders it looked in (core.stamp: a folder's times change
--- when an entry in it is made, removed or renamed). What may change
--- between planning and running without any of that (secret files, host
--- sockets, a new ".git" deep in a project) the helper looks at right
--- before each run instead.
local core = require("flemma_sandbox.core")
local host = require("flemma_sandbox.host")

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
---@field folders string[] the folders (and files) the resolution depends on
---@field stamp string core.stamp(folders) when it was resolved
---@field resolved flemma_sandbox.ResolvedPolicy
---@field skipped flemma_sandbox.Skipped[]

---@type table<string, flemma_sandbox.CacheEntry>
local entries = {}
local count = 0

--- Appends a value's text to out, the same for equal values whatever the
--- order of their keys; the variables strings name go to names.
---@param value any
---@param out string[]
---@param names table<string, boolean>
local function serialize(value, out, names)
  local kind = type(value)
  if kind == "table" then
    out[#out + 1] = "{"
    local n = #value
    for i = 1, n do
      serialize(value[i], out, names)
    end
    local keys = {}
    for k in pairs(value) do
      if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then
        keys[#keys + 1] = k
      end
    end
    if #keys > 0 then
      table.sort(keys, function(a, b)
        return tostring(a) < tostring(b)
      end)
      for _, k in ipairs(keys) do
        out[#out + 1] = "=" .. tostring(k)
        serialize(value[k], out, names)
      end
    end
    out[#out + 1] = "}"
  elseif kind == "string" then
    if value:find("$", 1, true) then
      for name in value:gmatch("%${?([%a_][%w_]*)") do
        names[name] = true
      end
    end
    -- with its length: no two lists of strings give the same text
    out[#out + 1] = #value
    out[#out + 1] = value
  else
    out[#out + 1] = kind .. tostring(value)
  end
end

--- What a resolution for this policy and buffer depends on, besides the
--- folders it looks in.
---@param policy table
---@param bufnr integer|nil
---@return string
function M.key(policy, bufnr)
  local out, names = { tostring(host.generation) }, {}
  serialize(policy, out, names)
  local parts = { host.cwd() or "", host.buffer_dir(bufnr) or "", host.buffer_file(bufnr) or "" }
  local named = {}
  for name in pairs(names) do
    named[#named + 1] = name
  end
  table.sort(named)
  for _, list in ipairs({ ENV, named }) do
    for _, name in ipairs(list) do
      parts[#parts + 1] = name .. "=" .. (host.getenv(name) or "")
    end
  end
  if names.NVIM_RUNTIMEPATH then
    parts[#parts + 1] = table.concat(host.runtimepath(), ",")
  end
  out[#out + 1] = table.concat(parts, "\0")
  return table.concat(out, "\1")
end

--- The cached resolution for key, if nothing it looked at changed.
---@param key string
---@return flemma_sandbox.CacheEntry|nil
function M.get(key)
  local entry = entries[key]
  if entry and core.stamp(entry.folders) == entry.stamp then
    return entry
  end
end

--- Keeps a resolution; folders are the paths whose folder it looked in.
---@param key string
---@param looked string[] paths (each one's folder is stamped), and "/"-ended ones (stamped themselves)
---@param resolved flemma_sandbox.ResolvedPolicy
---@param skipped flemma_sandbox.Skipped[]
function M.put(key, looked, resolved, skipped)
  local folders, seen = {}, {}
  for _, path in ipairs(looked) do
    local folder = path:sub(-1) == "/" and path:sub(1, -2) or path:match("^(.*)/[^/]*$")
    folder = (folder == nil or folder == "") and "/" or folder
    if not seen[folder] then
      seen[folder] = true
      folders[#folders + 1] = folder
    end
  end
  if not entries[key] then
    count = count + 1
    if count > M.LIMIT then
      entries, count = {}, 1
    end
  end
  entries[key] = { folders = folders, stamp = core.stamp(folders), resolved = resolved, skipped = skipped }
end

--- Forgets every resolution.
function M.clear()
  entries, count = {}, 0
end

return M
