--- flemma-sandbox: the public API, with the names and meaning Flemma
--- documents for require("flemma_sandbox"). Tools ask this module, never a
--- backend.

-- setup() in init.lua runs before the plugin file puts the guard in place:
-- a core not built yet must not be looked up in the working directory
require("flemma_sandbox.base.installed").guard()
-- the first start before the C core is built (a plugin manager that runs no
-- `make`): a stand-in that keeps setup() for when it is (before_core.lua)
local core_ok, core_err = pcall(require, "flemma_sandbox.core")
if not core_ok then
  local waiting = require("flemma_sandbox.api.before_core")
  waiting.explain(tostring(core_err))
  return waiting
end

local config = require("flemma_sandbox.config")
local gates = require("flemma_sandbox.config.gates")
local hooks = require("flemma_sandbox.base.hooks")
local policy = require("flemma_sandbox.base.util").lazy_require("flemma_sandbox.policy")
local registry = require("flemma_sandbox.backends")

local M = {}

M.register = registry.register
M.unregister = registry.unregister
M.get = registry.get
M.get_all = registry.get_all
M.has = registry.has
M.count = registry.count
M.clear = registry.clear

local builtins_registered = false

--- Registers the built-in backends unless a backend of that name exists
--- (a sandbox must not silently stay off because setup() was never called).
local function register_builtins()
  builtins_registered = true
  if not registry.has("bwrap") then
    -- backends/bwrap.lua loads when a backend is first asked for, not in setup()
    local bwrap = require("flemma_sandbox.base.util").lazy_require("flemma_sandbox.backends.bwrap")
    local function late(name)
      return function(...)
        return bwrap[name](...)
      end
    end
    registry.register("bwrap", {
      available = late("available"),
      wrap = late("wrap"),
      prepare = late("prepare"),
      priority = 100,
      description = "Bubblewrap (Linux)",
    })
  end
end

local function ensure_builtins()
  return builtins_registered or register_builtins()
end

--- Sets the global sandbox config (replacing an earlier setup()) and
--- registers the built-in backends. Raises with the offending key.
---@param opts? table
function M.setup(opts)
  config.set_setup(opts)
  -- what the command line applies (bin/flemma-sandbox)
  require("flemma_sandbox.config.saved").write("setup", opts or {})
  -- cached policies of the old config (none before the first tool call)
  local cache = package.loaded["flemma_sandbox.policy.cache"]
  if cache then
    cache.clear()
  end
  register_builtins()
  require("flemma_sandbox.base.installed").plugin_file_now() -- before a Flemma setup() after this one
end

---@param opts? integer|table buffer number, { bufnr = N }, or { sandbox = ... }
---@return flemma_sandbox.Config cfg, string source of `enabled`
function M.resolve_config(opts)
  return config.resolve(opts)
end

---@param opts? integer|table
---@return boolean
function M.is_enabled(opts)
  return config.resolve(opts).enabled == true
end

--- Picks the backend entry for a config.
---@param cfg flemma_sandbox.Config
---@return flemma_sandbox.BackendEntry|nil entry, string|nil err
local function resolve_backend(cfg)
  ensure_builtins()
  if cfg.backend == "auto" or cfg.backend == "required" then
    local name, diagnostic = registry.detect_cached(cfg.backends)
    if not name then
      return nil, diagnostic
    end
    return registry.get(name), nil
  end
  local entry = registry.get(cfg.backend)
  if not entry then
    return nil, "Unknown sandbox backend: " .. cfg.backend
  end
  return entry, nil
end

--- Merges an explicit bufnr into opts for config lookup.
local function config_opts(bufnr, opts)
  if opts == nil then
    return bufnr
  end
  if type(opts) == "table" and opts.bufnr == nil and bufnr ~= nil then
    local copy = {}
    for k, v in pairs(opts) do
      copy[k] = v
    end
    copy.bufnr = bufnr
    return copy
  end
  return opts
end

--- The resolved policy for a buffer, and the configured paths that were
--- left out with the reason.
---@param bufnr? integer
---@param opts? integer|table
---@return flemma_sandbox.ResolvedPolicy policy, flemma_sandbox.Skipped[] skipped
function M.get_policy(bufnr, opts)
  local cfg = config.resolve_shared(config_opts(bufnr, opts))
  return policy.resolve(policy.of_config(cfg), bufnr)
end

--- Whether the effective backend is usable.
---@param opts? integer|table
---@return boolean ok, string|nil err
function M.validate_backend(opts)
  local cfg = config.resolve(opts)
  if not cfg.enabled then
    return true, nil
  end
  local entry, err = resolve_backend(cfg)
  if not entry then
    return false, err
  end
  return entry.available(cfg.backends[entry.name] or {})
end

---@class flemma_sandbox.BackendStatus
---@field name string|nil the backend that would be used
---@field mode string the configured `backend` value
---@field available boolean
---@field error string|nil why none is available

--- Which backend the effective config would use and whether it works,
--- whether or not the sandbox is enabled (for status and enable).
---@param opts? integer|table
---@return flemma_sandbox.BackendStatus
function M.backend_status(opts)
  local cfg = config.resolve(opts)
  local entry, err = resolve_backend(cfg)
  local status = { name = entry and entry.name or nil, mode = cfg.backend, available = false, error = err }
  if entry then
    local ok, why = entry.available(cfg.backends[entry.name] or {})
    status.available, status.error = ok == true, (not ok) and (why or "unavailable") or nil
  end
  return status
end

--- Detects the best available backend, bypassing the cache.
---@param opts? integer|table
---@return string|nil name, string|nil diagnostic
function M.detect_available_backend(opts)
  ensure_builtins()
  return registry.detect(config.resolve(opts).backends)
end

--- Wraps a command for the buffer's policy. Returns the command unchanged
--- when the sandbox is off, or when "auto" finds no backend; "required"
--- then refuses (nil, err), failing closed.
--- With policy.network = "ask" in Neovim, the run's proxy asks the user
--- about host names allow_domains does not list (questions/network.lua).
--- `opts.env` adds variables to the (otherwise allowlisted) environment.
---@param inner_cmd string[]
---@param bufnr? integer
---@param opts? integer|table
--- The third value: the backend's record of the wrap (bwrap's: what the
--- run's end needs, run/end_of_run.lua).
---@return string[]|nil argv, string|nil err, flemma_sandbox.WrapRecord|nil record
function M.wrap_command(inner_cmd, bufnr, opts)
  local bad = registry.check_command(inner_cmd)
  if bad then
    return nil, bad
  end
  local cfg = config.resolve_shared(config_opts(bufnr, opts))
  local refused = gates.tools_refusal(cfg)
  if refused then
    return nil, "refused: " .. refused
  end
  if not cfg.enabled then
    return inner_cmd, nil
  end
  local entry, err = resolve_backend(cfg)
  if not entry then
    if cfg.backend == "auto" then
      return inner_cmd, nil
    end
    if cfg.backend == "required" then
      return nil, 'refused: backend = "required" and ' .. tostring(err)
    end
    return nil, err
  end
  local resolved = policy.resolve(policy.of_config(cfg), bufnr)
  return registry.wrap_resolved(entry, resolved, cfg, cfg.backends[entry.name] or {}, inner_cmd, opts)
end

--- Why tool calls are refused for the buffer (FLEMMA_SANDBOX_TOOLS=off in
--- Neovim's environment, or tools.enabled = false), or nil when they are
--- not. wrap_command refuses then too.
---@param bufnr? integer
---@param opts? integer|table
---@return string|nil
function M.tools_refusal(bufnr, opts)
  return gates.tools_refusal(config.resolve_shared(config_opts(bufnr, opts)))
end

--- Asks the buffer's resolved policy about a path (check is
--- policy.is_writable or policy.is_readable); anything goes when off.
---@param check fun(path: string, resolved: flemma_sandbox.ResolvedPolicy): boolean, string
---@return boolean ok, string reason
local function ask_policy(check, path, bufnr, opts)
  if type(path) ~= "string" or path == "" then
    return false, "path: expected a non-empty string"
  end
  local cfg = config.resolve_shared(config_opts(bufnr, opts))
  if not cfg.enabled then
    return true, "sandbox disabled"
  end
  return check(path, (policy.resolve(policy.of_config(cfg), bufnr)))
end

--- Whether a write to `path` would be allowed: true when the sandbox is
--- off, otherwise the symlink-resolved path must lie in a writable root and
--- outside every protected and hidden path.
---@param path string
---@param bufnr? integer
---@param opts? integer|table
---@return boolean writable, string|nil reason
function M.is_path_writable(path, bufnr, opts)
  return ask_policy(policy.is_writable, path, bufnr, opts)
end

--- Whether a sandboxed command could read `path` (false for paths hidden
--- by deny_read, secret_files, the socket rule or a private folder), and why.
---@param path string
---@param bufnr integer|nil
---@param opts table|nil
---@return boolean readable, string reason
function M.is_path_readable(path, bufnr, opts)
  return ask_policy(policy.is_readable, path, bufnr, opts)
end

--- Session-wide override for all buffers (:Flemma sandbox:enable/disable).
---@param enabled boolean
function M.set_enabled(enabled)
  if type(enabled) ~= "boolean" then
    error("flemma-sandbox: set_enabled: expected boolean, got " .. type(enabled), 2)
  end
  config.set_runtime(enabled)
end

function M.reset_enabled()
  config.set_runtime(nil)
end

---@return boolean|nil override nil when none is set
function M.get_override()
  return config.get_runtime()
end

--- A wrap function for run/job.lua (its opts.wrap): wrap_command for this
--- buffer with opts, and the environment the job gives it passed through.
---@param bufnr integer|nil
---@param opts? table wrap_command's opts
---@return fun(argv: string[], env: table<string, string>|nil): string[]|nil, string|nil, flemma_sandbox.WrapRecord|nil
function M.wrapper(bufnr, opts)
  return function(argv, env)
    local with = opts
    if env then
      with = {}
      for k, v in pairs(type(opts) == "table" and opts or { bufnr = opts }) do
        with[k] = v
      end
      with.env = env
    end
    return M.wrap_command(argv, bufnr, with)
  end
end

--- Config layers for a buffer (the standalone runner's frontmatter reader
--- sets them through these, not config/).

--- `true`/`false` as `{ enabled = ... }`; anything else unchanged.
---@param layer any
---@return any
function M.expand_shorthand(layer)
  return config.expand_shorthand(layer)
end

--- Checks a config layer; an error names the key under prefix.
---@param layer table
---@param prefix? string e.g. "flemma.opt.sandbox"
---@return boolean ok, string|nil err
function M.validate_config(layer, prefix)
  return config.validate(layer, prefix)
end

--- Sets (or with nil drops) a buffer's own config layer, between setup()
--- and the runtime override.
---@param bufnr integer
---@param layer boolean|table|nil
---@return boolean ok, string|nil err
function M.set_buffer_config(bufnr, layer)
  return config.set_buffer(bufnr, layer)
end

--- Questions about a resolved policy (what get_policy returns), for the
--- tools and the Flemma bridge, which ask this API and never policy/ or a
--- backend directly (ARCHITECTURE.md).

--- The absolute, symlink-resolved path of `path` (relative to cwd; `~`
--- expanded), or nil and why.
---@param path string
---@param cwd? string
---@return string|nil real, string|nil err
function M.real_path(path, cwd)
  return policy.real_path(path, cwd)
end

--- The writable root of resolved that holds real (the longest), or nil.
---@param real string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return string|nil
function M.root_of(real, resolved)
  return policy.root_of(real, resolved)
end

--- The rule that hides real in resolved (deny_read, a secret file, a
--- private folder), or nil.
---@param real string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return string|nil
function M.hidden_rule(real, resolved)
  return policy.hidden_rule(real, resolved)
end

--- Whether resolved lets a command read path, and why not.
---@return boolean, string|nil
function M.readable_in(path, resolved)
  return policy.is_readable(path, resolved)
end

--- Whether resolved lets a command write path, and why not.
---@return boolean, string|nil
function M.writable_in(path, resolved)
  return policy.is_writable(path, resolved)
end

--- Runs argv in a sandbox without blocking (run/job.lua's run()): wrapped
--- with opts.wrap, or for opts.bufnr's policy when opts.wrap is not given.
---@param argv string[]
---@param opts flemma_sandbox.JobOpts|table
---@return flemma_sandbox.JobHandle|nil handle, string|nil err
function M.run(argv, opts)
  if type(opts) == "table" and opts.wrap == nil then
    opts.wrap = M.wrapper(opts.bufnr)
  end
  return require("flemma_sandbox.run.job").run(argv, opts)
end

-- Standalone tool calls and their questions, for mappings and scripts: the
-- same as :FlemmaSandbox tool:execute | tool:execute-all | tool:cancel |
-- approve | approve-always | deny | approval in the current buffer.
local function subcommand(sub)
  return function()
    if not hooks.subcommand then
      error("flemma-sandbox: " .. sub .. " needs Neovim's :FlemmaSandbox (plugin/flemma_sandbox.lua did not run)", 2)
    end
    hooks.subcommand(sub)
  end
end
M.execute = subcommand("tool:execute")
M.execute_all = subcommand("tool:execute-all")
M.cancel = subcommand("tool:cancel")
M.approve = subcommand("approve")
M.approve_always = subcommand("approve-always")
M.deny = subcommand("deny")
M.approval = subcommand("approval")

return M
