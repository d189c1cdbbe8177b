--- One call's plan: what the resolved policy decides for one wrapped
--- command, made once by M.make and read by the backend's prepare and
--- wrap (backends/bwrap.lua, backends/check_plan.lua, backends/helper.lua).
--- Nothing sets a field on it after M.make, nor on the policy it is made
--- from.
local clone_plan = require("flemma_sandbox.policy.clone_plan")
local hooks = require("flemma_sandbox.base.hooks")
local util = require("flemma_sandbox.base.util")

local M = {}

--- The policy's fields for one call (a backend reads them under the
--- ResolvedPolicy's names), with what the call adds.
---@class flemma_sandbox.CallPlan: flemma_sandbox.ResolvedPolicy
---@field policy flemma_sandbox.ResolvedPolicy what it was made from, unchanged
---@field env table<string, string> the policy's environment and the caller's opts.env
---@field time_limit_ms integer|nil tools.max_timeout_ms, nil for time_limit = false
---@field sandboxes flemma_sandbox.SandboxesConfig a chat's sandboxes (backends/live.lua)
---@field ask_socket string|nil in "ask" mode, where the run's proxy asks (questions/network.lua)
---@field clone flemma_sandbox.CloneFields|nil nil in direct mode
---@field workspaces flemma_sandbox.Workspace[] clone's, or none
---@field own_git string[] clone's, or none

--- Refuses a field set after the plan was made (a new key; the plan's
--- own keys are set once, by M.make).
local FROZEN = {
  __newindex = function(_, key)
    error("flemma-sandbox: a call's plan is made once (backends/call_plan.lua); not setting " .. tostring(key), 2)
  end,
}

--- The call's environment: the policy's with what the caller sets for
--- this command on purpose.
---@param resolved flemma_sandbox.ResolvedPolicy
---@param opts? integer|table
---@return table<string, string>|nil
local function env_of(resolved, opts)
  if type(opts) ~= "table" or type(opts.env) ~= "table" or not resolved.env then
    return resolved.env
  end
  return util.with(resolved.env, opts.env)
end

--- The plan of one call from the resolved policy (left as it is): the
--- caller's environment, the time cap (it holds even where no job runner
--- applies a timeout, Flemma, and whatever timeout the model asked a tool
--- for; the command line's interactive shell asks for none: time_limit =
--- false), the chat's sandboxes, clone mode's copies instead of the
--- user's repositories, and in "ask" mode, in Neovim, the socket the
--- run's proxy asks through (the hook is set at start-up; busted specs
--- have no event loop to serve it).
---@param resolved flemma_sandbox.ResolvedPolicy
---@param cfg flemma_sandbox.Config
---@param opts? integer|table wrap_command's opts (env, time_limit)
---@return flemma_sandbox.CallPlan
function M.make(resolved, cfg, opts)
  local plan = {}
  for k, v in pairs(resolved) do
    plan[k] = v
  end
  plan.policy = resolved
  plan.env = env_of(resolved, opts)
  local unlimited = type(opts) == "table" and opts.time_limit == false
  plan.time_limit_ms = not unlimited and cfg.tools.max_timeout_ms or nil
  plan.sandboxes = cfg.sandboxes
  local clone = clone_plan.fields(resolved, cfg.sandboxes)
  plan.clone = clone
  plan.workspaces = clone and clone.workspaces or {}
  plan.own_git = clone and clone.own_git or {}
  if clone then
    plan.ro_paths, plan.protected, plan.pins = clone.ro_paths, clone.protected, clone.pins
  end
  if resolved.network_mode == "ask" and hooks.network_asker then
    plan.ask_socket = hooks.network_asker(resolved)
  end
  return setmetatable(plan, FROZEN)
end

return M
