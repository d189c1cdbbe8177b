-- Runs spec/nvim with busted inside headless Neovim (0.7.2 has no `nvim -l`):
--   nvim --headless -u NONE -i NONE -c "luafile spec/nvim_runner.lua"
local root = vim.fn.getcwd()
vim.opt.runtimepath:prepend(root)
-- absolute, so that specs which :cd elsewhere still find the code under test
package.path = table.concat({
  root .. "/lua/?.lua",
  root .. "/lua/?/init.lua",
  root .. "/spec/?.lua",
  "/usr/share/lua/5.1/?.lua",
  "/usr/share/lua/5.1/?/init.lua",
  package.path,
}, ";")
package.cpath = root
  .. "/lua/?.so;/usr/lib/x86_64-linux-gnu/lua/5.1/?.so;/usr/lib/aarch64-linux-gnu/lua/5.1/?.so;"
  .. package.cpath
vim.cmd("runtime plugin/flemma_sandbox.lua")
_G.arg = { [0] = "busted", "-o", "utfTerminal", "spec/nvim" }
local ok, err = pcall(require("busted.runner"), { standalone = false })
if not ok then
  io.stderr:write(tostring(err) .. "\n")
  os.exit(1)
end
os.exit(0)
