-- Flemma's own test init (FLEMMA_DIR/tests/minimal_init.lua), then
-- flemma-sandbox's plugin file: Flemma's sandbox and tool specs run with the
-- bridge registered (spec/run.sh flemma-own).
dofile(os.getenv("FLEMMA_DIR") .. "/tests/minimal_init.lua")
vim.opt.runtimepath:prepend(os.getenv("FLEMMA_SANDBOX_DIR"))
vim.cmd("runtime plugin/flemma_sandbox.lua")
if not require("flemma_sandbox.flemma").is_attached() then
  io.stderr:write("flemma-sandbox: the bridge did not register\n")
  vim.cmd("cquit 3")
end
