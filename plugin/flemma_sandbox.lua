-- flemma-sandbox: commands and autocmds. The work is in lua/flemma/sandbox/.
if vim.g.loaded_flemma_sandbox then
  return
end
vim.g.loaded_flemma_sandbox = true

require("flemma.sandbox.commands").define()
require("flemma.sandbox.autocmds").setup()
