--- The public API for a host plugin that decides itself whether and with
--- which writable paths, network and privileges a command is sandboxed
--- (Flemma), and hands flemma-sandbox the rest as the config of its
--- backend: the effective config, the resolved policy, whether the
--- backend works, and the wrapped command.
local config = require("flemma_sandbox.config")
local gates = require("flemma_sandbox.config.gates")
local registry = require("flemma_sandbox.backends")
local policy = require("flemma_sandbox.policy")
local util = require("flemma_sandbox.base.util")
-- loaded when a backend is first asked about
local bwrap = util.lazy_require("flemma_sandbox.backends.bwrap")
local end_of_run = util.lazy_require("flemma_sandbox.run.end_of_run")

local M = {}

---@class flemma_sandbox.HostedCall
---@field backend_config table|nil the host's config for flemma-sandbox (plain values)
---@field config_key string where that config sits in the host's config, for errors
--- the host's resolved policy: { rw_paths, network, allow_privileged }
---@field policy { rw_paths: string[]|nil, network: boolean|nil, allow_privileged: boolean|nil }
---@field extra_rw string[]|nil writable for this call beyond the host's rw_paths
---@field env table<string, string>|nil the host's environment for this call's tool
---@field bufnr integer|nil

--- The effective config for a hosted command: the defaults, then
--- setup(), then the host's config for flemma-sandbox.
---@param backend_config table|nil
---@param key string
---@return flemma_sandbox.Config|nil cfg, string|nil err naming the host's key
function M.config(backend_config, key)
  local layer, err = config.from_backend_config(backend_config or {}, key)
  if not layer then
    return nil, err
  end
  return config.merge_layer(config.resolve(nil), layer), nil
end

--- Saves the host's global config for flemma-sandbox for the command
--- line (config/saved.lua), which applies it after setup()'s.
---@param backend_config table|nil
---@param key string
function M.save_for_command_line(backend_config, key)
  local layer = config.from_backend_config(backend_config or {}, key)
  if layer then
    require("flemma_sandbox.config.saved").write("flemma", layer)
  end
end

--- The resolved policy of a hosted command: the host's writable paths,
--- network and privileges on flemma-sandbox's hardening. The host's
--- "network on" goes out through the allowlist proxy, unless
--- flemma-sandbox's own config asks for the host's network or for
--- questions; the host's environment reaches the command, but
--- credential-like names only when env_allow names them exactly.
---@param call flemma_sandbox.HostedCall
---@return flemma_sandbox.ResolvedPolicy|nil resolved, string|nil err, flemma_sandbox.Config|nil cfg
function M.policy(call)
  local cfg, err = M.config(call.backend_config, call.config_key)
  if not cfg then
    return nil, err
  end
  -- with the chat's sandbox name when sandboxes.name sets one
  local p = util.deepcopy(policy.of_config(cfg))
  p.rw_paths = util.deepcopy(call.policy.rw_paths or {})
  for _, path in ipairs(call.extra_rw or {}) do
    p.rw_paths[#p.rw_paths + 1] = path
  end
  local how = (cfg.policy.network == "host" or cfg.policy.network == "ask") and cfg.policy.network or "allowlist"
  p.network = call.policy.network ~= false and how
  p.allow_privileged = call.policy.allow_privileged == true
  local resolved = policy.resolve(p, call.bufnr)
  for name, value in pairs(call.env or {}) do
    if not policy.looks_like_credential(name, value) or util.contains(p.env_allow or {}, name) then
      resolved.env[name] = value
    end
  end
  return resolved, nil, cfg
end

--- Whether the hosted backend works: bwrap (its test sandbox only with
--- opts.start ~= false) and the helper.
---@param backend_config table|nil
---@param key string
---@param opts? { start: boolean|nil }
---@return boolean ok, string|nil err
function M.available(backend_config, key, opts)
  local cfg, err = M.config(backend_config, key)
  if not cfg then
    return false, err
  end
  local ok, why = bwrap.available(cfg.backends.bwrap, opts)
  if not ok then
    return false, why
  end
  local helper, herr = require("flemma_sandbox.backends.helper").helper()
  if not helper then
    return false, herr
  end
  return true, nil
end

--- Starts the backend's test sandbox in the background (backends/bwrap.lua).
---@param backend_config table|nil
---@param key string
---@param done fun(ok: boolean, err: string|nil)
function M.check_in_background(backend_config, key, done)
  local cfg, err = M.config(backend_config, key)
  if not cfg then
    return done(false, err)
  end
  bwrap.check_in_background(cfg.backends.bwrap, done)
end

--- Wraps a hosted command: the same path as wrap_command from the
--- resolved policy on (backends/init.lua), with the bwrap backend.
---@param call flemma_sandbox.HostedCall
---@param inner_cmd string[]
---@return string[]|nil argv, string|nil err, flemma_sandbox.WrapRecord|nil record
function M.wrap(call, inner_cmd)
  local bad = registry.check_command(inner_cmd)
  if bad then
    return nil, bad
  end
  local resolved, err, cfg = M.policy(call)
  if not resolved then
    return nil, err
  end
  local refused = gates.tools_refusal(cfg)
  if refused then
    return nil, "refused: " .. refused
  end
  -- the test sandbox, when no check started it yet: fail closed
  local ok, why = bwrap.available(cfg.backends.bwrap)
  if not ok then
    return nil, why
  end
  return registry.wrap_resolved(bwrap, resolved, cfg, cfg.backends.bwrap, inner_cmd, nil)
end

--- Before a hosted command that M.wrap wrapped starts, when its caller
--- will take its end (M.run_ended): the records file its helper and
--- proxy append to.
---@param record flemma_sandbox.WrapRecord|nil M.wrap's third value
---@return flemma_sandbox.WrapRecord|nil record for M.run_ended (nil: nothing to take)
function M.run_starts(record)
  return end_of_run.prepare(record)
end

--- After that command ended: done(stderr, records, quarantined) with what
--- the check after a killed helper said, the run's records and what the
--- run moved to the quarantine (run/end_of_run.lua).
---@param record flemma_sandbox.WrapRecord|nil M.run_starts's
---@param done fun(stderr: string, recs: flemma_sandbox.Record[], quarantined: flemma_sandbox.Quarantined[])
function M.run_ended(record, done)
  end_of_run.finish(record, done)
end

return M
