--- The bubblewrap backend: available() (backends/bwrap_probe.lua) and
--- wrap(), which builds bwrap's argv through the C core and puts the
--- helper in front of it (backends/helper.lua). What the probe and the
--- helper client offer is also here under its old names, for callers and
--- specs that ask the backend (the client's tuning values stay there:
--- a copy here would not change what it does).
local chat_dirs = require("flemma_sandbox.policy.chat_dirs")
local client = require("flemma_sandbox.backends.helper")
local core = require("flemma_sandbox.core")
local live = require("flemma_sandbox.backends.live")
local probe = require("flemma_sandbox.backends.bwrap_probe")

local M = {}

M.available = probe.available
M.version = probe.version
M.features = probe.features
M.helper = client.helper
M.helper_info = client.helper_info
M.seccomp_arch = client.seccomp_arch
M.MAX_ARGS = client.MAX_ARGS
M.LANDLOCK_SCOPE_ABI = client.LANDLOCK_SCOPE_ABI

--- What a live call says before bwrap's words when its sandbox was
--- started again for it (csrc/exec/live_attach.c).
local RESTARTED = "flemma%-sandbox: this chat's sandbox was started again: [^\n]*\n"

--- Whether a failed run is bwrap giving up before the command started
--- because a path it was to mount over vanished after the policy was read
--- (a host socket closing, a protected file deleted): then running it
--- again, planned afresh, is safe. A fresh run exits with bwrap's 1; a
--- live call whose new sandbox never took it exits 126 with the keeper's
--- log (bwrap's line), after the line that says it was started again.
---@param code integer exit status
---@param stdout string
---@param stderr string
---@return boolean
function M.lost_race(code, stdout, stderr)
  if (code ~= 1 and code ~= 126) or stdout ~= "" then
    return false
  end
  local rest = code == 126 and stderr:gsub("^" .. RESTARTED, "", 1) or stderr
  return rest:match("^bwrap: Can't [^\n]*\n?$") ~= nil
end

--- For the first chat buffer, in the background: the test sandbox
--- (done(ok, err) when it ends), and what the first tool call would
--- otherwise wait for (the options bwrap knows, what the helper can do).
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param done fun(ok: boolean, err: string|nil)
function M.check_in_background(backend_config, done)
  probe.features_in_background(backend_config)
  client.info_in_background()
  probe.check_in_background(backend_config, done)
end

--- What caps the policy puts on a command's use of the host, in words.
---@param policy flemma_sandbox.ResolvedPolicy
---@param backend_config flemma_sandbox.BwrapConfig|table
---@return string
function M.caps_text(policy, backend_config)
  local limits = policy.limits or {}
  local ram
  if not limits.tmpfs_mb then
    ram = "RAM-backed folders not capped (limits.tmpfs_mb = false)"
  elseif probe.features(backend_config or {})["size"] then
    ram = string.format("private /tmp, /run, home and /dev/shm at most %d MiB each in RAM", limits.tmpfs_mb)
  else
    ram = "private /tmp, /run, home and /dev/shm not capped: this bwrap has no --size"
  end
  if #(policy.persist_paths or {}) > 0 then
    -- a chat's /tmp, /run, /dev/shm and home folders are its own on disk
    ram = "a chat's kept folders are on disk, not in RAM; "
      .. ram:gsub("^private /tmp, /run, home and /dev/shm", "the rest of its private home")
  end
  local disk = limits.disk_reserve_mb
      and string.format("stopped below %d MiB free on a writable root's file system", limits.disk_reserve_mb)
    or "no disk reserve"
  local inotify
  if not (limits.inotify_instances or limits.inotify_watches) then
    inotify = "inotify not capped (limits.inotify_instances and inotify_watches = false)"
  elseif policy.allow_privileged then
    inotify = "inotify not capped: allow_privileged runs without a user namespace of its own"
  else
    inotify = string.format(
      "inotify at most %s instances and %s watches of the user's",
      tostring(limits.inotify_instances or "all"),
      tostring(limits.inotify_watches or "all")
    )
  end
  return ram .. "; " .. disk .. "; " .. inotify
end

--- The view in front of the helper in clone mode: each copy made first
--- (the editor waits when a tool call did not make it already).
---@param policy flemma_sandbox.ResolvedPolicy
---@param backend_config flemma_sandbox.BwrapConfig
---@return string[]|nil argv, string|nil err
local function workspace_view(policy, backend_config)
  local workspace = require("flemma_sandbox.backends.workspace")
  local bwrap = backend_config.path or "bwrap"
  for _, space in ipairs(policy.workspaces) do
    local ok, err = workspace.ensure_now(workspace.spec(space, policy, bwrap))
    if not ok then
      return nil, err
    end
  end
  local out = { bwrap }
  local overlay = probe.overlay_works(backend_config)
  vim.list_extend(out, workspace.view_options(policy.workspaces, overlay))
  out[#out + 1] = "--"
  return out
end

---@param policy flemma_sandbox.ResolvedPolicy
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param inner_cmd string[]
---@return string[]|nil argv, string|nil err, flemma_sandbox.WrapRecord|nil record what the run's end needs
function M.wrap(policy, backend_config, inner_cmd)
  local helper, herr = client.helper()
  if not helper then
    return nil, herr
  end
  if not policy.allow_privileged and probe.features(backend_config)["disable-userns"] then
    -- no nested user namespaces: they reopen kernel attack surface
    local extra = { "--disable-userns" }
    for _, arg in ipairs(backend_config.extra_args or {}) do
      extra[#extra + 1] = arg
    end
    backend_config = setmetatable({ extra_args = extra }, { __index = backend_config })
  end
  -- a chat's own folders, made (and checked: folders, not links) before bwrap binds them
  if policy.chat and policy.persist_subs and #policy.persist_subs > 0 then
    local ok, perr = chat_dirs.prepare(policy.chat, policy.persist_subs, policy.persist_copies)
    if not ok then
      return nil, perr
    end
  end
  local mounts = policy
  if policy.pins and #policy.pins > 0 then
    mounts = setmetatable({ rw_paths = {} }, { __index = policy })
    for _, list in ipairs({ policy.rw_paths, policy.pins }) do
      for _, path in ipairs(list) do
        mounts.rw_paths[#mounts.rw_paths + 1] = path
      end
    end
  end
  local base, berr = client.run_base()
  if not base then
    return nil, berr
  end
  -- a chat's calls share its sandbox, and so its proxy
  local live_dir = nil
  if live.wanted(policy) then
    local derr
    live_dir, derr = live.dir_for(policy.chat)
    if not live_dir then
      return nil, "flemma-sandbox: no state folder for the chat's sandbox: " .. tostring(derr)
    end
  end
  local proxy = {}
  if client.uses_proxy(policy) then
    local socket = live_dir and live_dir .. "/proxy.sock" or base .. ".sock"
    local url = "http://127.0.0.1:" .. client.PROXY_PORT
    local extra = { "--ro-bind", socket, client.PROXY_INSIDE }
    local function add(list, ...)
      for _, word in ipairs({ ... }) do
        list[#list + 1] = word
      end
    end
    for _, name in ipairs({ "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy" }) do
      add(extra, "--setenv", name, url)
    end
    add(extra, "--setenv", "NO_PROXY", "localhost,127.0.0.1,::1", "--setenv", "no_proxy", "localhost,127.0.0.1,::1")
    add(extra, unpack(backend_config.extra_args or {}))
    backend_config = setmetatable({ extra_args = extra }, { __index = backend_config })
    proxy = { "--proxy", socket }
    for _, entry in ipairs(policy.allow_domains or {}) do
      add(proxy, "--allow", entry)
    end
    for _, entry in ipairs(policy.deny_domains or {}) do
      add(proxy, "--deny", entry)
    end
    if client.network_mode(policy) == "ask" and policy.ask_socket then
      add(proxy, "--ask", policy.ask_socket)
    end
  end
  -- bwrap shares the host's network only in "host" mode; RAM-backed
  -- folders are capped where bwrap has --size (Debian 12's 0.8 has it)
  local tmpfs_mb = probe.features(backend_config)["size"] and (policy.limits or {}).tmpfs_mb or nil
  mounts = setmetatable({
    network = client.network_mode(policy) == "host",
    tmpfs_size = tmpfs_mb and tmpfs_mb * 1024 * 1024 or nil,
  }, { __index = mounts })
  if live_dir and policy.env then
    -- a chat's sandbox: the environment goes with each call (live.call_env),
    -- not into bwrap's words, which make its key; bwrap still clears its own
    mounts = setmetatable({ env = {} }, { __index = mounts })
  end
  local inner = client.inner(policy, helper, inner_cmd)
  local argv, err = core.bwrap_argv(mounts, backend_config, inner)
  if not argv then
    return nil, err
  end
  -- bwrap's own "--" (an option's value may be "--" too: counted from the end)
  local dash = #argv - #inner
  local options, bytes = dash - 2, 0
  for i = 2, dash - 1 do
    bytes = bytes + #argv[i] + 1
  end
  -- bwrap counts every argument after its name, --args ones included (it
  -- refuses the command itself if the helper's secret masks go past it)
  if #argv - 1 > client.MAX_ARGS then
    return nil,
      string.format(
        "policy too large: %d bwrap arguments (bwrap accepts at most %d); hidden paths: %d, protected: %d",
        #argv - 1,
        client.MAX_ARGS,
        #(policy.deny_paths or {}),
        #(policy.ro_paths or {})
      )
  end
  -- bwrap's own process is visible inside the sandbox (/proc/1/environ):
  -- it must not carry Neovim's environment
  local front = policy.env and { "--clearenv" } or {}
  if options > client.ARGS_FILE_AT or bytes > client.ARGS_FILE_BYTES then
    local file, short, ferr = client.args_file(argv, dash)
    if not file then
      return nil, ferr
    end
    argv, dash = short, 2
    front[#front + 1] = "--args-file"
    front[#front + 1] = file
  end
  if policy.time_limit_ms and policy.time_limit_ms > 0 then
    front[#front + 1] = "--time-limit"
    front[#front + 1] = string.format("%d", policy.time_limit_ms)
  end
  local reserve = (policy.limits or {}).disk_reserve_mb
  if reserve then
    -- the helper watches the writable roots' free space while bwrap runs
    front[#front + 1] = "--disk-reserve"
    front[#front + 1] = string.format("%d", reserve)
  end
  if not policy.allow_privileged then
    -- set in the sandbox's own user namespace before the command runs
    -- (csrc/exec/userns_caps.h); allow_privileged has none of its own
    for _, name in ipairs({ "inotify_instances", "inotify_watches" }) do
      local value = (policy.limits or {})[name]
      if value then
        front[#front + 1] = "--" .. name:gsub("_", "-")
        front[#front + 1] = string.format("%d", value)
      end
    end
  end
  -- always: the host's sockets are covered as they are right before the run
  local check, cerr = client.check_options(policy, dash - 1, base)
  if not check then
    return nil, cerr
  end
  local out = { helper }
  if policy.workspaces and #policy.workspaces > 0 then
    -- clone mode: the helper and all it starts see the chat's copies at
    -- the repositories' paths (backends/workspace.lua)
    local view, verr = workspace_view(policy, backend_config)
    if not view then
      return nil, verr
    end
    out = view
    out[#out + 1] = helper
  end
  if live_dir then
    local sandboxes = policy.sandboxes
    -- what a call left is held between calls unless the sandbox sees only copies
    for _, word in ipairs(live.options(live_dir, sandboxes, live.keeps_running(policy, sandboxes))) do
      out[#out + 1] = word
    end
    for _, word in ipairs(live.fields(policy)) do
      out[#out + 1] = word
    end
    for _, word in ipairs(policy.env and live.call_env(policy.env) or {}) do
      out[#out + 1] = word
    end
    local capped = live.touch(helper, live_dir, policy.chat, sandboxes)
    if capped and type(vim) == "table" then
      require("flemma_sandbox.notice").say(
        string.format(
          "stopped chat %s's sandbox (sandboxes.max_running = %d); its files stay",
          capped,
          sandboxes.max_running
        )
      )
    end
  end
  for _, word in ipairs(check) do
    out[#out + 1] = word
  end
  for _, word in ipairs(proxy) do
    out[#out + 1] = word
  end
  for _, word in ipairs(front) do
    out[#out + 1] = word
  end
  out[#out + 1] = "--"
  for _, word in ipairs(argv) do
    out[#out + 1] = word
  end
  return out, nil, client.wrap_record(base, out, live_dir, policy.workspaces ~= nil and #policy.workspaces > 0)
end

return M
