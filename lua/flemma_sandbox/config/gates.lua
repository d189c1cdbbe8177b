--- The gates that turn every tool call off: FLEMMA_SANDBOX_TOOLS=off in
--- Neovim's environment (a kill switch that needs no config), and the
--- config key tools.enabled = false. Both refuse standalone tool calls,
--- and under Flemma the approval resolver and the backend refuse them.
local surroundings = require("flemma_sandbox.base.surroundings")

local M = {}

--- The variable, and the values of it that turn tool calls off.
M.ENV = "FLEMMA_SANDBOX_TOOLS"
local OFF = { off = true, ["0"] = true, ["false"] = true, no = true }

--- Whether the environment turns tool calls off.
---@return boolean
function M.env_off()
  local value = surroundings.getenv(M.ENV)
  return value ~= nil and OFF[value:lower()] == true
end

--- Why tool calls are refused, naming the variable or the key; nil when
--- they are not.
---@param cfg flemma_sandbox.Config|nil
---@return string|nil
function M.tools_refusal(cfg)
  if M.env_off() then
    return "tool calls are off: " .. M.ENV .. "=" .. surroundings.getenv(M.ENV) .. " in Neovim's environment"
  end
  if cfg and cfg.tools and cfg.tools.enabled == false then
    return "tool calls are off: tools.enabled = false"
  end
  return nil
end

return M
