--- The config the command line applies (bin/flemma-sandbox): Neovim's
--- setup() and, under Flemma, the backend config Flemma's chats gave
--- last, saved as JSON in $XDG_STATE_HOME/flemma-sandbox/config.json each
--- time they change. The command line starts Neovim without the user's
--- init (fast, and nothing of it is installed or run) and reads this file:
--- the user's Neovim stays in charge of the policy.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")

local editor = require("flemma_sandbox.base.editor")
local M = {}

--- Set by the command line, which reads the file and never writes it.
M.frozen = false

local in_nvim = editor.present()

--- The file's path.
---@return string|nil path, string|nil err
function M.path()
  local base, err = surroundings.state_base()
  if not base then
    return nil, err
  end
  return base .. "/config.json", nil
end

--- What the file holds: { setup = table|nil, flemma = table|nil }, or
--- an empty table when there is none (the defaults apply).
---@return table saved, string|nil err
function M.read()
  local path = M.path()
  local text = path and util.read_file(path)
  if not text then
    return {}, nil
  end
  local ok, saved = pcall(vim.json.decode, text)
  if not ok or type(saved) ~= "table" then
    return {}, path .. ": not the JSON the command line writes; delete it and start Neovim again"
  end
  return saved, nil
end

--- Saves one layer (kind "setup" or "flemma") when it changed; quietly
--- does nothing outside Neovim (specs under LuaJIT) or in the command
--- line. A layer with a function (not JSON) is not saved.
---@param kind "setup"|"flemma"
---@param layer table|nil
function M.write(kind, layer)
  if M.frozen or not in_nvim then
    return
  end
  local path = M.path()
  if not path then
    return
  end
  local saved = M.read()
  local ok_old, old = pcall(vim.json.encode, saved[kind] or vim.NIL)
  local ok_new, new = pcall(vim.json.encode, layer or vim.NIL)
  if not ok_new or (ok_old and old == new) then
    return
  end
  saved[kind] = layer
  saved.version = 1
  local ok_all, text = pcall(vim.json.encode, saved)
  local base = surroundings.state_base()
  if not (ok_all and base and (core.exists(base) or core.make_dirs(base, 448))) then
    return
  end
  -- a whole file or the old one: written aside, then renamed over it
  local tmp = path .. "." .. tostring(vim.fn.getpid()) .. ".tmp"
  local f = io.open(tmp, "wb")
  if not f then
    return
  end
  f:write(text, "\n")
  f:close()
  os.rename(tmp, path)
end

return M
