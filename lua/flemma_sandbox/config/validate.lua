--- Checking a (partial) config: every error names the key, under the
--- prefix the caller gives (sandbox, flemma.opt.sandbox, Flemma's
--- sandbox.backends.flemma_sandbox).
local util = require("flemma_sandbox.base.util")

local editor = require("flemma_sandbox.base.editor")
local M = {}

-- the known keys and their types
local DEFAULTS = require("flemma_sandbox.config.defaults")

local function type_error(key, expected, value)
  return string.format("%s: expected %s, got %s", key, expected, type(value))
end

local function check_string_list(key, value)
  if type(value) ~= "table" or not util.is_list(value) then
    return type_error(key, "a list of strings", value)
  end
  for i, item in ipairs(value) do
    if type(item) ~= "string" then
      return type_error(string.format("%s[%d]", key, i), "string", item)
    end
    if item == "" then
      return string.format("%s[%d]: must not be empty", key, i)
    end
  end
end

local function check_keys(key, value, known)
  for k in pairs(value) do
    if known[k] == nil then
      return string.format("%s.%s: unknown key", key, tostring(k))
    end
  end
end

local function check_limits(key, limits)
  if type(limits) ~= "table" then
    return type_error(key, "table", limits)
  end
  local err = check_keys(key, limits, DEFAULTS.policy.limits)
  if err then
    return err
  end
  for name, v in pairs(limits) do
    if v ~= false and (type(v) ~= "number" or v < 1 or v % 1 ~= 0 or v > 2 ^ 40) then
      return string.format("%s.%s: expected a positive whole number or false, got %s", key, name, tostring(v))
    end
  end
end

local function check_policy(key, policy)
  if type(policy) ~= "table" then
    return type_error(key, "table", policy)
  end
  local err = check_keys(key, policy, DEFAULTS.policy)
  if err then
    return err
  end
  local lists = {
    "rw_paths",
    "deny_read",
    "home_allow",
    "home_writable",
    "home_overlay",
    "deny_write",
    "secret_files",
    "env_allow",
    "allow_sockets",
    "allow_domains",
    "deny_domains",
  }
  for _, name in ipairs(lists) do
    if policy[name] ~= nil then
      err = check_string_list(key .. "." .. name, policy[name])
      if err then
        return err
      end
    end
  end
  local modes = { allowlist = true, host = true, ask = true }
  if policy.network ~= nil and type(policy.network) ~= "boolean" and not modes[policy.network] then
    return type_error(key .. ".network", 'true, false, "allowlist", "host" or "ask"', policy.network)
  end
  local entries = #(type(policy.allow_domains) == "table" and policy.allow_domains or {})
    + #(type(policy.deny_domains) == "table" and policy.deny_domains or {})
  if entries > 255 then
    -- each goes to flemma-sandbox-host as an option (csrc/exec/host_side.h)
    return string.format("%s.allow_domains and deny_domains: at most 255 entries together, got %d", key, entries)
  end
  for _, name in ipairs({ "allow_domains", "deny_domains" }) do
    for i, entry in ipairs(type(policy[name]) == "table" and policy[name] or {}) do
      -- a name, "*." and a name, an IP literal or a range (the proxy's rules, csrc/shared/net_rules.h)
      if not (entry:match("^%*?%.?[%w%-_][%w%.%-_]*$") or entry:match("^[%x:%.]+/?%d*$")) or entry:find("%*", 2) then
        return string.format('%s.%s[%d]: "%s" is not a host name, "*.name", IP address or range', key, name, i, entry)
      end
    end
  end
  for _, name in ipairs({ "allow_privileged", "allow_home_rw", "seccomp" }) do
    if policy[name] ~= nil and type(policy[name]) ~= "boolean" then
      return type_error(key .. "." .. name, "boolean", policy[name])
    end
  end
  local depth = policy.secret_scan_depth
  if depth ~= nil and (type(depth) ~= "number" or depth < 0 or depth > 64 or depth % 1 ~= 0) then
    return string.format("%s.secret_scan_depth: expected a whole number from 0 to 64, got %s", key, tostring(depth))
  end
  if policy.limits ~= nil then
    return check_limits(key .. ".limits", policy.limits)
  end
end

local function check_backends(key, backends)
  if type(backends) ~= "table" then
    return type_error(key, "table", backends)
  end
  for name, cfg in pairs(backends) do
    local sub = key .. "." .. tostring(name)
    if type(name) ~= "string" or type(cfg) ~= "table" then
      return type_error(sub, "table", cfg)
    end
  end
  local bwrap = backends.bwrap
  if bwrap then
    local err = check_keys(key .. ".bwrap", bwrap, DEFAULTS.backends.bwrap)
    if err then
      return err
    end
    if bwrap.path ~= nil and (type(bwrap.path) ~= "string" or bwrap.path == "") then
      return type_error(key .. ".bwrap.path", "non-empty string", bwrap.path)
    end
    if bwrap.extra_args ~= nil then
      return check_string_list(key .. ".bwrap.extra_args", bwrap.extra_args)
    end
  end
end

local APPROVALS = { allow = true, ask = true, deny = true }

local function check_approval(key, approval)
  if type(approval) ~= "table" then
    return type_error(key, "table", approval)
  end
  for tool, level in pairs(approval) do
    if not APPROVALS[level] then
      return string.format('%s.%s: expected "allow", "ask" or "deny", got %s', key, tostring(tool), tostring(level))
    end
  end
end

local function check_tools(key, tools)
  if type(tools) ~= "table" then
    return type_error(key, "table", tools)
  end
  local err = check_keys(key, tools, DEFAULTS.tools)
  if err then
    return err
  end
  if tools.shell ~= nil and (type(tools.shell) ~= "string" or tools.shell == "") then
    return type_error(key .. ".shell", "non-empty string", tools.shell)
  end
  if tools.enabled ~= nil and type(tools.enabled) ~= "boolean" then
    return type_error(key .. ".enabled", "boolean", tools.enabled)
  end
  for name in pairs(DEFAULTS.tools) do
    local v = tools[name]
    if name ~= "shell" and name ~= "enabled" and v ~= nil and (type(v) ~= "number" or v < 1 or v % 1 ~= 0) then
      return string.format("%s.%s: expected a positive whole number, got %s", key, name, tostring(v))
    end
  end
  -- pairs that must agree (a key left out keeps its default)
  local function value(name)
    return tools[name] or DEFAULTS.tools[name]
  end
  for _, pair in ipairs({ { "output_file_max_bytes", "cache_max_bytes" } }) do
    if value(pair[1]) > value(pair[2]) then
      return string.format("%s.%s: %d is over %s.%s (%d)", key, pair[1], value(pair[1]), key, pair[2], value(pair[2]))
    end
  end
end

local function check_sandboxes(key, sandboxes)
  if type(sandboxes) ~= "table" then
    return type_error(key, "table", sandboxes)
  end
  local err = check_keys(key, sandboxes, DEFAULTS.sandboxes)
  if err then
    return err
  end
  for _, field in ipairs({ "live", "checkpoints", "prestart" }) do
    if sandboxes[field] ~= nil and type(sandboxes[field]) ~= "boolean" then
      return type_error(key .. "." .. field, "boolean", sandboxes[field])
    end
  end
  local ws = sandboxes.workspace
  if ws ~= nil and ws ~= "direct" and ws ~= "clone" then
    return string.format('%s.workspace: expected "direct" or "clone", got %s', key, tostring(ws))
  end
  local name = sandboxes.name
  -- as the command line's NAME: a folder's name, never "." or ".."
  if name ~= nil and name ~= false and (type(name) ~= "string" or not name:match("^[%w][%w._-]*$") or #name > 60) then
    return string.format(
      "%s.name: expected false or a name of letters, digits, '.', '_' and '-' (at most 60)"
        .. " that starts with a letter or digit, got %s",
      key,
      editor.inspect(name)
    )
  end
  for _, field in ipairs({ "idle_ttl_s", "max_running", "max_checkpoints" }) do
    local v = sandboxes[field]
    if v ~= nil and (type(v) ~= "number" or v < 1 or v % 1 ~= 0) then
      return string.format("%s.%s: expected a positive whole number, got %s", key, field, tostring(v))
    end
  end
end

--- Checks a (partial) sandbox config table.
---@param cfg any
---@param key? string prefix for messages, default "sandbox"
---@return boolean ok, string|nil err naming the offending key
function M.validate(cfg, key)
  key = key or "sandbox"
  if type(cfg) ~= "table" then
    return false, type_error(key, "table", cfg)
  end
  local err = check_keys(key, cfg, DEFAULTS)
  if not err and cfg.enabled ~= nil and type(cfg.enabled) ~= "boolean" then
    err = type_error(key .. ".enabled", "boolean", cfg.enabled)
  end
  if not err and cfg.backend ~= nil and (type(cfg.backend) ~= "string" or cfg.backend == "") then
    err = type_error(key .. ".backend", '"auto", "required" or a backend name', cfg.backend)
  end
  if not err and cfg.policy ~= nil then
    err = check_policy(key .. ".policy", cfg.policy)
  end
  if not err and cfg.backends ~= nil then
    err = check_backends(key .. ".backends", cfg.backends)
  end
  if not err and cfg.approval ~= nil then
    err = check_approval(key .. ".approval", cfg.approval)
  end
  if not err and cfg.tools ~= nil then
    err = check_tools(key .. ".tools", cfg.tools)
  end
  if not err and cfg.sandboxes ~= nil then
    err = check_sandboxes(key .. ".sandboxes", cfg.sandboxes)
  end
  return err == nil, err
end

--- The policy keys a Flemma user sets under
--- `sandbox.backends.flemma_sandbox` (Flemma's own policy supplies
--- rw_paths, network and allow_privileged).
M.BACKEND_POLICY_KEYS = {
  "deny_read",
  "home_allow",
  "home_writable",
  "home_overlay",
  "deny_write",
  "secret_files",
  "secret_scan_depth",
  "env_allow",
  "allow_sockets",
  "seccomp",
  "limits",
  "allow_home_rw",
  "network", -- "allowlist", "ask" or "host": how Flemma's network = true goes out
  "allow_domains",
  "deny_domains",
}

--- Turns Flemma's backend config for flemma_sandbox into a layer of ours
--- (nil values left out), checked with errors that name Flemma's key.
---@param backend_config table
---@param key string e.g. "sandbox.backends.flemma_sandbox"
---@return table|nil layer, string|nil err
function M.from_backend_config(backend_config, key)
  local policy = {}
  for _, name in ipairs(M.BACKEND_POLICY_KEYS) do
    policy[name] = backend_config[name]
  end
  local err = check_policy(key, policy)
  if err then
    return nil, err
  end
  local layer = { policy = policy }
  local path, extra = backend_config.path, backend_config.extra_args
  if path ~= nil and (type(path) ~= "string" or path == "") then
    return nil, type_error(key .. ".path", "non-empty string", path)
  end
  if extra ~= nil then
    err = check_string_list(key .. ".extra_args", extra)
    if err then
      return nil, err
    end
  end
  if path ~= nil or extra ~= nil then
    layer.backends = { bwrap = { path = path, extra_args = extra } }
  end
  if backend_config.sandboxes ~= nil then
    err = check_sandboxes(key .. ".sandboxes", backend_config.sandboxes)
    if err then
      return nil, err
    end
    layer.sandboxes = backend_config.sandboxes
  end
  return layer, nil
end

return M
