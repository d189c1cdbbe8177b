--- A chat's timeline: one entry per tool call (calls.lua ends each call
--- here). Filled in by the log work of issue 39.
local M = {}

--- A call ended.
---@param call flemma_sandbox.Call
---@param result table|nil
---@param extra table|nil
function M.call_ended(call, result, extra)
  local _ = { call, result, extra }
end

return M
