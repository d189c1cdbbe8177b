--- :checkhealth flemma_sandbox, on Neovim 0.7 (health.report_*) and 0.10+
--- (vim.health.*).
local M = {}

local function reporter()
  local h = vim.health
  if h and h.start then
    return { start = h.start, ok = h.ok, warn = h.warn, error = h.error, info = h.info }
  end
  h = require("health")
  return {
    start = h.report_start,
    ok = h.report_ok,
    warn = h.report_warn,
    error = h.report_error,
    info = h.report_info,
  }
end

--- Advice for the usual reasons an unprivileged bwrap cannot start.
---@param stderr string
---@return string[]
function M.advice(stderr)
  local out = {}
  if stderr:find("Can't mount proc", 1, true) then
    -- user namespaces work (bwrap got that far): the kernel refuses a new
    -- procfs where parts of the existing /proc are covered by other mounts
    out[#out + 1] = "bwrap could not mount a new /proc: the kernel refuses it where parts of the existing /proc "
      .. "are covered by other mounts, as in a Docker or Podman container (user namespaces work); run the "
      .. "container with --security-opt systempaths=unconfined (Docker) or --security-opt unmask=ALL (Podman)"
  elseif
    stderr:find("No permission to create new namespace", 1, true) or stderr:find("Operation not permitted", 1, true)
  then
    local f = io.open("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "r")
    local restricted = f and f:read("*l") == "1"
    if f then
      f:close()
    end
    if restricted then
      out[#out + 1] = "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10+): add an AppArmor profile "
        .. "that allows userns for bwrap, or set kernel.apparmor_restrict_unprivileged_userns=0"
    end
    out[#out + 1] = "user namespaces may be disabled: check kernel.unprivileged_userns_clone=1 (Debian) "
      .. "and user.max_user_namespaces > 0"
  end
  if stderr:find("RTM_NEWADDR", 1, true) then
    out[#out + 1] = 'bwrap could not set up loopback in a new network namespace; policy.network = "host" avoids it'
  end
  if stderr:find("setting up uid map", 1, true) then
    out[#out + 1] = "bwrap could not map your uid: is bwrap setuid, or newuidmap misconfigured?"
  end
  return out
end

--- What to do when Flemma's backend for the buffer is not flemma_sandbox:
--- with "auto" (or "required") why Flemma picked another, else the setting.
---@param view { mode: string, backend: string|nil }
---@param unavailable string|nil why flemma_sandbox is not available, if it is not
---@return string[]
function M.flemma_backend_advice(view, unavailable)
  if view.mode ~= "auto" and view.mode ~= "required" then
    return { 'set sandbox.backend = "auto" (or "flemma_sandbox") in Flemma\'s setup to use flemma-sandbox' }
  end
  local already = string.format('Flemma\'s sandbox.backend is already "%s": ', view.mode)
  if unavailable then
    local out = { already .. "flemma_sandbox is not available here: " .. unavailable }
    return vim.list_extend(out, M.advice(unavailable))
  end
  return {
    already
      .. tostring(view.backend)
      .. " comes first among the available backends; "
      .. 'set sandbox.backend = "flemma_sandbox" to use flemma-sandbox',
  }
end

--- The standalone backend: which one, and a real test sandbox through it.
---@param report table
local function check_standalone(report)
  local sandbox = require("flemma_sandbox")
  report.start("flemma-sandbox: backend (standalone)")
  local bufnr = vim.api.nvim_get_current_buf()
  local cfg = sandbox.resolve_config(bufnr)
  local backend = sandbox.backend_status(bufnr)
  if not backend.available then
    local level = cfg.backend == "auto" and report.warn or report.error
    local err = tostring(backend.error)
    local advice = err:find("cannot start a sandbox here", 1, true) and M.advice(err)
      or { "install bubblewrap: sudo apt-get install bubblewrap" }
    level("no working backend: " .. err, advice)
    return
  end
  local version = backend.name == "bwrap" and require("flemma_sandbox.backends.bwrap_probe").version(cfg.backends.bwrap)
  report.ok(string.format("backend %s (%s)%s", backend.name, cfg.backend, version and (", " .. version) or ""))
  local argv, err = sandbox.wrap_command({ "true" }, nil, { sandbox = { enabled = true } })
  M.try(report, argv, err)
  report.info("enabled: " .. tostring(cfg.enabled) .. ", network: " .. tostring(cfg.policy.network))
end

--- Whether Flemma has our backend (with its config schema) and knew it
--- when its setup() read its config (flemma/registration.lua).
---@param report table
---@param name string
---@return boolean registered
function M.check_registration(report, name)
  local state = require("flemma_sandbox.flemma.registration").state(name)
  if not state.registered then
    report.error("backend " .. name .. " is not in Flemma's sandbox backend registry (or has no config schema there)", {
      "something unregistered it (require('flemma.sandbox').unregister or clear); restart Neovim",
    })
    return false
  end
  report.ok(
    "registered with Flemma: backend "
      .. name
      .. " (priority "
      .. require("flemma_sandbox.flemma.backend").priority
      .. ")"
  )
  if not state.late then
    return true
  end
  local advice = {
    "with packages and no plugin manager, call require('flemma_sandbox').setup({}) before require('flemma').setup() "
      .. "in init.lua: it registers the backend at once",
    "or give these settings to require('flemma_sandbox').setup() (any order), or per chat in its frontmatter "
      .. "(flemma.opt.sandbox.backends.flemma_sandbox), which Flemma reads when the chat runs",
  }
  local what = "Flemma's setup() ran before flemma-sandbox registered its backend: Flemma dropped what that setup() "
    .. "had under sandbox.backends.flemma_sandbox"
  if state.dropped then
    report.warn(what .. ' (it said "' .. vim.trim(state.dropped) .. '")', advice)
  else
    report.info(what .. ' (if anything; Flemma\'s messages say "unknown config keys" then)')
  end
  return true
end

--- Under Flemma: is the bridge registered, is flemma_sandbox the backend
--- Flemma picks for this buffer, and does a command wrapped by it run.
---@param report table
local function check_flemma(report)
  local bridge = require("flemma_sandbox.flemma")
  local backend = require("flemma_sandbox.flemma.backend")
  report.start("flemma-sandbox: Flemma bridge")
  if not bridge.is_attached() then
    report.error("Flemma is installed but flemma-sandbox is not registered with it", {
      "check that plugin/flemma_sandbox.lua ran (:scriptnames), then :FlemmaSandbox status",
    })
    return
  end
  if not M.check_registration(report, backend.name) then
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local view = bridge.view(bufnr)
  if not view.enabled then
    report.warn("Flemma's sandbox is disabled: Flemma runs tool commands unsandboxed")
  elseif not view.ours then
    local got, flemma_cfg = pcall(require("flemma.sandbox").resolve_config, bufnr)
    local backends = got and type(flemma_cfg) == "table" and flemma_cfg.backends or {}
    local ok, unavailable = backend.available(backends[backend.name])
    report.warn(
      string.format("Flemma uses backend %s (sandbox.backend = %s)", tostring(view.backend), view.mode),
      M.flemma_backend_advice(view, not ok and unavailable or nil)
    )
  else
    report.ok("Flemma's tool commands run through flemma_sandbox (sandbox.backend = " .. view.mode .. ")")
  end
  if view.error then
    report.error(view.error)
  end
  local policy = view.flemma_policy or { rw_paths = {}, network = false }
  local argv, err = backend.wrap(policy, nil, { "true" })
  M.try(report, argv, err)
end

--- Runs a wrapped `true` and reports how it went.
---@param report table
---@param argv string[]|nil
---@param err string|nil
function M.try(report, argv, err)
  local client = require("flemma_sandbox.backends.helper")
  local programs, herr = client.programs()
  if programs then
    local arch = client.seccomp_arch()
    report.ok(
      "flemma-sandbox-init, -host, -attach and -tool found; seccomp filter: " .. (arch or "none for this architecture")
    )
  else
    report.error(herr, { 'run `make` in the plugin folder (build = "make")' })
  end
  local proxy = programs and programs.host:gsub("flemma%-sandbox%-host$", "flemma-sandbox-proxy")
  if proxy and vim.fn.executable(proxy) == 1 then
    report.ok('flemma-sandbox-proxy found (policy.network = "allowlist" and "ask")')
  elseif programs then
    report.error(
      'flemma-sandbox-proxy is missing beside flemma-sandbox-host: policy.network = "allowlist" and "ask" cannot run',
      { 'run `make` in the plugin folder (build = "make")' }
    )
  end
  local out, code = err, nil
  if argv then
    out, code = require("flemma_sandbox.base.process").run(argv)
  end
  if argv and code == 0 then
    report.ok("a test sandbox started and exited cleanly")
  else
    report.error("a test sandbox failed to start: " .. vim.trim(tostring(out)), M.advice(tostring(out)))
  end
end

function M.check()
  require("flemma_sandbox.base.installed").guard()
  local report = reporter()

  report.start("flemma-sandbox: C core")
  local ok, core = pcall(require, "flemma_sandbox.core")
  if ok then
    report.ok("flemma_sandbox.core " .. core.version .. " loaded")
  else
    report.error("the C core did not load: " .. tostring(core), { 'run `make` in the plugin folder (build = "make")' })
    return
  end

  report.start("flemma-sandbox: tool calls")
  local refused = require("flemma_sandbox").tools_refusal(vim.api.nvim_get_current_buf())
  if refused then
    report.warn(refused, { "unset FLEMMA_SANDBOX_TOOLS, or set tools.enabled = true, to allow them" })
  else
    report.ok("tool calls are on (FLEMMA_SANDBOX_TOOLS=off or tools.enabled = false turns them off)")
  end

  if refused then
    report.info("the test sandbox is not run while tool calls are off")
  elseif require("flemma_sandbox.flemma").flemma_present() then
    check_flemma(report)
  else
    check_standalone(report)
  end

  report.start("flemma-sandbox: Neovim")
  local v = vim.version()
  report.info(string.format("Neovim %d.%d.%d", v.major, v.minor, v.patch))
  if vim.fn.has("nvim-0.7") == 1 then
    report.ok("Neovim 0.7 or newer: standalone mode works")
  else
    report.error("Neovim 0.7 or newer is needed")
  end
  if require("flemma_sandbox.flemma").flemma_present() and vim.fn.has("nvim-0.11") ~= 1 then
    report.error("Flemma is installed but needs Neovim 0.11 or newer")
  end
  report.info(
    (vim.uv and "event loop: vim.uv" or "event loop: vim.loop (before 0.10)")
      .. (vim.health and vim.health.start and "; health API: vim.health" or "; health API: health.report_*")
  )
  M.check_features(report)
end

--- Tries what standalone mode relies on, rather than assuming it.
function M.check_features(report)
  local win = vim.api.nvim_get_current_win()
  local ok, err = pcall(function()
    local view = require("flemma_sandbox.questions.window").open(
      { title = "health check", lines = { "a\nb" } },
      nil,
      function() end
    )
    local stayed = vim.api.nvim_get_current_win() == win
    require("flemma_sandbox.questions.window").close(view)
    if not stayed then
      error("the question window took focus", 0)
    end
  end)
  if ok then
    report.ok("a question window opens and closes without taking focus")
  else
    report.error("the question window does not work here: " .. tostring(err))
  end
  local json = vim.json or package.loaded.cjson
  local decoded_ok, decoded = pcall(json and json.decode or error, '{"timeout":null,"command":"true"}')
  if decoded_ok and type(decoded) == "table" and decoded.command == "true" then
    report.ok("tool inputs decode (" .. (vim.json and "vim.json" or "cjson") .. ")")
  else
    report.error("tool inputs cannot be decoded: " .. tostring(decoded))
  end
end

return M
