--- What require("flemma_sandbox") returns while the C core is not built yet
--- (the first start after a plugin manager that runs no `make`): setup()
--- is kept and applied once the core is there, in the same session, so an
--- init.lua that calls it never errors; every other function says why it
--- cannot work yet. Once start.lua loads the real module, this table
--- forwards to it, so a reference the user kept keeps working.
local M = { before_core = true }

---@type table|nil the real module, once loaded
local real = nil
---@type table[] setup() options given before that
local queued = {}
---@type string why the core did not load
local why = "not found"

--- Says why the core did not load (the require's error), for the errors
--- the other functions raise meanwhile.
---@param err string
function M.explain(err)
  why = err
end

--- Keeps the options until the core is built (or applies them at once
--- when it is).
---@param opts? table
function M.setup(opts)
  if real then
    return real.setup(opts)
  end
  queued[#queued + 1] = opts or {}
end

--- Called with the real module when the core loads: replays the kept
--- setup() calls in order and forwards everything from then on.
---@param module table
---@return string[] errors one per setup() that failed
function M.forward_to(module)
  real = module
  local errors = {}
  for _, opts in ipairs(queued) do
    local ok, err = pcall(module.setup, opts)
    if not ok then
      errors[#errors + 1] = tostring(err)
    end
  end
  queued = {}
  return errors
end

setmetatable(M, {
  __index = function(_, key)
    if real then
      return real[key]
    end
    return function()
      error("flemma-sandbox: the C core is not built yet (" .. why .. ")", 2)
    end
  end,
})

return M
