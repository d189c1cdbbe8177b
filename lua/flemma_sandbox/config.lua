--- Sandbox configuration: defaults, validation with errors that name the
--- key, and the three layers (runtime override > buffer > setup()).
local defaults = require("flemma_sandbox.policy.defaults")
local util = require("flemma_sandbox.util")

local M = {}

---@class flemma_sandbox.Policy
---@field rw_paths string[] writable paths, may hold variables
---@field deny_read string[] paths hidden inside the sandbox ("!entry" removes one)
---@field home_allow string[] what the private home folder shows, read-only ("!entry" removes one; "~": the whole home)
---@field home_writable string[] folders of the private home a command may write (each its own empty tmpfs, thrown
--- away after the command); the rest of it is read-only ("~": all of it writable)
---@field deny_write string[] paths kept read-only inside writable folders ("!entry" removes one)
---@field secret_files string[] name patterns hidden when found anywhere in a project
---@field secret_scan_depth integer how many levels the secret scan looks down (0: off; default 64, the whole tree)
---@field allow_sockets string[] host unix sockets (or folders of them) the sandbox may connect to
---@field seccomp boolean deny dangerous syscalls (ptrace, mount, bpf, ...) with EPERM
---@field limits flemma_sandbox.Limits
---@field network boolean|"allowlist"|"host"|"ask" "allowlist" (and true): out through the proxy to
--- allow_domains only; "host": the host's network; "ask": the allowlist, and the user is asked about any
--- other host name while the command waits
---@field allow_domains string[] names ("*.x": its subdomains), IP literals and ranges the proxy lets through
---@field deny_domains string[] the same, refused even when allow_domains has them
---@field allow_privileged boolean
---@field allow_home_rw boolean let a writable path be the home folder or a folder above it (off: skipped)
---@field env_allow string[] environment variables passed in besides the default list ("NAME" or "PREFIX*")

---@class flemma_sandbox.Limits per command; false: no limit
---@field processes integer|false
---@field memory_mb integer|false data segment and private writable memory (RLIMIT_DATA)
---@field cpu_seconds integer|false
---@field file_size_mb integer|false
---@field open_files integer|false
---@field tmpfs_mb integer|false each RAM-backed folder (private /tmp, /run, home, /dev/shm) at most this
---@field disk_reserve_mb integer|false a command is stopped when a writable root's file system has less free
---@field inotify_instances integer|false inotify instances the sandbox may take of the user's (in its user namespace)
---@field inotify_watches integer|false inotify watches the sandbox may take of the user's

---@class flemma_sandbox.BwrapConfig
---@field path string
---@field extra_args string[]

---@class flemma_sandbox.Config
---@field enabled boolean
---@field backend string "auto" | "required" | a backend name
---@field policy flemma_sandbox.Policy
---@field backends table<string, table>
---@field approval table<string, "allow"|"ask"|"deny"> per tool
---@field tools flemma_sandbox.ToolsConfig

---@class flemma_sandbox.ToolsConfig
---@field shell string the bash tool runs `shell -c command`
---@field timeout_ms integer default timeout of a bash or git call
---@field max_timeout_ms integer the most a call may ask for (the model chooses timeout_ms)
---@field output_limit integer characters of each stream a tool result keeps
---@field read_max_bytes integer the most one read call returns
---@field max_parallel integer tool calls of one buffer running at once
---@field output_file_max_bytes integer the most of one call's output its output file keeps
---@field cache_max_bytes integer cap of the folder that keeps output files

---@type flemma_sandbox.Config
M.defaults = {
  enabled = true,
  backend = "auto",
  policy = {
    rw_paths = { "$CWD", "$FLEMMA_BUFFER_PATH", "/tmp", "$FLEMMA_PLAYGROUND" },
    deny_read = util.deepcopy(defaults.DENY_READ),
    home_allow = util.deepcopy(defaults.HOME_ALLOW),
    home_writable = util.deepcopy(defaults.HOME_WRITABLE),
    deny_write = util.deepcopy(defaults.DENY_WRITE),
    secret_files = util.deepcopy(defaults.SECRET_FILES),
    secret_scan_depth = 64,
    network = "allowlist",
    allow_domains = { "api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com" },
    deny_domains = {},
    allow_privileged = false,
    allow_home_rw = false,
    env_allow = {},
    allow_sockets = {},
    seccomp = true,
    limits = {
      processes = 4096,
      memory_mb = 8192,
      cpu_seconds = 600,
      file_size_mb = 8192,
      open_files = 8192,
      tmpfs_mb = util.default_tmpfs_mb(),
      disk_reserve_mb = 2048,
      inotify_instances = util.default_inotify_cap("max_user_instances"),
      inotify_watches = util.default_inotify_cap("max_user_watches"),
    },
  },
  backends = {
    bwrap = { path = "bwrap", extra_args = {} },
  },
  approval = {
    bash = "ask",
    read = "allow",
    write = "ask",
    edit = "ask",
    find = "allow",
    grep = "allow",
    ls = "allow",
    git = "ask",
  },
  tools = {
    shell = "bash",
    timeout_ms = 120000,
    max_timeout_ms = 600000,
    output_limit = 12000,
    read_max_bytes = 1048576,
    max_parallel = 4,
    output_file_max_bytes = 104857600,
    cache_max_bytes = 1073741824,
  },
}

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
  local err = check_keys(key, limits, M.defaults.policy.limits)
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
  local err = check_keys(key, policy, M.defaults.policy)
  if err then
    return err
  end
  local lists = {
    "rw_paths",
    "deny_read",
    "home_allow",
    "home_writable",
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
    -- each goes to flemma-sandbox-exec as an option (csrc/host_mode.h)
    return string.format("%s.allow_domains and deny_domains: at most 255 entries together, got %d", key, entries)
  end
  for _, name in ipairs({ "allow_domains", "deny_domains" }) do
    for i, entry in ipairs(type(policy[name]) == "table" and policy[name] or {}) do
      -- a name, "*." and a name, an IP literal or a range (the proxy's rules, csrc/net_rules.h)
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
    local err = check_keys(key .. ".bwrap", bwrap, M.defaults.backends.bwrap)
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
  local err = check_keys(key, tools, M.defaults.tools)
  if err then
    return err
  end
  if tools.shell ~= nil and (type(tools.shell) ~= "string" or tools.shell == "") then
    return type_error(key .. ".shell", "non-empty string", tools.shell)
  end
  for name in pairs(M.defaults.tools) do
    local v = tools[name]
    if name ~= "shell" and v ~= nil and (type(v) ~= "number" or v < 1 or v % 1 ~= 0) then
      return string.format("%s.%s: expected a positive whole number, got %s", key, name, tostring(v))
    end
  end
  -- pairs that must agree (a key left out keeps its default)
  local function value(name)
    return tools[name] or M.defaults.tools[name]
  end
  for _, pair in ipairs({ { "output_file_max_bytes", "cache_max_bytes" } }) do
    if value(pair[1]) > value(pair[2]) then
      return string.format("%s.%s: %d is over %s.%s (%d)", key, pair[1], value(pair[1]), key, pair[2], value(pair[2]))
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
  local err = check_keys(key, cfg, M.defaults)
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
  return err == nil, err
end

--- The policy keys a Flemma user sets under
--- `sandbox.backends.flemma_sandbox` (Flemma's own policy supplies
--- rw_paths, network and allow_privileged).
M.BACKEND_POLICY_KEYS = {
  "deny_read",
  "home_allow",
  "home_writable",
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
  return layer, nil
end

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
