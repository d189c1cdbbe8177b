--- What :FlemmaSandbox status shows, as lines of text for one buffer: the
--- standalone config, or with Flemma installed what Flemma does and the
--- hardening flemma-sandbox adds as its backend.
local frontmatter = require("flemma_sandbox.chat.frontmatter")
local sandbox = require("flemma_sandbox")

local M = {}

local SOURCES = { runtime = "runtime override", buffer = "frontmatter", setup = "setup()" }

---@param bufnr integer
---@return string[]
function M.lines(bufnr)
  local lines = require("flemma_sandbox.base.hooks").bridge and M.flemma_lines(bufnr) or M.standalone_lines(bufnr)
  -- direct mode's checkpoints, above the folded details
  local at = lines.details_from or (#lines + 1)
  local workspaces = require("flemma_sandbox.api.clone_mode")
  if workspaces.is_clone(bufnr) then
    table.insert(lines, at, "  workspace:  " .. require("flemma_sandbox.nvim.review_ui").summary(bufnr))
  else
    table.insert(lines, at, "  undo:       " .. require("flemma_sandbox.nvim.undo").summary(bufnr))
  end
  lines.details_from = lines.details_from and lines.details_from + 1
  return lines
end

---@param bufnr integer
---@return string[]
function M.standalone_lines(bufnr)
  frontmatter.sync(bufnr)
  local cfg, source = sandbox.resolve_config(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local lines = {
    string.format("flemma-sandbox, buffer %d%s", bufnr, name ~= "" and (": " .. name) or ""),
    string.format("  enabled:    %s (from %s)", cfg.enabled and "yes" or "no", SOURCES[source]),
    "  tool calls: " .. (sandbox.tools_refusal(bufnr) or "on"),
  }
  local fm = frontmatter.state(bufnr)
  if fm.error then
    lines[#lines + 1] = "  frontmatter error (ignored): " .. fm.error
  end
  if fm.loose and #fm.loose > 0 then
    if fm.trusted then
      lines[#lines + 1] = "  frontmatter trusted, loosens: " .. table.concat(fm.loose, "; ")
    else
      lines[#lines + 1] = "  frontmatter NOT trusted, ignored: " .. table.concat(fm.loose, "; ")
      lines[#lines + 1] = "    (:FlemmaSandbox trust applies it; any change to the text needs trust again)"
    end
  end
  for _, item in ipairs(fm.never or {}) do
    lines[#lines + 1] = "  frontmatter ignored: " .. item
  end

  local backend = sandbox.backend_status(bufnr)
  local line = string.format("  backend:    %s (%s)", backend.name or "none", backend.mode)
  if backend.available then
    local version = backend.name == "bwrap"
      and require("flemma_sandbox.backends.bwrap_probe").version(cfg.backends.bwrap)
    line = line .. ", available" .. (version and (", " .. version) or "")
  else
    line = line .. ", unavailable: " .. tostring(backend.error)
  end
  lines[#lines + 1] = line
  if cfg.enabled and not backend.available then
    lines[#lines + 1] = backend.mode == "auto" and "  commands run UNSANDBOXED: no backend is available"
      or "  commands are refused: no sandbox backend works"
  end

  local policy, skipped = sandbox.get_policy(bufnr)
  M.hardening(lines, policy, M.network_text(policy))
  if #skipped > 0 then
    lines[#lines + 1] = "  skipped:"
    for _, s in ipairs(skipped) do
      lines[#lines + 1] = string.format("    %s: %s", s.path, s.reason)
    end
  end
  return lines
end

--- How a resolved policy reaches the network, in a line.
---@param policy flemma_sandbox.ResolvedPolicy
---@return string
function M.network_text(policy)
  if policy.network_mode == "allowlist" or policy.network_mode == "ask" then
    local denied = #(policy.deny_domains or {}) > 0 and ("; never " .. table.concat(policy.deny_domains, ", ")) or ""
    return policy.network_mode
      .. " (through the proxy to "
      .. (#policy.allow_domains > 0 and table.concat(policy.allow_domains, ", ") or "nothing")
      .. denied
      .. (policy.network_mode == "ask" and "; any other name is asked about" or "")
      .. ")"
  end
  return policy.network_mode == "host" and "the host's (everything it reaches)" or "off (loopback only)"
end

--- A chat's live sandbox in words: running or not, what it keeps, when
--- it stops (backends/live.lua).
---@param policy flemma_sandbox.ResolvedPolicy
---@return string
function M.live_text(policy)
  local cfg = sandbox.resolve_config()
  local opts = cfg.sandboxes or {}
  if not opts.live then
    return "a fresh one for each call (sandboxes.live = false)"
  end
  local live = require("flemma_sandbox.backends.live")
  local helper = require("flemma_sandbox.backends.helper").helper()
  local dir = live.dir_for(policy.chat)
  local state, processes, held = "stopped", 0, 0
  if helper and dir then
    state, processes, held = live.info(helper, dir)
  end
  local clone = live.keeps_running(policy, opts)
  local text = string.format(
    "%s, shared by its calls; %s; stops after %d s without one (sandboxes.idle_ttl_s), or when more than %d run",
    state == "running" and string.format("running (its own processes: %d, held: %d)", processes, held) or "stopped",
    clone and "between calls what a call left goes on (clone mode: it sees only copies)"
      or "between calls nothing runs: what a call left is held and goes on at the next call",
    opts.idle_ttl_s,
    opts.max_running
  )
  local prestarted = dir and require("flemma_sandbox.nvim.prestart").text(dir)
  if prestarted then
    text = text .. "; " .. prestarted
  end
  if live.last_capped then
    text = text
      .. string.format(" (chat %s's stopped at %s)", live.last_capped.name, os.date("%H:%M", live.last_capped.at))
  end
  return text
end

--- The network, and what the proxy refused and the user answered lately.
---@param lines string[] appended to
---@param network string how to describe the network
local function network_lines(lines, network)
  lines[#lines + 1] = "  network:    " .. network
  local refused = {}
  for _, b in ipairs(require("flemma_sandbox.run.blocked").recent()) do
    refused[#refused + 1] = b.host
  end
  if #refused > 0 then
    lines[#lines + 1] = "  refused lately by the proxy: " .. table.concat(refused, ", ")
  end
  local ask = package.loaded["flemma_sandbox.questions.network"]
  local answers = {}
  for _, a in ipairs(ask and ask.recent() or {}) do
    local said = { once = "allowed once", always = "allowed for the session", deny = "refused" }
    answers[#answers + 1] = a.host .. " " .. said[a.answer]
  end
  if #answers > 0 then
    lines[#lines + 1] = "  asked lately: " .. table.concat(answers, ", ")
  end
end

--- What the kernel enforces: seccomp, abstract sockets, limits, caps.
---@param lines string[] appended to
---@param policy flemma_sandbox.ResolvedPolicy
local function kernel_lines(lines, policy)
  local client = require("flemma_sandbox.backends.helper")
  local arch = client.seccomp_arch()
  lines[#lines + 1] = "  seccomp:    "
    .. (
      not policy.seccomp and "off (seccomp = false)"
      or arch and ("on (" .. arch .. ")")
      or "unavailable on this architecture"
    )
  local scoped = client.helper_info().landlock >= client.LANDLOCK_SCOPE_ABI
  lines[#lines + 1] = "  abstract sockets: "
    .. (
      scoped and "host ones out of reach (Landlock scope)"
      or policy.network_mode == "host" and "host ones reachable (the host's network, kernel before 6.12)"
      or "host ones out of reach (own network namespace)"
    )
  local limits = {}
  for _, name in ipairs({ "processes", "memory_mb", "cpu_seconds", "file_size_mb", "open_files" }) do
    limits[#limits + 1] = name .. "=" .. tostring(policy.limits[name] or "none")
  end
  lines[#lines + 1] = "  limits:     " .. table.concat(limits, " ")
  lines[#lines + 1] = "  caps:       " .. require("flemma_sandbox.backends.bwrap").caps_text(policy)
end

--- The private folders (details): the home_writable folders are made in
--- each command, host or not: one line of their own, not the list of host
--- paths.
---@param lines string[] appended to
---@param policy flemma_sandbox.ResolvedPolicy
local function private_lines(lines, policy)
  local hiding, made = {}, {}
  for _, folder in ipairs(policy.private.folders) do
    if vim.tbl_contains(policy.persist_paths or {}, folder.path) then -- luacheck: ignore 542
      -- a chat's own, on the "kept" line
    elseif vim.tbl_contains(policy.private.inner or {}, folder.path) then
      made[#made + 1] = vim.fn.fnamemodify(folder.path, ":~")
    else
      hiding[#hiding + 1] = folder
    end
  end
  M.rules(lines, "private (empty in each command; the host's files there are out of reach)", hiding)
  if #made > 0 then
    -- a chat's are on the "kept" line: these are of a buffer that is not a chat
    lines[#lines + 1] = "  writable in the private home, empty in each command of this buffer (not a chat; "
      .. "policy.home_writable): "
      .. table.concat(made, ", ")
  end
  if #policy.show_paths > 0 then
    lines[#lines + 1] = "  shown read-only in them (policy.home_allow, what /run needs, allow_sockets):"
    for _, path in ipairs(policy.show_paths) do
      lines[#lines + 1] = "    " .. path
    end
  end
end

--- Hidden and protected paths (details), the watched names, new .git, the
--- quarantine.
---@param lines string[] appended to
---@param policy flemma_sandbox.ResolvedPolicy
local function protection_lines(lines, policy)
  M.rules(lines, "hidden", policy.hidden)
  local scan = policy.secret_scan
  if scan and #scan.roots > 0 then
    lines[#lines + 1] = string.format(
      "  secret files (%s) hidden by a scan before each command, in: %s",
      table.concat(scan.patterns, " "),
      table.concat(scan.roots, ", ")
    )
  end
  lines[#lines + 1] = "  host sockets outside the private folders, the projects and allow_sockets:"
    .. " covered right before each command"
  M.rules(lines, "protected (read-only inside writable folders)", policy.protected)
  if #(policy.watched or {}) > 0 then
    lines[#lines + 1] = string.format(
      "  watched: %d protected names that do not exist now; what a command creates there goes to the quarantine",
      #policy.watched
    )
  end
  if #(policy.projects or {}) > 0 then
    lines[#lines + 1] = "  new .git after a run goes to the quarantine, in: " .. table.concat(policy.projects, ", ")
  end
  for _, root in ipairs(policy.repos_truncated or {}) do
    lines[#lines + 1] = "  too many .git in " .. root .. ": only the first ones are read-only"
  end
  local quarantined = require("flemma_sandbox.run.quarantine").list()
  if #quarantined > 0 then
    lines[#lines + 1] =
      string.format("  quarantine (%d created by commands at protected names; the latest):", #quarantined)
    for i = math.max(1, #quarantined - 4), #quarantined do
      lines[#lines + 1] = string.format("    %s -> %s", quarantined[i].from, quarantined[i].path)
    end
  end
end

--- The part both modes show: network, writable, hidden and protected
--- paths, seccomp, abstract sockets, limits.
---@param lines string[] appended to
---@param policy flemma_sandbox.ResolvedPolicy
---@param network string how to describe the network
function M.hardening(lines, policy, network)
  network_lines(lines, network)
  lines[#lines + 1] = "  privileged: "
    .. (policy.allow_privileged and "yes" or "no (own user namespace, no capabilities)")
  lines[#lines + 1] = "  writable:"
  for _, path in ipairs(policy.rw_paths) do
    lines[#lines + 1] = "    " .. path
  end
  kernel_lines(lines, policy)
  if policy.chat and #(policy.persist_paths or {}) > 0 then
    local kept = {}
    for _, path in ipairs(policy.persist_paths) do
      kept[#kept + 1] = vim.fn.fnamemodify(path, ":~")
    end
    lines[#lines + 1] = string.format(
      "  kept:       %s of chat %s, between its calls (:FlemmaSandbox reset empties them)",
      table.concat(kept, ", "),
      policy.chat.name
    )
    lines[#lines + 1] = "  sandbox:    " .. M.live_text(policy)
  end
  -- the rest is detail: folded in the window (zo opens it)
  lines.details_from = #lines + 1
  lines[#lines + 1] = "  details (zo shows them):"
  private_lines(lines, policy)
  protection_lines(lines, policy)
end

--- Status under Flemma: what Flemma does with this buffer's commands and,
--- when flemma_sandbox is its backend, the hardening in effect.
---@param bufnr integer
---@return string[]
function M.flemma_lines(bufnr)
  local bridge = require("flemma_sandbox.base.hooks").bridge --[[@as flemma_sandbox.BridgeFacade]]
  local view = bridge.view(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local lines = {
    string.format("flemma-sandbox (Flemma bridge), buffer %d%s", bufnr, name ~= "" and (": " .. name) or ""),
    "  Flemma's sandbox: " .. (view.enabled and "enabled" or "disabled (commands run unsandboxed)"),
    string.format("  backend:    %s (sandbox.backend = %s)", view.backend or "none", view.mode),
    "  tool calls: " .. (sandbox.tools_refusal(bufnr) or "on"),
  }
  if not bridge.is_attached() then
    lines[#lines + 1] = "  the bridge is not registered with Flemma (run :FlemmaSandbox after Flemma's setup)"
  end
  if view.error then
    lines[#lines + 1] = "  error:      " .. view.error
  end
  local untrusted, loose = bridge.refusal(bufnr)
  if untrusted then
    lines[#lines + 1] = "  frontmatter NOT trusted, every tool call is refused; it loosens: "
      .. table.concat(loose, "; ")
    lines[#lines + 1] = "    (:FlemmaSandbox trust allows it; any change to the text needs trust again)"
  elseif #loose > 0 then
    lines[#lines + 1] = "  frontmatter trusted, loosens: " .. table.concat(loose, "; ")
  end
  if untrusted or sandbox.tools_refusal(bufnr) then
    -- a call run by hand asks no resolver: our definitions in Flemma's
    -- registry ask the same rule (:help flemma-sandbox-flemma-gap)
    local unguarded = bridge.unguarded and bridge.unguarded() or { "?" }
    lines[#lines + 1] = #unguarded == 0
        and "  by hand:    refused too (:Flemma tool:execute, Alt-Enter): every tool of Flemma's asks this first"
      or ("  gap:        run by hand (:Flemma tool:execute), these would run: " .. table.concat(unguarded, ", "))
  end
  if not view.ours then
    lines[#lines + 1] = "  flemma_sandbox is not the backend in use: Flemma's own rules apply"
    return lines
  end
  if view.resolved then
    local network = M.network_text(view.resolved) .. " (Flemma's policy.network)"
    M.hardening(lines, view.resolved, network)
  end
  -- calls run by hand skip the resolvers (:help flemma-sandbox-flemma-gap)
  local in_place = bridge.tools_in_place and bridge.tools_in_place()
  local help = " (:help flemma-sandbox-flemma-gap)"
  local by_hand = "  by hand:    Flemma's read/write/edit/ls are checked also when run with :Flemma tool:execute"
  if not in_place then
    by_hand = "  gap:        :Flemma tool:execute skips the resolvers; Flemma's read/write/edit then see hidden "
      .. "and protected files"
  end
  by_hand = by_hand .. help
  table.insert(lines, lines.details_from or #lines + 1, by_hand)
  if lines.details_from then
    lines.details_from = lines.details_from + 1
  end
  return lines
end

--- Appends a titled list of paths with the rule behind each.
---@param lines string[]
---@param title string
---@param rules flemma_sandbox.Rule[]|nil
function M.rules(lines, title, rules)
  if not rules or #rules == 0 then
    return
  end
  lines[#lines + 1] = "  " .. title .. ":"
  for _, r in ipairs(rules) do
    lines[#lines + 1] = string.format("    %s%s  (%s)", r.path, r.dir and "/" or "", r.rule)
  end
end

--- Shows lines in a floating window (q or <Esc> closes it), or in the
--- message area when there is no UI (headless).
---@param lines string[]
function M.show(lines)
  if #vim.api.nvim_list_uis() == 0 then
    vim.api.nvim_echo({ { table.concat(lines, "\n") } }, true, {})
    return
  end
  local buf, win = require("flemma_sandbox.nvim.float").open(lines)
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.api.nvim_buf_set_keymap(buf, "n", key, "<cmd>close<cr>", { nowait = true, noremap = true, silent = true })
  end
  local from = lines.details_from
  if from and from < #lines then
    vim.wo[win].foldmethod = "manual"
    vim.wo[win].foldenable = true
    vim.api.nvim_win_call(win, function()
      vim.cmd(string.format("%d,%dfold", from + 1, #lines))
    end)
    -- as tall as what shows: the rows of the lines before the fold (wrapped)
    -- and the fold's own
    local width, rows = vim.api.nvim_win_get_width(win), 1
    for i = 1, from do
      rows = rows + require("flemma_sandbox.nvim.float").rows(lines[i], width)
    end
    vim.api.nvim_win_set_height(win, math.max(1, math.min(rows, vim.o.lines - 4)))
  end
  return win
end

return M
