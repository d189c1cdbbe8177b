--- Small table and file helpers that work with and without Neovim (no
--- `vim` here).
local M = {}

--- A stand-in for require(name) that loads the module on first use of one
--- of its fields: what Neovim's start runs (the plugin file, a setup() in
--- init.lua) then loads only the modules it uses (a require is not free:
--- Neovim's loader searches the runtimepath).
---@param name string
---@return table
function M.lazy_require(name)
  return setmetatable({}, {
    __index = function(_, key)
      return require(name)[key]
    end,
  })
end

--- Single-quotes a word for /bin/sh.
---@param s string
---@return string
function M.shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- Runs argv and waits for it, its output thrown away: Neovim's system()
--- in Neovim, /bin/sh under plain LuaJIT (process.lua). Whether it
--- exited 0.
---@param argv string[]
---@return boolean
function M.run_quietly(argv)
  return require("flemma_sandbox.base.process").quietly(argv)
end

--- The first line of a small file, or nil when it cannot be read.
---@param path string
---@return string|nil
function M.first_line(path)
  local f = io.open(path, "r")
  local line = f and f:read("*l")
  if f then
    f:close()
  end
  return line
end

--- A file's whole content, or nil when it cannot be read.
---@param path string
---@return string|nil
function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local data = f:read("*a")
  f:close()
  return data
end

---@param t table
---@return boolean
function M.is_list(t)
  if type(t) ~= "table" then
    return false
  end
  local n = 0
  for _ in pairs(t) do
    n = n + 1
  end
  return n == #t
end

--- Whether a list holds value (a non-table holds nothing).
---@param list any
---@param value any
---@return boolean
function M.contains(list, value)
  for _, v in ipairs(type(list) == "table" and list or {}) do
    if v == value then
      return true
    end
  end
  return false
end

---@class flemma_sandbox.RecentHosts
---@field put fun(item: { host: string }) keeps item, dropping an older one for the same host
---@field newest_first fun(): { host: string }[]
---@field clear fun()

--- The last `limit` items about hosts, one per host (what the status
--- shows of the proxy's refusals and of the answers about hosts).
---@param limit integer
---@return flemma_sandbox.RecentHosts
function M.recent_hosts(limit)
  local items = {}
  local list = {}
  function list.put(item)
    for i = #items, 1, -1 do
      if items[i].host == item.host then
        table.remove(items, i)
      end
    end
    items[#items + 1] = item
    if #items > limit then
      table.remove(items, 1)
    end
  end
  function list.newest_first()
    local out = {}
    for i = #items, 1, -1 do
      out[#out + 1] = items[i]
    end
    return out
  end
  function list.clear()
    items = {}
  end
  return list
end

--- The default cap of each RAM-backed folder in MiB: 1024, or a tenth of
--- the machine's memory when that is less (read from /proc/meminfo).
---@param meminfo? string the file's text (default: read it)
---@return integer
function M.default_tmpfs_mb(meminfo)
  meminfo = meminfo or M.read_file("/proc/meminfo") or ""
  local kib = tonumber(meminfo:match("MemTotal:%s*(%d+) kB"))
  if not kib then
    return 1024
  end
  return math.max(16, math.min(1024, math.floor(kib / 1024 / 10)))
end

--- The default inotify cap of a sandbox: an eighth of the user's own
--- limit (/proc/sys/fs/inotify/NAME), so four commands at once leave the
--- user's watchers half; false where the kernel keeps no such limit per
--- user namespace (the cap could not be set).
---@param name "max_user_instances"|"max_user_watches"
---@param read? fun(path: string): string|nil the file reader (default: io)
---@return integer|false
function M.default_inotify_cap(name, read)
  read = read or M.read_file
  local per_ns = name == "max_user_instances" and "max_inotify_instances" or "max_inotify_watches"
  local user = tonumber((read("/proc/sys/fs/inotify/" .. name) or ""):match("%d+"))
  if not user or not read("/proc/sys/user/" .. per_ns) then
    return false
  end
  return math.max(1, math.floor(user / 8))
end

--- The folder, under the saved outputs, of the commands run from one
--- project folder (its real path): the path with "/" written as "%", as
--- Vim names undo files, so it is readable and one per project.
---@param cache string Neovim's cache folder
---@param real_cwd string
---@return string
function M.outputs_dir(cache, real_cwd)
  local key = real_cwd:gsub("%%", "%%%%"):gsub("/", "%%")
  if #key > 200 then
    key = key:sub(-200) -- a file name holds 255 bytes at most
  end
  return cache .. "/flemma-sandbox/outputs/" .. key
end

--- Where the outputs of commands run with the sandbox off are saved: never
--- shown to any sandbox.
---@param cache string
---@return string
function M.unsandboxed_outputs_dir(cache)
  return cache .. "/flemma-sandbox/outputs-unsandboxed"
end

---@generic T
---@param value T
---@return T
function M.deepcopy(value)
  if type(value) ~= "table" then
    return value
  end
  local copy = {}
  for k, v in pairs(value) do
    copy[k] = M.deepcopy(v)
  end
  return copy
end

---@param a any
---@param b any
---@return boolean
function M.deep_equal(a, b)
  if a == b then
    return true
  end
  if type(a) ~= "table" or type(b) ~= "table" then
    return false
  end
  for k, v in pairs(a) do
    if not M.deep_equal(v, b[k]) then
      return false
    end
  end
  for k in pairs(b) do
    if a[k] == nil then
      return false
    end
  end
  return true
end

local function nonempty_list(t)
  return next(t) ~= nil and M.is_list(t)
end

--- A new table with a's fields, then b's over them (one level: the values
--- are shared, not copied).
---@param a table
---@param b table
---@return table
function M.with(a, b)
  local out = {}
  for k, v in pairs(a) do
    out[k] = v
  end
  for k, v in pairs(b) do
    out[k] = v
  end
  return out
end

--- Merges `over` onto a copy of `base`: maps merge key by key, lists and
--- scalars in `over` replace what `base` had (a user's rw_paths replaces the
--- default list, it is not spliced into it index by index).
---@param base table
---@param over table|nil
---@return table
function M.merge(base, over)
  local out = M.deepcopy(base)
  if over == nil then
    return out
  end
  for k, v in pairs(over) do
    if type(v) == "table" and type(out[k]) == "table" and not nonempty_list(v) and not nonempty_list(out[k]) then
      out[k] = M.merge(out[k], v)
    else
      out[k] = M.deepcopy(v)
    end
  end
  return out
end

return M
