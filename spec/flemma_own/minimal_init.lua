-- Flemma's own test init (FLEMMA_DIR/tests/minimal_init.lua), then
-- flemma-sandbox's plugin file: Flemma's sandbox and tool specs run with the
-- bridge registered (spec/run.sh flemma-own).
dofile(os.getenv("FLEMMA_DIR") .. "/tests/minimal_init.lua")
vim.opt.runtimepath:prepend(os.getenv("FLEMMA_SANDBOX_DIR"))
vim.cmd("runtime plugin/flemma_sandbox.lua")
if not require("flemma_sandbox.flemma").is_attached() then
  -- why: Flemma's module, our start-up (which only notifies, later), or attach
  local flemma_ok, flemma_err = pcall(require, "flemma.sandbox")
  local start_ok, start_err = pcall(require("flemma_sandbox.nvim.start").run)
  io.stderr:write(
    string.format(
      "flemma-sandbox: the bridge did not register (flemma.sandbox: %s %s; start again: %s %s; attached now: %s)\n",
      tostring(flemma_ok),
      tostring(flemma_err),
      tostring(start_ok),
      tostring(start_err),
      tostring(require("flemma_sandbox.flemma").is_attached())
    )
  )
  vim.cmd("cquit 3")
end
