--- What Flemma does with a buffer's commands and the hardening
--- flemma-sandbox adds when it is the backend: for status, health and the
--- approval resolver (which the registration in flemma/init.lua loads, so
--- this lives apart from it).
local backend = require("flemma_sandbox.flemma.backend")

local M = {}

---@class flemma_sandbox.FlemmaView
---@field enabled boolean Flemma's effective sandbox.enabled for the buffer
---@field backend string|nil the backend Flemma would use
---@field mode string Flemma's sandbox.backend
---@field ours boolean whether that backend is flemma_sandbox
---@field error string|nil
---@field flemma_policy table|nil Flemma's resolved policy
---@field resolved flemma_sandbox.ResolvedPolicy|nil the hardening in effect
---@field config flemma_sandbox.Config|nil

--- What Flemma does with a buffer's commands, and the hardening flemma-sandbox
--- adds when it is the backend (for status, health and the resolver).
---@param bufnr integer
---@return flemma_sandbox.FlemmaView
function M.view(bufnr)
  local fs = require("flemma.sandbox")
  local ok, cfg = pcall(fs.resolve_config, bufnr)
  if not ok or type(cfg) ~= "table" then
    return { enabled = false, mode = "?", ours = false, error = "Flemma is not set up: " .. tostring(cfg) }
  end
  local view = { enabled = cfg.enabled == true, mode = tostring(cfg.backend) }
  if cfg.backend == "auto" or cfg.backend == "required" then
    view.backend, view.error = fs.detect_available_backend(bufnr)
  else
    view.backend = cfg.backend
  end
  view.ours = view.backend == backend.name
  if view.ours then
    local got, flemma_policy = pcall(fs.get_policy, bufnr)
    if got then
      view.flemma_policy = flemma_policy
      local backend_config = (cfg.backends or {})[backend.name]
      local call = { bufnr = bufnr, tool_name = "bash", tool_id = "" }
      view.resolved, view.error, view.config = backend.resolve(flemma_policy, backend_config, call)
    else
      view.error = tostring(flemma_policy)
    end
  end
  return view
end

return M
