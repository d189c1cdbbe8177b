--- Backends by name and priority, with cached auto-detection, and the one
--- wrap path from a resolved policy to a backend's wrap() that the public
--- API's wrap_command and the hosted API (Flemma's backend) share.
local call_plan = require("flemma_sandbox.backends.call_plan")
local util = require("flemma_sandbox.base.util")

local M = {}

--- wrap gets a call's plan (backends/call_plan.lua: the resolved policy's
--- fields with the call's) and only computes the argv; prepare, when the
--- backend has one, is the step before it (folders, copies, sandboxes);
--- p is the plan, bc the backend's config.
---@class flemma_sandbox.BackendDefinition
---@field available fun(backend_config: table): boolean, string|nil
---@field wrap fun(p: flemma_sandbox.CallPlan, bc: table, cmd: string[]): string[]?, string?, flemma_sandbox.WrapRecord?
---@field prepare? fun(plan: flemma_sandbox.CallPlan, config: table): flemma_sandbox.Prepared?, string?
---@field priority? integer higher is preferred by auto-detection (default 50)
---@field description? string

---@class flemma_sandbox.BackendEntry: flemma_sandbox.BackendDefinition
---@field name string
---@field priority integer

local DEFAULT_PRIORITY = 50

---@type flemma_sandbox.BackendEntry[]
local entries = {}
local generation = 0
---@type {generation: integer, backends: table, name: string|false, diagnostic: string|nil}|nil
local detection = nil

local function sort()
  table.sort(entries, function(a, b)
    if a.priority == b.priority then
      return a.name < b.name
    end
    return a.priority > b.priority
  end)
end

local function index_of(name)
  for i, entry in ipairs(entries) do
    if entry.name == name then
      return i
    end
  end
end

--- Registers a backend, replacing one of the same name.
---@param name string
---@param def flemma_sandbox.BackendDefinition
function M.register(name, def)
  if type(name) ~= "string" or name == "" then
    error("flemma-sandbox: register: name must be a non-empty string", 2)
  end
  if type(def) ~= "table" or type(def.available) ~= "function" or type(def.wrap) ~= "function" then
    error("flemma-sandbox: register: definition needs available() and wrap() functions", 2)
  end
  if def.prepare ~= nil and type(def.prepare) ~= "function" then
    error("flemma-sandbox: register: prepare must be a function", 2)
  end
  if def.priority ~= nil and type(def.priority) ~= "number" then
    error("flemma-sandbox: register: priority must be a number", 2)
  end
  local i = index_of(name)
  if i then
    table.remove(entries, i)
  end
  entries[#entries + 1] = {
    name = name,
    available = def.available,
    wrap = def.wrap,
    prepare = def.prepare,
    priority = def.priority or DEFAULT_PRIORITY,
    description = def.description or "",
  }
  sort()
  generation = generation + 1
end

---@param name string
---@return boolean removed
function M.unregister(name)
  local i = index_of(name)
  if not i then
    return false
  end
  table.remove(entries, i)
  generation = generation + 1
  return true
end

---@param name string
---@return flemma_sandbox.BackendEntry|nil
function M.get(name)
  local i = index_of(name)
  return i and entries[i] or nil
end

--- All backends, highest priority first (copies: changing them changes nothing).
---@return flemma_sandbox.BackendEntry[]
function M.get_all()
  return util.deepcopy(entries)
end

---@param name string
---@return boolean
function M.has(name)
  return index_of(name) ~= nil
end

---@return integer
function M.count()
  return #entries
end

function M.clear()
  entries = {}
  generation = generation + 1
end

--- First available backend by priority, without the cache.
---@param backends_config table<string, table>
---@return string|nil name, string|nil diagnostic
function M.detect(backends_config)
  local tried = {}
  for _, entry in ipairs(entries) do
    local ok, err = entry.available(backends_config[entry.name] or {})
    if ok then
      return entry.name, nil
    end
    tried[#tried + 1] = string.format("%s: %s", entry.name, err or "unavailable")
  end
  if #tried == 0 then
    return nil, "No sandbox backend available (none registered)"
  end
  return nil, "No sandbox backend available (" .. table.concat(tried, "; ") .. ")"
end

--- Like detect(), cached until the registry or the backends config changes.
---@param backends_config table<string, table>
---@return string|nil name, string|nil diagnostic
function M.detect_cached(backends_config)
  if detection and detection.generation == generation and util.deep_equal(detection.backends, backends_config) then
    return detection.name or nil, detection.diagnostic
  end
  local name, diagnostic = M.detect(backends_config)
  detection = {
    generation = generation,
    backends = util.deepcopy(backends_config),
    name = name or false,
    diagnostic = diagnostic,
  }
  return name, diagnostic
end

--- Forgets the cached detection (e.g. after a backend failed to start).
function M.invalidate()
  detection = nil
end

--- Why inner_cmd cannot be wrapped (not a non-empty list of strings), or nil.
---@param inner_cmd any
---@return string|nil
function M.check_command(inner_cmd)
  if type(inner_cmd) ~= "table" or #inner_cmd == 0 then
    return "inner_cmd: expected a non-empty list of strings"
  end
  for i, word in ipairs(inner_cmd) do
    if type(word) ~= "string" then
      return string.format("inner_cmd[%d]: expected string, got %s", i, type(word))
    end
  end
end

--- From the resolved policy on, the one wrap path: the call's plan made
--- once (backends/call_plan.lua: the network questions, the caller's
--- environment, the time cap, the chat's sandboxes, clone mode), the
--- backend's prepare (what must exist before; the chat whose sandbox it
--- stopped is said here), then the backend's wrap(), which only computes
--- the argv from the plan. The resolved policy is left as it is.
---@param backend { wrap: function, prepare?: function } a BackendDefinition's
---@param resolved flemma_sandbox.ResolvedPolicy
---@param cfg flemma_sandbox.Config
---@param backend_config table
---@param inner_cmd string[]
---@param opts? integer|table wrap_command's opts (env, time_limit)
--- The third value: the backend's record of the wrap (bwrap's: what the
--- run's end needs, run/end_of_run.lua).
---@return string[]|nil argv, string|nil err, flemma_sandbox.WrapRecord|nil record
function M.wrap_resolved(backend, resolved, cfg, backend_config, inner_cmd, opts)
  local plan = call_plan.make(resolved, cfg, opts)
  if backend.prepare then
    local prepared, perr = backend.prepare(plan, backend_config)
    if not prepared then
      return nil, perr
    end
    if prepared.stopped_chat and require("flemma_sandbox.base.editor").present() then
      require("flemma_sandbox.base.notice").say(
        string.format(
          "stopped chat %s's sandbox (sandboxes.max_running = %d); its files stay",
          prepared.stopped_chat,
          cfg.sandboxes.max_running
        )
      )
    end
  end
  return backend.wrap(plan, backend_config, inner_cmd)
end

return M
