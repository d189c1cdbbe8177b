-- flemma-sandbox: defines :FlemmaSandbox, then either registers with Flemma
-- (when Flemma is installed) or runs .chat tool calls itself. Never raises:
-- a plugin file that throws breaks the user's start-up.
if vim.g.loaded_flemma_sandbox then
  return
end
vim.g.loaded_flemma_sandbox = true

-- A rock's folder on 'runtimepath' (luarocks --local, or a tree of its
-- own) holds plugin/ and doc/, while the Lua modules and the C core stay in
-- the tree: <tree>/lib/luarocks/rocks-5.1/flemma-sandbox/<version>/plugin/.
-- Put the tree on package.path and package.cpath unless something else
-- (rocks.nvim) already did.
local here = debug.getinfo(1, "S").source:match("^@(.*)/plugin/flemma_sandbox%.lua$")

local function find_rock_tree()
  local tree = here and here:match("^(.*)/lib/luarocks/rocks%-5%.1/flemma%-sandbox/[^/]+$")
  if not tree or package.searchpath("flemma_sandbox.nvim.start", package.path) then
    return
  end
  package.path = tree .. "/share/lua/5.1/?.lua;" .. tree .. "/share/lua/5.1/?/init.lua;" .. package.path
  package.cpath = tree .. "/lib/lua/5.1/?.so;" .. package.cpath
end

local ok, err = pcall(function()
  find_rock_tree()
  -- first: nothing of ours or Flemma's is ever loaded from the working
  -- directory (package.path's "./?.lua"), where a sandboxed command writes
  require("flemma_sandbox.base.installed").guard()
  require("flemma_sandbox.nvim.start").run(here)
end)
if not ok then
  vim.schedule(function()
    vim.notify("flemma-sandbox: start-up failed: " .. tostring(err), vim.log.levels.ERROR)
  end)
end
