--- The bubblewrap backend: available() (backends/bwrap_probe.lua),
--- prepare() (backends/bwrap_prepare.lua) and wrap(), which builds bwrap's
--- argv through the C core and puts the host program in front of it, the
--- init program inside (backends/helper.lua). What the probe and the
--- helper client know besides is asked of them.
local client = require("flemma_sandbox.backends.helper")
local core = require("flemma_sandbox.core")
local live = require("flemma_sandbox.backends.live")
local prepare = require("flemma_sandbox.backends.bwrap_prepare")
local probe = require("flemma_sandbox.backends.bwrap_probe")

local M = {}

-- the backend's definition (backends/init.lua): available, prepare, wrap
M.available = probe.available
M.prepare = prepare.prepare

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

--- The view in front of the helper in clone mode (its copies made by
--- the step before the wrap, backends/bwrap_prepare.lua).
---@param policy flemma_sandbox.CallPlan
---@param backend_config flemma_sandbox.BwrapConfig
---@return string[] argv
local function workspace_view(policy, backend_config)
  local workspace = require("flemma_sandbox.backends.workspace_copies")
  local out = { backend_config.path or "bwrap" }
  local overlay = probe.overlay_works(backend_config)
  vim.list_extend(out, workspace.view_options(policy.workspaces, overlay))
  out[#out + 1] = "--"
  return out
end

--- backend_config with the options every sandbox gets from this bwrap:
--- no nested user namespaces (they reopen kernel attack surface).
---@param policy flemma_sandbox.CallPlan
---@param backend_config flemma_sandbox.BwrapConfig|table
---@return flemma_sandbox.BwrapConfig|table
local function hardened_config(policy, backend_config)
  if policy.allow_privileged or not probe.features(backend_config)["disable-userns"] then
    return backend_config
  end
  local extra = { "--disable-userns" }
  for _, arg in ipairs(backend_config.extra_args or {}) do
    extra[#extra + 1] = arg
  end
  return setmetatable({ extra_args = extra }, { __index = backend_config })
end

--- Appends the words to list.
---@param list string[]
local function add(list, ...)
  for _, word in ipairs({ ... }) do
    list[#list + 1] = word
  end
end

--- Appends the words of more to list (plain Lua: the wrap runs outside
--- Neovim too, in the escape suites under LuaJIT).
---@param list string[]
---@param more string[]
local function extend(list, more)
  for _, word in ipairs(more) do
    list[#list + 1] = word
  end
end

--- The allowlist proxy's part: bwrap's options (its socket inside, the
--- proxy variables) put in front of backend_config's, and the helper's
--- proxy options. A chat's calls share its sandbox, and so its proxy.
---@param policy flemma_sandbox.CallPlan
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param live_dir string|nil
---@param base string the run's name
---@return flemma_sandbox.BwrapConfig|table backend_config, string[] proxy the helper's options
local function proxy_parts(policy, backend_config, live_dir, base)
  if not client.uses_proxy(policy) then
    return backend_config, {}
  end
  local socket = live_dir and live_dir .. "/proxy.sock" or base .. ".sock"
  local url = "http://127.0.0.1:" .. client.PROXY_PORT
  local extra = { "--ro-bind", socket, client.PROXY_INSIDE }
  for _, name in ipairs({ "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy" }) do
    add(extra, "--setenv", name, url)
  end
  add(extra, "--setenv", "NO_PROXY", "localhost,127.0.0.1,::1", "--setenv", "no_proxy", "localhost,127.0.0.1,::1")
  extend(extra, backend_config.extra_args or {})
  local proxy = { "--proxy", socket }
  for _, entry in ipairs(policy.allow_domains or {}) do
    add(proxy, "--allow", entry)
  end
  for _, entry in ipairs(policy.deny_domains or {}) do
    add(proxy, "--deny", entry)
  end
  if client.network_mode(policy) == "ask" and policy.ask_socket then
    add(proxy, "--ask", policy.ask_socket)
  end
  return setmetatable({ extra_args = extra }, { __index = backend_config }), proxy
end

--- What bwrap mounts and sets: the policy with the pins writable, the
--- network only in "host" mode, RAM-backed folders capped where bwrap has
--- --size (Debian 12's 0.8 has it), and, for a chat's sandbox, no
--- environment in bwrap's words (they make its key: the environment goes
--- with each call, live.call_env; bwrap still clears its own).
---@param policy flemma_sandbox.CallPlan
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param live_dir string|nil
---@return table mounts what core.bwrap_argv reads
local function mounts_of(policy, backend_config, live_dir)
  local mounts = policy
  if policy.pins and #policy.pins > 0 then
    mounts = setmetatable({ rw_paths = {} }, { __index = policy })
    for _, list in ipairs({ policy.rw_paths, policy.pins }) do
      for _, path in ipairs(list) do
        mounts.rw_paths[#mounts.rw_paths + 1] = path
      end
    end
  end
  local tmpfs_mb = probe.features(backend_config)["size"] and (policy.limits or {}).tmpfs_mb or nil
  mounts = setmetatable({
    network = client.network_mode(policy) == "host",
    tmpfs_size = tmpfs_mb and tmpfs_mb * 1024 * 1024 or nil,
  }, { __index = mounts })
  if live_dir and policy.env then
    mounts = setmetatable({ env = {} }, { __index = mounts })
  end
  return mounts
end

--- bwrap's argv through the C core, with the position of its own "--"
--- (an option's value may be "--" too: counted from the end), refused past
--- what bwrap accepts: it counts every argument after its name, --args
--- ones included (it refuses the command itself if the helper's secret
--- masks go past it).
---@param policy flemma_sandbox.CallPlan
---@param mounts table
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param inner string[] the inner helper and the command
---@return string[]|nil argv, integer|string dash_or_err
local function bwrap_words(policy, mounts, backend_config, inner)
  local argv, err = core.bwrap_argv(mounts, backend_config, inner)
  if not argv then
    return nil, err
  end
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
  return argv, #argv - #inner
end

--- The helper's options in front of bwrap's argv: a clean environment
--- for bwrap's own process (visible inside the sandbox, /proc/1/environ:
--- it must not carry Neovim's), bwrap's options in a file when they are
--- many, the time limit, the disk reserve the helper watches while bwrap
--- runs, and the inotify caps set in the sandbox's own user namespace
--- before the command runs (csrc/exec/userns_caps.h; allow_privileged has
--- none of its own). Made once for each that runs them: a run's host
--- side (run), the attach of a live call (attach: the args file, the time
--- limit) and the keeper it may start (keeper: no time limit, the args
--- file as the attach copies it into the live folder).
---@param policy flemma_sandbox.CallPlan
---@param argv string[] bwrap's
---@param dash integer position of bwrap's "--" in argv
---@return { run: string[], attach: string[], keeper: string[] }|nil front, string[]|string argv_or_err, integer|nil
local function front_options(policy, argv, dash)
  local options, bytes = dash - 2, 0
  for i = 2, dash - 1 do
    bytes = bytes + #argv[i] + 1
  end
  local front = { run = {}, attach = {}, keeper = {} }
  if policy.env then
    add(front.run, "--clearenv")
    add(front.keeper, "--clearenv")
  end
  if options > client.ARGS_FILE_AT or bytes > client.ARGS_FILE_BYTES then
    local file, short, ferr = client.args_file(argv, dash)
    if not file then
      return nil, ferr
    end
    argv, dash = short, 2
    add(front.run, "--args-file", file)
    add(front.attach, "--args-file", file)
    add(front.keeper, "--args-file", "keeper.args")
  end
  if policy.time_limit_ms and policy.time_limit_ms > 0 then
    add(front.run, "--time-limit", string.format("%d", policy.time_limit_ms))
    add(front.attach, "--time-limit", string.format("%d", policy.time_limit_ms))
  end
  local limits = policy.limits or {}
  local caps = {}
  if limits.disk_reserve_mb then
    add(caps, "--disk-reserve", string.format("%d", limits.disk_reserve_mb))
  end
  if not policy.allow_privileged then
    for _, name in ipairs({ "inotify_instances", "inotify_watches" }) do
      if limits[name] then
        add(caps, "--" .. name:gsub("_", "-"), string.format("%d", limits[name]))
      end
    end
  end
  extend(front.run, caps)
  extend(front.keeper, caps)
  return front, argv, dash
end

--- The wrapped command's first words: the host program (the attach for a
--- live call); in clone mode behind the workspace view's bwrap, so it and
--- all it starts see the chat's copies at the repositories' paths
--- (backends/workspace_copies.lua).
---@param clone boolean
---@param policy flemma_sandbox.CallPlan
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param helper string
---@return string[]|nil words, string|nil err
local function helper_front(clone, policy, backend_config, helper)
  if not clone then
    return { helper }, nil
  end
  local view = workspace_view(policy, backend_config)
  view[#view + 1] = helper
  return view, nil
end

--- A call's argv from its plan, and the plan's files (the check file, the
--- args file); nothing else: what must exist before comes from
--- M.prepare, which the wrap path takes first (backends/init.lua).
---@param policy flemma_sandbox.CallPlan
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param inner_cmd string[]
---@return string[]|nil argv, string|nil err, flemma_sandbox.WrapRecord|nil record what the run's end needs
function M.wrap(policy, backend_config, inner_cmd)
  local programs, herr = client.programs()
  if not programs then
    return nil, herr
  end
  backend_config = hardened_config(policy, backend_config)
  local base, berr = client.run_base()
  if not base then
    return nil, berr
  end
  local live_dir, derr = prepare.live_dir(policy)
  if derr then
    return nil, derr
  end
  local proxy
  backend_config, proxy = proxy_parts(policy, backend_config, live_dir, base)
  local inner = client.inner(policy, programs.init, inner_cmd)
  local argv, dash = bwrap_words(policy, mounts_of(policy, backend_config, live_dir), backend_config, inner)
  if not argv then
    return nil, dash
  end
  local front
  front, argv, dash = front_options(policy, argv, dash)
  if not front then
    return nil, argv
  end
  -- always: the host's sockets are covered as they are right before the run
  local check, cerr = client.check_options(policy, dash - 1, base)
  if not check then
    return nil, cerr
  end
  local clone = policy.workspaces ~= nil and #policy.workspaces > 0
  local out, verr = helper_front(clone, policy, backend_config, programs[live_dir and "attach" or "host"])
  if not out then
    return nil, verr
  end
  local host = { check, proxy, front.run }
  if live_dir then
    local keeper = {}
    extend(keeper, front.keeper)
    extend(keeper, proxy)
    host = { live.words(policy, live_dir, keeper), check, front.attach }
  end
  for _, words in ipairs(host) do
    extend(out, words)
  end
  out[#out + 1] = "--"
  extend(out, argv)
  local made = { argv = out, live_dir = live_dir, clone = clone }
  return out, nil, client.wrap_record(base, made)
end

return M
