-- flemma-sandbox: defines :FlemmaSandbox, then either registers with Flemma
-- (when Flemma is installed) or runs .chat tool calls itself. Never raises:
-- a plugin file that throws breaks the user's start-up.
if vim.g.loaded_flemma_sandbox then
  return
end
vim.g.loaded_flemma_sandbox = true

local ok, err = pcall(function()
  require("flemma_sandbox.nvim.start").run()
end)
if not ok then
  vim.schedule(function()
    vim.notify("flemma-sandbox: start-up failed: " .. tostring(err), vim.log.levels.ERROR)
  end)
end
