--- The sandbox backend "flemma_sandbox" as Flemma's registry takes it:
--- available(), wrap(policy, backend_config, inner_cmd) and a config schema
--- for `sandbox.backends.flemma_sandbox`. Flemma decides whether and with
--- which policy a command is sandboxed; this adds the hardening (hidden and
--- protected paths, clean environment, limits, seccomp) to Flemma's
--- rw_paths, network and allow_privileged.
local util = require("flemma_sandbox.base.util")
-- registered with Flemma at start-up; what wraps commands loads at first use
local hosted = util.lazy_require("flemma_sandbox.api.hosted")

local M = {}

M.name = "flemma_sandbox"
--- Above Flemma's own bwrap backend (100), so auto-detection picks it.
M.priority = 200
M.description = "flemma-sandbox: hardened bubblewrap (hidden secrets, protected files, limits, seccomp)"
M.CONFIG_KEY = "sandbox.backends.flemma_sandbox"

--- The schema under sandbox.backends.flemma_sandbox, in Flemma's schema
--- DSL. Every key is optional without a default: a key Flemma's config
--- leaves unset falls back to require("flemma_sandbox").setup() and then
--- to flemma-sandbox's defaults.
---@return table schema a flemma.schema.ObjectNode
function M.config_schema()
  local s = require("flemma.schema")
  local strings = function()
    return s.optional(s.list(s.string()))
  end
  -- a number or false; not s.literal(false), which Flemma materializes as
  -- a default (every limit would be off). `true` is refused by our check.
  local limit = function()
    return s.optional(s.union(s.integer(), s.boolean()))
  end
  return s.object({
    path = s.optional(s.string()),
    extra_args = strings(),
    deny_read = strings(),
    home_allow = strings(),
    home_writable = strings(),
    home_overlay = strings(),
    deny_write = strings(),
    secret_files = strings(),
    secret_scan_depth = s.optional(s.integer()),
    env_allow = strings(),
    allow_sockets = strings(),
    seccomp = s.optional(s.boolean()),
    allow_home_rw = s.optional(s.boolean()),
    -- how Flemma's network = true goes out: through the proxy (which may
    -- ask about other names), or the host's
    network = s.optional(s.enum({ "allowlist", "ask", "host" })),
    allow_domains = strings(),
    deny_domains = strings(),
    -- a chat's sandbox: live between its calls, shared by name
    sandboxes = s.optional(s.object({
      live = s.optional(s.boolean()),
      name = s.optional(s.string()),
      idle_ttl_s = s.optional(s.integer()),
      max_running = s.optional(s.integer()),
      prestart = s.optional(s.boolean()),
      checkpoints = s.optional(s.boolean()),
      max_checkpoints = s.optional(s.integer()),
      workspace = s.optional(s.enum({ "direct", "clone" })),
    })),
    limits = s.optional(s.object({
      processes = limit(),
      memory_mb = limit(),
      cpu_seconds = limit(),
      file_size_mb = limit(),
      open_files = limit(),
      tmpfs_mb = limit(),
      disk_reserve_mb = limit(),
      inotify_instances = limit(),
      inotify_watches = limit(),
    })),
  })
end

--- Drops what Flemma's proxies add and empty objects, keeps plain values.
---@param value any
---@return any
function M.plain(value)
  if type(value) ~= "table" then
    return value
  end
  local out = {}
  for k, v in pairs(value) do
    if type(k) == "string" or type(k) == "number" then
      out[k] = M.plain(v)
    end
  end
  return out
end
local plain = M.plain

--- flemma-sandbox's effective config for a command under Flemma: the
--- defaults, then require("flemma_sandbox").setup(), then Flemma's
--- sandbox.backends.flemma_sandbox (setup and frontmatter, as Flemma
--- resolved it for the buffer). Flemma's own policy is applied on top by
--- the caller.
---@param backend_config table|nil
---@return flemma_sandbox.Config|nil cfg, string|nil err naming Flemma's key
function M.effective_config(backend_config)
  return hosted.config(plain(backend_config or {}), M.CONFIG_KEY)
end

--- The sandboxes settings Flemma's config gives a buffer (its backend
--- config over setup() over the defaults), or nil when it cannot be read.
---@param bufnr integer
---@return flemma_sandbox.SandboxesConfig|nil
function M.sandboxes_of(bufnr)
  local ok, cfg = pcall(function()
    local flemma_cfg = require("flemma.config").materialize(bufnr)
    local backends = flemma_cfg.sandbox and flemma_cfg.sandbox.backends or {}
    return M.effective_config(backends[M.name])
  end)
  return ok and type(cfg) == "table" and cfg.sandboxes or nil
end

--- What flemma-sandbox's hosted API gets for one of Flemma's commands.
---@param flemma_policy table Flemma's resolved policy (rw_paths absolute)
---@param backend_config table|nil
---@param context flemma_sandbox.FlemmaCall|nil the tool call, when known
---@return flemma_sandbox.HostedCall
local function hosted_call(flemma_policy, backend_config, context)
  return {
    backend_config = plain(backend_config or {}),
    config_key = M.CONFIG_KEY,
    policy = flemma_policy,
    extra_rw = context and context.rw_paths or nil,
    env = context and context.env or nil,
    bufnr = context and context.bufnr or nil,
  }
end

--- The policy as flemma-sandbox resolves it for one of Flemma's commands.
---@param flemma_policy table Flemma's resolved policy (rw_paths absolute)
---@param backend_config table|nil
---@param context flemma_sandbox.FlemmaCall|nil the tool call, when known
---@return flemma_sandbox.ResolvedPolicy|nil resolved, string|nil err, flemma_sandbox.Config|nil cfg
function M.resolve(flemma_policy, backend_config, context)
  return hosted.policy(hosted_call(flemma_policy, backend_config, context))
end

--- Flemma's setup() asks every backend whether it works, at Neovim's
--- start-up when Flemma loads there: the answer then comes from cheap
--- checks (Linux, bwrap on PATH, the helper built), and the test sandbox
--- starts at first use (the bridge's check_in_background() for the first
--- chat, or wrap()). Later, the full check.
---@param backend_config table
---@return boolean ok, string|nil err
function M.available(backend_config)
  return hosted.available(plain(backend_config or {}), M.CONFIG_KEY, { start = vim.v.vim_did_enter == 1 })
end

--- Set by the bridge: the Flemma tool call whose command is being wrapped.
---@type fun(): flemma_sandbox.FlemmaCall|nil
M.current_call = function()
  return nil
end

--- Flemma's backend wrap(). The wrap's record goes to the call that asked
--- for it (on_wrap, set by the bridge for a call whose end it takes, so
--- that its result carries the run's `[sandbox]` notes), and back with the
--- argv to a caller that takes it (wrap_for_call).
---@param flemma_policy table
---@param backend_config table
---@param inner_cmd string[]
---@return string[]|nil argv, string|nil err, flemma_sandbox.WrapRecord|nil record
function M.wrap(flemma_policy, backend_config, inner_cmd)
  local call = M.current_call()
  local argv, err, record = hosted.wrap(hosted_call(flemma_policy, backend_config, call), inner_cmd)
  if argv and record and call and call.on_wrap then
    call.on_wrap(record)
  end
  return argv, err, record
end

return M
