--- The one adapter between the policy layer and its surroundings: working
--- directory, the folder of a buffer's file, environment variables. Inside
--- Neovim it asks Neovim; under plain LuaJIT (specs, benchmarks) it asks the
--- process, and specs may swap in their own answers with `use()`.
local core = require("flemma_sandbox.core")
local installed = require("flemma_sandbox.base.installed")

local editor = require("flemma_sandbox.base.editor")
local M = {}

---@class flemma_sandbox.Surroundings
---@field cwd fun(): string|nil
---@field buffer_dir fun(bufnr: integer|nil): string|nil
---@field getenv fun(name: string): string|nil
---@field is_linux fun(): boolean
---@field warn fun(message: string)
---@field environ fun(): table<string, string>|nil the whole environment, where it can be listed
---@field stdpath? fun(name: string): string|nil
---@field buffer_file? fun(bufnr: integer|nil): string|nil

local in_nvim = editor.present()

---@type flemma_sandbox.Surroundings
local process_host = {
  cwd = function()
    return (core.getcwd())
  end,
  buffer_dir = function(_)
    return nil
  end,
  getenv = os.getenv,
  is_linux = function()
    return jit and jit.os == "Linux" or false
  end,
  warn = function(_) end,
  environ = function()
    return nil -- plain LuaJIT cannot list the environment; named variables still work
  end,
}

---@type flemma_sandbox.Surroundings
local nvim_host = {
  cwd = function()
    return vim.fn.getcwd()
  end,
  buffer_dir = function(bufnr)
    if bufnr == nil then
      return nil
    end
    if bufnr == 0 then
      bufnr = vim.api.nvim_get_current_buf()
    end
    if not vim.api.nvim_buf_is_valid(bufnr) then
      return nil
    end
    local name = vim.api.nvim_buf_get_name(bufnr)
    if name == "" then
      return nil
    end
    return vim.fn.fnamemodify(name, ":p:h")
  end,
  getenv = os.getenv,
  environ = function()
    return vim.fn.environ()
  end,
  is_linux = process_host.is_linux,
  warn = function(message)
    -- policies are resolved in callbacks too, where notify must wait; one
    -- row with what else this turn says (notice.lua), so that Neovim's
    -- start never stops at a hit-enter prompt
    require("flemma_sandbox.base.notice").say(message:gsub("^flemma%-sandbox: ", ""), vim.log.levels.WARN, true)
  end,
}

---@type flemma_sandbox.Surroundings
local current = in_nvim and nvim_host or process_host

--- Where core.so was loaded from: package.cpath (LuaRocks, specs), else
--- Neovim's runtimepath loader, else in the folder above this file's base/
--- (a plugin manager's checkout). Found once, while the working directory
--- is the one it was loaded from (package.cpath may hold relative entries).
---@return string|nil
local function find_core_so()
  -- absolute entries only: "./?.so" would name a core.so (and so a
  -- our programs beside it) planted in the project
  local so = package.searchpath("flemma_sandbox.core", installed.absolute_entries(package.cpath))
  if not so and in_nvim then
    so = vim.api.nvim_get_runtime_file("lua/flemma_sandbox/core.so", false)[1]
  end
  if not so then
    local source = debug.getinfo(1, "S").source:match("^@(.*)/base/[^/]+$")
    so = source and (source .. "/core.so")
  end
  return so and core.absolute(so, core.getcwd())
end

local found_core_so = find_core_so()

--- The core.so that was loaded (our programs sit next to it).
--- One value for the process environment when the host reads it (not a
--- spec's own answers): equal values, equal environments. Else nil.
---@return string|nil
function M.environ_stamp()
  local default = current.getenv == os.getenv
    and (current.environ == nvim_host.environ or current.environ == process_host.environ)
  return default and core.environ_hash() or nil
end

---@return string|nil
function M.core_so()
  return found_core_so
end

--- The folder of these Lua modules (lua/flemma_sandbox/, above base/).
---@return string|nil
function M.lua_dir()
  local source = debug.getinfo(1, "S").source:match("^@(.*)/base/[^/]+$")
  return source and core.absolute(source, core.getcwd())
end

--- Counts M.use calls: what was worked out under another host is stale.
M.generation = 0

--- Replaces the host; fields left out keep the default. `use(nil)` restores it.
---@param host? table
function M.use(host)
  -- a cached policy resolved under the old host is not this one's
  M.generation = M.generation + 1
  local base = in_nvim and nvim_host or process_host
  current = setmetatable(host or {}, { __index = base })
end

---@return string|nil
function M.cwd()
  return current.cwd()
end

---@param bufnr integer|nil
---@return string|nil
function M.buffer_dir(bufnr)
  return current.buffer_dir(bufnr)
end

--- The file of a buffer (absolute), if it has one.
---@param bufnr integer|nil
---@return string|nil
function M.buffer_file(bufnr)
  if current.buffer_file then
    return current.buffer_file(bufnr)
  end
  if not in_nvim or bufnr == nil then
    return nil
  end
  if bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_buf_get_name(bufnr) == "" then
    return nil
  end
  return vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":p")
end

---@param name string
---@return string|nil
function M.getenv(name)
  return current.getenv(name)
end

---@return boolean
function M.is_linux()
  return current.is_linux()
end

--- An XDG base folder: $VAR, or HOME plus the fallback when VAR is unset.
---@param var string e.g. "XDG_DATA_HOME"
---@param fallback string e.g. "/.local/share"
---@return string|nil path, string|nil err
local function xdg_home(var, fallback)
  local base = M.getenv(var)
  if base and base ~= "" then
    return base
  end
  local home = M.getenv("HOME")
  if not home or home == "" then
    return nil, "neither " .. var .. " nor HOME is set"
  end
  return home .. fallback
end

--- Where the chats' own folders are kept (policy/chat_dirs.lua):
--- $XDG_CACHE_HOME/flemma-sandbox, or ~/.cache/flemma-sandbox, with the
--- cache folder's real path (~/.cache is often a link to another disk).
---@return string|nil path, string|nil err
function M.chats_base()
  local cache, err = xdg_home("XDG_CACHE_HOME", "/.cache")
  if not cache then
    return nil, err
  end
  return (core.resolve(cache, "/") or cache) .. "/flemma-sandbox"
end

--- The SHA-256 of text, in hex (the C core's: the same digits as
--- Neovim's sha256(), without its self-test on first use).
---@param text string
---@return string
function M.sha256(text)
  return core.sha256(text)
end

--- Runs program with args off the editor's thread; done(stdout, stderr)
--- runs in the main loop with what it printed.
--- For the probes the first tool call would otherwise wait for (the
--- options bwrap knows, what the helper can do). Without Neovim's loop,
--- or when it cannot start: false, and done is never called.
---@param program string
---@param args string[]
---@param done fun(stdout: string, stderr: string)
---@return boolean started
function M.output_in_background(program, args, done)
  local argv = { program, unpack(args) }
  return require("flemma_sandbox.base.process").spawn(argv, {}, function(result)
    vim.schedule(function()
      done(result.stdout, result.stderr)
    end)
  end) ~= nil
end

--- The XDG base folders for cache, data and state ($XDG_CACHE_HOME, ...,
--- else under HOME), those that can be named.
---@return string[]
function M.xdg_bases()
  local out = {}
  for _, pair in ipairs({ { "XDG_CACHE_HOME", "/.cache" }, { "XDG_DATA_HOME", "/.local/share" } }) do
    out[#out + 1] = xdg_home(pair[1], pair[2])
  end
  out[#out + 1] = xdg_home("XDG_STATE_HOME", "/.local/state")
  return out
end

--- Where the playground is: $XDG_DATA_HOME/flemma-sandbox/playground, or
--- under ~/.local/share when XDG_DATA_HOME is unset.
---@return string|nil path, string|nil err
function M.playground_path()
  local data, err = xdg_home("XDG_DATA_HOME", "/.local/share")
  return data and (data .. "/flemma-sandbox/playground"), err
end

--- path, made with mode 0700 (and its parents) when missing.
---@param path string
---@return string|nil path, string|nil err
local function private_dir(path)
  if not core.exists(path) then
    local ok, err = core.make_dirs(path, tonumber("700", 8))
    if not ok then
      return nil, err
    end
  end
  return path
end

--- The playground: a writable folder outside every project, made 0700 on
--- first use.
---@return string|nil path, string|nil err
function M.playground()
  local path, err = M.playground_path()
  if not path then
    return nil, err
  end
  return private_dir(path)
end

--- A folder of Neovim's (stdpath "config", "data", "state" or "cache").
--- Under plain LuaJIT, and for "state" before Neovim 0.8, the XDG default.
---@param name "config"|"data"|"state"|"cache"
---@return string|nil
function M.stdpath(name)
  if current.stdpath then
    return current.stdpath(name)
  end
  if in_nvim then
    local ok, path = pcall(vim.fn.stdpath, name)
    if ok and type(path) == "string" then
      return path
    end
  end
  local xdg = { config = { "XDG_CONFIG_HOME", "/.config" }, data = { "XDG_DATA_HOME", "/.local/share" } }
  xdg.state = { "XDG_STATE_HOME", "/.local/state" }
  xdg.cache = { "XDG_CACHE_HOME", "/.cache" }
  local base = xdg_home(xdg[name][1], xdg[name][2])
  return base and (base .. "/" .. (M.getenv("NVIM_APPNAME") or "nvim"))
end

--- The folders on Neovim's runtimepath (none outside Neovim).
---@return string[]
function M.runtimepath()
  if current.runtimepath then
    return current.runtimepath()
  end
  if in_nvim and vim.api.nvim_list_runtime_paths then
    return vim.api.nvim_list_runtime_paths()
  end
  return {}
end

--- Where our own state lives: $XDG_STATE_HOME/flemma-sandbox, or under
--- ~/.local/state.
---@return string|nil path, string|nil err
function M.state_base()
  local base, err = xdg_home("XDG_STATE_HOME", "/.local/state")
  return base and (base .. "/flemma-sandbox"), err
end

--- Our own folder for state that must survive a crash (the check files of
--- running commands, the quarantine, long argument files), made 0700.
---@param sub string
---@return string|nil path, string|nil err
function M.state_dir(sub)
  local base, err = M.state_base()
  if not base then
    return nil, err
  end
  return private_dir(base .. "/" .. sub)
end

---@return table<string, string>|nil
function M.environ()
  return current.environ()
end

--- Tells the user something went wrong without stopping anything.
---@param message string
function M.warn(message)
  current.warn(message)
end

return M
