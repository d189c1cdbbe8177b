--- Sandbox configuration: the defaults (config/defaults.lua), checks
--- with errors that name the key (config/validate.lua), and the three
--- layers (runtime override > buffer > setup()).
local util = require("flemma_sandbox.base.util")
local validate = require("flemma_sandbox.config.validate")

local M = {}

M.defaults = require("flemma_sandbox.config.defaults")
M.validate = validate.validate
M.from_backend_config = validate.from_backend_config
M.BACKEND_POLICY_KEYS = validate.BACKEND_POLICY_KEYS

--- Frontmatter allows `true`/`false` as shorthand for `{ enabled = ... }`.
---@param value boolean|table|nil
---@return table|nil
function M.expand_shorthand(value)
  if type(value) == "boolean" then
    return { enabled = value }
  end
  return value
end

--- Policy lists a layer adds to instead of replacing ("!entry" removes).
M.ADDITIVE = { "deny_read", "home_allow", "deny_write", "secret_files" }

--- util.merge, except that the ADDITIVE lists of `over` extend those of `base`.
---@param base table
---@param over table|nil
---@return table
function M.merge_layer(base, over)
  if type(over) ~= "table" or type(over.policy) ~= "table" then
    return util.merge(base, over)
  end
  local policy = util.deepcopy(over.policy)
  for _, name in ipairs(M.ADDITIVE) do
    if policy[name] ~= nil then
      local joined = util.deepcopy(base.policy and base.policy[name] or {})
      for _, entry in ipairs(policy[name]) do
        joined[#joined + 1] = entry
      end
      policy[name] = joined
    end
  end
  local copy = util.deepcopy(over)
  copy.policy = policy
  return util.merge(base, copy)
end

-- The layers. Module-level state is the Lua side's job (the C core has none).
local setup_layer = util.deepcopy(M.defaults)
---@type table<integer, table>
local buffer_layers = {}
---@type boolean|nil
local runtime_enabled = nil
--- The last config resolve_shared made, and from what.
---@type { setup: table, layer: table|nil, runtime: boolean|nil, cfg: flemma_sandbox.Config, source: string }|nil
local shared = nil

--- Replaces the setup() layer. Raises with the offending key on bad input.
---@param opts table|nil
function M.set_setup(opts)
  opts = M.expand_shorthand(opts) or {}
  local ok, err = M.validate(opts)
  if not ok then
    error("flemma-sandbox: " .. err, 3)
  end
  setup_layer = M.merge_layer(M.defaults, opts)
end

--- Sets (or with nil clears) the per-buffer layer, e.g. from frontmatter.
---@param bufnr integer
---@param layer boolean|table|nil
---@return boolean ok, string|nil err
function M.set_buffer(bufnr, layer)
  layer = M.expand_shorthand(layer)
  if layer ~= nil then
    local ok, err = M.validate(layer, "flemma.opt.sandbox")
    if not ok then
      return false, err
    end
  end
  buffer_layers[bufnr] = layer and util.deepcopy(layer) or nil
  return true
end

---@param bufnr integer
---@return table|nil
function M.get_buffer(bufnr)
  return buffer_layers[bufnr]
end

---@param enabled boolean|nil
function M.set_runtime(enabled)
  runtime_enabled = enabled
end

---@return boolean|nil
function M.get_runtime()
  return runtime_enabled
end

--- `opts` as the API takes it: a buffer number, `{ bufnr = N }`, Flemma's
--- frontmatter opts `{ sandbox = ... }`, or nil for the global config.
---@param opts integer|table|nil
---@return integer|nil bufnr, table|nil buffer_layer
function M.parse_opts(opts)
  if type(opts) == "number" then
    return opts, buffer_layers[opts]
  end
  if type(opts) ~= "table" then
    return nil, nil
  end
  if opts.sandbox ~= nil then
    return opts.bufnr, M.expand_shorthand(opts.sandbox)
  end
  return opts.bufnr, opts.bufnr and buffer_layers[opts.bufnr] or nil
end

--- The effective config: setup() layer, then the buffer layer, then the
--- runtime override. Also says where `enabled` came from.
---@param opts integer|table|nil
---@return flemma_sandbox.Config cfg, string source "runtime" | "buffer" | "setup"
function M.resolve(opts)
  local _, layer = M.parse_opts(opts)
  local cfg = M.merge_layer(setup_layer, layer)
  local source = (layer and layer.enabled ~= nil) and "buffer" or "setup"
  if runtime_enabled ~= nil then
    cfg.enabled = runtime_enabled
    source = "runtime"
  end
  return cfg, source
end

--- M.resolve for callers that only read the config (get_policy and
--- wrap_command, on every tool call): the same layers give the same table,
--- which must not be changed. Its policy's cache key is worked out once.
---@param opts integer|table|nil
---@return flemma_sandbox.Config cfg, string source
function M.resolve_shared(opts)
  local _, layer = M.parse_opts(opts)
  if not (shared and shared.setup == setup_layer and shared.layer == layer and shared.runtime == runtime_enabled) then
    local cfg, source = M.resolve(opts)
    local cache = require("flemma_sandbox.policy.cache")
    cache.remember(cfg.policy, cache.policy_text(cfg.policy))
    shared = { setup = setup_layer, layer = layer, runtime = runtime_enabled, cfg = cfg, source = source }
  end
  return shared.cfg, shared.source
end

return M
