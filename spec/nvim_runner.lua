-- Runs a spec folder with busted inside headless Neovim (0.7.2 has no `nvim -l`):
--   nvim --headless -u NONE -i NONE -c "luafile spec/nvim_runner.lua"
-- FLEMMA_SANDBOX_SUITE names the folder (default spec/nvim). FLEMMA_DIR, when
-- set, is a Flemma checkout put on the runtimepath after this plugin's
-- plugin file ran (the order lazy.nvim gives a dependency of Flemma's).
local root = vim.fn.getcwd()
vim.opt.runtimepath:prepend(root)
vim.opt.swapfile = false
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
local flemma_dir = os.getenv("FLEMMA_DIR")
if flemma_dir and flemma_dir ~= "" then
  vim.opt.runtimepath:append(flemma_dir)
end
vim.cmd("runtime plugin/flemma_sandbox.lua")
local suite = os.getenv("FLEMMA_SANDBOX_SUITE") or "spec/nvim"
_G.arg = { [0] = "busted", "-o", "utfTerminal", suite }
local ok, err = pcall(require("busted.runner"), { standalone = false })
if not ok then
  io.stderr:write(tostring(err) .. "\n")
  os.exit(1)
end
os.exit(0)
