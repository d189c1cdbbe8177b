--- Where a module of ours or Flemma's is installed, and a guard that makes
--- `require` find those modules there only; the plugin file loaded by an
--- early setup() (plugin_file_now).
---
--- LuaJIT's package.path and package.cpath start with "./?.lua" and
--- "./?.so": a module that is not installed is looked up in the working
--- directory, which is the project a sandboxed command writes. Without the
--- guard, a command that writes `flemma/sandbox.lua` (or
--- `flemma_sandbox/core.so`) in the project has it run as the user by the
--- next Neovim started there, when Flemma (or the C core) is absent and the
--- plugin asks for it. So names of ours, Flemma's and the few optional
--- libraries the plugin asks for are found on the runtimepath and on the
--- absolute entries of package.path and package.cpath, and nowhere else.
--- No `vim` is needed but for the runtimepath (plain LuaJIT has none).
local M = {}

--- Inside Neovim. base/editor.lua's question, asked here too: the guard
--- requires nothing, as it is loaded before 'runtimepath' is set (a
--- require then would look in the working directory).
---@return boolean
local function in_nvim()
  return type(vim) == "table" and type(vim.api) == "table" and type(vim.fn) == "table"
end

--- The module names the guard answers for: a name or a prefix "name.".
local GUARDED = { "flemma", "flemma_sandbox", "cjson", "health" }

---@param name string
---@return boolean
function M.guarded(name)
  for _, top in ipairs(GUARDED) do
    if name == top or name:sub(1, #top + 1) == top .. "." then
      return true
    end
  end
  return false
end

--- The entries of a package.path-like string that name absolute folders:
--- "./?.lua", "?.lua" and "~/..." (Lua does not expand "~") are left out.
---@param search_path string
---@return string
function M.absolute_entries(search_path)
  local kept = {}
  for entry in search_path:gmatch("[^;]+") do
    if entry:sub(1, 1) == "/" then
      kept[#kept + 1] = entry
    end
  end
  return table.concat(kept, ";")
end

--- The runtimepath's files for a module name, absolute ones only (a
--- relative entry of 'runtimepath' is relative to the working directory).
---@param name string
---@param kind "lua"|"so"
---@return string|nil
local function on_runtimepath(name, kind)
  if not in_nvim() or not vim.api.nvim_get_runtime_file then
    return nil
  end
  local base = "lua/" .. name:gsub("%.", "/")
  local names = kind == "lua" and { base .. ".lua", base .. "/init.lua" } or { base .. ".so" }
  for _, file in ipairs(names) do
    -- refused in a fast event (a luv callback): package.path's absolute
    -- entries still answer there
    local ok, found_all = pcall(vim.api.nvim_get_runtime_file, file, true)
    for _, found in ipairs(ok and found_all or {}) do
      if found:sub(1, 1) == "/" then
        return found
      end
    end
  end
  return nil
end

--- Where module `name` is installed: its Lua file or C library on the
--- runtimepath or on an absolute entry of package.path or package.cpath;
--- nil when it is not installed. Never a file in the working directory.
---@param name string
---@return string|nil path, "lua"|"so"|nil kind
function M.find(name)
  local lua_file = on_runtimepath(name, "lua") or package.searchpath(name, M.absolute_entries(package.path))
  if lua_file then
    return lua_file, "lua"
  end
  local so = on_runtimepath(name, "so") or package.searchpath(name, M.absolute_entries(package.cpath))
  if so then
    return so, "so"
  end
  return nil, nil
end

--- Whether module `name` is installed (loaded already, or found by find()).
---@param name string
---@return boolean
function M.present(name)
  return package.loaded[name] ~= nil or M.find(name) ~= nil
end

--- The guard, a searcher of package.loaders: for a guarded name it loads
--- the installed file, or ends the search with an error when there is
--- none, so the searchers after it (package.path's and package.cpath's,
--- with their "./" entries) never see the name.
---@param name string
---@return function|string|nil
local function guard(name)
  if not M.guarded(name) then
    return nil
  end
  local path, kind = M.find(name)
  if kind == "lua" then
    local chunk, err = loadfile(path)
    return chunk or ("\n\t" .. tostring(err))
  elseif kind == "so" then
    local symbol = "luaopen_" .. name:gsub("%.", "_")
    local opener, err = package.loadlib(path, symbol)
    return opener or ("\n\t" .. tostring(err))
  end
  -- raised here, by the searcher: a loader that raised would leave
  -- require's "loading" mark in package.loaded, and every later require
  -- of the name (once it is built, say) would fail
  error("module '" .. name .. "' not found: not installed (never looked up in the working directory)", 0)
end

--- The searchers that come with Lua are C functions; Neovim's runtimepath
--- loaders (and lazy.nvim's, vim.loader's) are Lua functions put before
--- them. The guard goes right before the first of Lua's own after
--- package.preload's, so the runtimepath loaders still answer first.
---@param loaders function[]
---@return integer
local function guard_index(loaders)
  for i = 2, #loaders do
    local info = debug.getinfo(loaders[i], "S")
    if info and info.what == "C" then
      return i
    end
  end
  return 2
end

--- Puts the guard in package.loaders once (at start-up, and in the
--- command line before it loads anything else). Safe to call again.
--- In Neovim only: there the working directory is wherever the user
--- started it; a plain LuaJIT program (specs, a script using the rock)
--- chose its own package.path, relative entries and all.
function M.guard()
  if not in_nvim() then
    return
  end
  local loaders = package.loaders
  for _, loader in ipairs(loaders) do
    if loader == guard then
      return
    end
  end
  table.insert(loaders, guard_index(loaders), guard)
end

--- Whether the guard is in package.loaders (status, health).
---@return boolean
function M.guarded_now()
  for _, loader in ipairs(package.loaders) do
    if loader == guard then
      return true
    end
  end
  return false
end

--- setup() in an init.lua, before Neovim loads the plugin files (its
--- packages, no plugin manager): the plugin file now, so that its start-up
--- registers the backend with Flemma before a require("flemma").setup()
--- after this one reads sandbox.backends.flemma_sandbox (Flemma drops a
--- key of a backend it does not know yet). Only where Neovim loads the
--- file anyway (not with -u NONE, nor under lazy.nvim, which loads it
--- itself, nor outside Neovim); the file's guard keeps it to one start.
function M.plugin_file_now()
  if in_nvim() and vim.g.loaded_flemma_sandbox == nil and vim.v.vim_did_enter == 0 and vim.o.loadplugins then
    vim.cmd("runtime plugin/flemma_sandbox.lua")
  end
end

return M
