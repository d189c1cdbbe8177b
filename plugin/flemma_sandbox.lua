-- flemma-sandbox: commands and autocmds. The work is in lua/flemma_sandbox/.
if vim.g.loaded_flemma_sandbox then
  return
end
vim.g.loaded_flemma_sandbox = true

-- Without the compiled core nothing works: say how to build it, once.
local ok, err = pcall(require, "flemma_sandbox.core")
if not ok then
  vim.schedule(function()
    vim.notify(
      'flemma-sandbox: the C core is not built (run `make` in the plugin folder, or build = "make"): ' .. err,
      vim.log.levels.ERROR
    )
  end)
  return
end

require("flemma_sandbox.nvim.commands").define()
require("flemma_sandbox.nvim.autocmds").setup()
