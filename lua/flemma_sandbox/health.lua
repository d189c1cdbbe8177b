--- :checkhealth flemma_sandbox, on Neovim 0.7 (health.report_*) and 0.10+
--- (vim.health.*).
local M = {}

local function reporter()
  local h = vim.health
  if h and h.start then
    return { start = h.start, ok = h.ok, warn = h.warn, error = h.error, info = h.info }
  end
  h = require("health")
  return { start = h.report_start, ok = h.report_ok, warn = h.report_warn, error = h.report_error, info = h.report_info }
end

--- Advice for the usual reasons an unprivileged bwrap cannot start.
---@param stderr string
---@return string[]
function M.advice(stderr)
  local out = {}
  if
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
    out[#out + 1] = "bwrap could not set up loopback in a new network namespace; policy.network = true avoids it"
  end
  if stderr:find("setting up uid map", 1, true) then
    out[#out + 1] = "bwrap could not map your uid: is bwrap setuid, or newuidmap misconfigured?"
  end
  return out
end

function M.check()
  local report = reporter()
  local sandbox = require("flemma_sandbox")

  report.start("flemma-sandbox: C core")
  local ok, core = pcall(require, "flemma_sandbox.core")
  if ok then
    report.ok("flemma_sandbox.core " .. core.version .. " loaded")
  else
    report.error("the C core did not load: " .. tostring(core), { 'run `make` in the plugin folder (build = "make")' })
    return
  end

  report.start("flemma-sandbox: backend")
  local bufnr = vim.api.nvim_get_current_buf()
  local cfg = sandbox.resolve_config(bufnr)
  local backend = sandbox.backend_status(bufnr)
  if not backend.available then
    local level = cfg.backend == "auto" and report.warn or report.error
    level("no working backend: " .. tostring(backend.error), { "install bubblewrap: sudo apt-get install bubblewrap" })
  else
    local version = backend.name == "bwrap" and require("flemma_sandbox.backends.bwrap").version(cfg.backends.bwrap)
    report.ok(string.format("backend %s (%s)%s", backend.name, cfg.backend, version and (", " .. version) or ""))
    local bwrap = require("flemma_sandbox.backends.bwrap")
    local helper, herr = bwrap.helper()
    if helper then
      local arch = bwrap.seccomp_arch()
      report.ok("flemma-sandbox-exec found; seccomp filter: " .. (arch or "none for this architecture"))
    else
      report.error(herr, { 'run `make` in the plugin folder (build = "make")' })
    end
    local argv, err = sandbox.wrap_command({ "true" }, nil, { sandbox = { enabled = true } })
    local out = argv and vim.fn.system(argv) or err
    if argv and vim.v.shell_error == 0 then
      report.ok("a test sandbox started and exited cleanly")
    else
      report.error("a test sandbox failed to start: " .. vim.trim(tostring(out)), M.advice(tostring(out)))
    end
  end
  report.info("enabled: " .. tostring(cfg.enabled) .. ", network: " .. tostring(cfg.policy.network))

  report.start("flemma-sandbox: Neovim features")
  report.info("Neovim " .. tostring(vim.version().major) .. "." .. tostring(vim.version().minor))
  report.ok("uses vim.fn.jobstart, vim.loop timers and signals, nvim_create_user_command, nvim_create_autocmd")
  report.info(vim.health and vim.health.start and "health API: vim.health" or "health API: health.report_* (0.7-0.9)")
end

return M
