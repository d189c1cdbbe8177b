--- Whether this Lua runs inside Neovim. The modules that also run under
--- plain LuaJIT (the command line's planning, the rock's specs, the
--- benchmarks) ask here; `type(vim)` is read in this module and nowhere
--- else (make lint: scripts/check_editor.lua).
local M = {}

--- Inside Neovim: `vim` with its API and functions. Asked at each call,
--- so a spec that sets up a `vim` of its own is seen.
---@return boolean
function M.present()
  return type(vim) == "table" and type(vim.api) == "table" and type(vim.fn) == "table"
end

--- Decodes a JSON text with Neovim's vim.json, else lua-cjson.
---@param text string
---@return any
function M.json_decode(text)
  if M.present() and vim.json then
    return vim.json.decode(text)
  end
  return require("cjson").decode(text)
end

--- A value in words for a message: vim.inspect in Neovim, else tostring.
---@param value any
---@return string
function M.inspect(value)
  if M.present() then
    return vim.inspect(value)
  end
  return tostring(value)
end

return M
