--- Turns a configured policy into the resolved policy a backend receives:
--- variables expanded, paths absolute and symlink-resolved, missing ones
--- skipped with a reason, the rest deduplicated.
local chat_dirs = require("flemma_sandbox.policy.chat_dirs")
local cache = require("flemma_sandbox.policy.cache")
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")
local private_mod = require("flemma_sandbox.policy.private")
local protect = require("flemma_sandbox.policy.protect")
local repos = require("flemma_sandbox.policy.repos")
local resolution = require("flemma_sandbox.policy.resolution")

local M = {}

local env_mod = require("flemma_sandbox.policy.env")
local paths = require("flemma_sandbox.policy.paths")

-- what the other parts of the policy answer, under the names callers use
M.DEFAULT_ENV = env_mod.DEFAULT_ENV
M.looks_like_credential = env_mod.looks_like_credential
M.environment = env_mod.environment
M.hidden_rule = paths.hidden_rule
M.protected_rule = paths.protected_rule
M.real_path = paths.real_path
M.root_of = paths.root_of
M.is_readable = paths.is_readable
M.is_writable = paths.is_writable

---@class flemma_sandbox.ResolvedPolicy
---@field rw_paths string[] bound read-write from the host
---@field private_paths string[] fresh tmpfs folders: the home folder, /tmp, /run
---@field show_paths string[] bound read-only into them: policy.home_allow, what /run needs, allow_sockets
---@field inner_tmpfs string[] policy.home_writable folders: a fresh tmpfs each inside the private home
---@field readonly_paths string[] private folders remounted read-only last (the home, unless home_writable has "~")
---@field private flemma_sandbox.Private why each private folder is private, and what shows in it
---@field deny_paths string[] hidden: deny_read (secret files and host sockets: the helper, right before the run)
---@field ro_paths string[] protected inside writable folders (deny_write, git folders)
---@field protected flemma_sandbox.Rule[] why each ro path is protected
---@field watched flemma_sandbox.Rule[] protected paths that are missing: checked after each run
---@field links flemma_sandbox.Link[] protected symlinks in writable folders: made again after a run that replaced them
---@field project_roots string[] the writable folders that are projects (host sockets in them stay reachable)
---@field projects string[] project roots where a new ".git" goes to the quarantine (none without the ".git/" rule)
---@field repos_truncated string[] projects with too many ".git" to protect each
---@field user_hooks string|nil the user's own core.hooksPath, for a repository the helper finds
--- new right before a run (policy/repos.lua)
---@field pins string[] folders above protected paths, bound onto themselves so they cannot be renamed
---@field hidden flemma_sandbox.Rule[] why each hidden path is hidden
---@field allow_sockets string[] allow_sockets, resolved: host sockets left reachable
---@field secret_scan flemma_sandbox.SecretScan what the helper scans for secret files before the command
---@field network boolean whether the command has any way out
---@field network_mode "off"|"allowlist"|"ask"|"host" how: none, the proxy (allow_domains), the proxy
--- that asks about other names, the host's network
---@field allow_domains string[]
---@field deny_domains string[]
---@field seccomp boolean
---@field limits flemma_sandbox.Limits
---@field allow_privileged boolean
---@field env table<string, string> the sandboxed process's whole environment
---@field env_allow string[]|nil env_allow as configured (a live sandbox's key names it)

---@class flemma_sandbox.Skipped
---@field path string the entry as configured
---@field reason string

--- The named variables for one buffer; anything else comes from the environment.
---@param bufnr integer|nil
---@return table vars, string|nil cwd
function M.variables(bufnr)
  local cwd = surroundings.cwd()
  local vars = setmetatable({
    CWD = cwd,
    FLEMMA_BUFFER_PATH = surroundings.buffer_dir(bufnr),
  }, {
    __index = function(_, name)
      if name == "FLEMMA_PLAYGROUND" then
        return (surroundings.playground()) -- made only when a policy names it
      end
      if name == "FLEMMA_SANDBOX_LIB" then
        local so = surroundings.core_so()
        return so and so:match("^(.*)/[^/]+$")
      elseif name == "FLEMMA_SANDBOX_LUA" then
        return surroundings.lua_dir()
      end
      local nvim_dir = name:match("^NVIM_(%u+)$")
      if nvim_dir == "CONFIG" or nvim_dir == "DATA" or nvim_dir == "STATE" or nvim_dir == "CACHE" then
        return surroundings.stdpath(nvim_dir:lower())
      end
      return surroundings.getenv(name)
    end,
  })
  return vars, cwd
end

local warned = {}

--- An unknown variable is likely a typo: say so once per session, not on
--- every command. (A buffer without a file has no FLEMMA_BUFFER_PATH, which
--- is normal.)
---@param message string
local function warn_once(message)
  if not warned[message] then
    warned[message] = true
    surroundings.warn(message)
  end
end

--- Expands and resolves one list of configured paths.
---@param list string[]
---@param vars table
---@param cwd string|nil
---@param skipped flemma_sandbox.Skipped[] appended to
---@param refuse? fun(resolved: string): string|nil, string|nil a reason to leave a path out (and a short one)
---@param looked string[] appended to: the paths looked at (cache.put)
---@return string[]
local function resolve_list(list, vars, cwd, skipped, refuse, looked)
  local out = {}
  for _, entry in ipairs(list) do
    local expanded, err, unset = core.expand(entry, vars)
    local resolved
    if expanded then
      resolved, err = core.resolve(expanded, cwd)
      looked[#looked + 1] = core.absolute(expanded, cwd or "/")
      looked[#looked + 1] = resolved
    end
    if resolved and not core.exists(resolved) then
      resolved, err = nil, resolved .. " does not exist"
    end
    local refused, short
    if resolved and refuse then
      refused, short = refuse(resolved)
    end
    if refused then
      resolved, err = nil, refused
      -- one short line (:FlemmaSandbox status lists the whole reason)
      warn_once("flemma-sandbox: " .. entry .. " " .. (short or ("left out of rw_paths: " .. refused)))
    end
    if resolved then
      out[#out + 1] = resolved
    else
      skipped[#skipped + 1] = { path = entry, reason = err }
      if unset and unset ~= "FLEMMA_BUFFER_PATH" then
        warn_once(string.format("flemma-sandbox: skipping %s: %s", entry, err))
      end
    end
  end
  return out
end

--- Resolves a configured policy for a buffer, without the cache.
---@param policy flemma_sandbox.Policy
---@param bufnr integer|nil
---@param looked string[] appended to: paths whose folder matters, and ("/"-ended) paths that matter themselves
---@param others string[] chat_dirs.others(): the other chats of its sandbox's name
---@return flemma_sandbox.ResolvedPolicy resolved, flemma_sandbox.Skipped[] skipped
local function resolve_fresh(policy, bufnr, looked, others)
  local vars, cwd = M.variables(bufnr)
  local skipped = {}
  local refuse = policy.allow_home_rw ~= true and paths.opens_home or nil
  local listed = resolve_list(policy.rw_paths or {}, vars, cwd, skipped, refuse, looked)
  local expand = resolution.expander(vars, cwd, looked)
  local allow_sockets = {}
  for _, entry in ipairs(policy.allow_sockets or {}) do
    local real = expand(entry)
    allow_sockets[#allow_sockets + 1] = real
  end
  local private =
    private_mod.folders(protect.effective(policy.home_allow), expand, listed, allow_sockets, policy.home_writable)
  looked[#looked + 1] = private_mod.outputs_path()
  local bound = resolution.bound_roots(listed, private)
  local rw = core.dedupe(bound)
  -- projects before dedupe: a project under /var/tmp is swallowed by
  -- /var/tmp in rw, but keeps its protected files and its secret scan
  local projects = protect.project_roots(bound)
  local function out_of_view(real)
    return private_mod.hiding(real, private, rw) ~= nil
  end
  local hidden = protect.hidden(policy, expand, rw, skipped, out_of_view)
  local chat = chat_dirs.for_buffer(bufnr, policy.chat_name)
  local persist = chat_dirs.persist(chat, private, chat_dirs.overlay_paths(policy.home_overlay, expand, skipped, chat))
  resolution.hide_chats_folders(chat, hidden, out_of_view, looked)
  local chat_file, chat_real, chat_files = resolution.chat_files_of(bufnr, others)
  -- the ".git/" rule stands for every repository in the projects
  local git_rule = false
  local deny_write = protect.effective(policy.deny_write)
  for _, entry in ipairs(deny_write) do
    git_rule = git_rule or entry == ".git/"
  end
  local found = git_rule and repos.find(projects) or repos.NONE
  local protected, watched, links, unwritable =
    protect.protected(policy, expand, rw, chat_files, chat_real, projects, found)
  resolution.note_looked(looked, listed, projects, { protected, watched, links, hidden }, found, chat_file)
  for _, folder in ipairs(unwritable) do
    -- its own changes too (a chmod that lets a command make the path there)
    looked[#looked + 1] = folder == "/" and "/" or folder .. "/"
  end
  resolution.note_rule_paths(looked, deny_write, projects, chat_files)
  local deny, ro = {}, {}
  for _, h in ipairs(hidden) do
    deny[#deny + 1] = h.path
  end
  for _, p in ipairs(protected) do
    ro[#ro + 1] = p.path
  end
  local network_mode = resolution.network_mode_of(policy)
  local private_paths, inner_tmpfs = resolution.private_split(private, persist)
  return {
    rw_paths = rw,
    private_paths = private_paths,
    show_paths = private.shown,
    inner_tmpfs = inner_tmpfs,
    persist_paths = persist.paths,
    persist_sources = persist.sources,
    persist_subs = persist.subs,
    persist_copies = persist.copies,
    chat = chat,
    readonly_paths = private.readonly,
    private = private,
    deny_paths = core.dedupe(deny),
    ro_paths = ro,
    protected = protected,
    watched = watched,
    links = links,
    project_roots = projects,
    projects = git_rule and projects or {},
    repos_truncated = found.truncated,
    user_hooks = found.user_hooks,
    pins = protect.pins(protected, rw, watched),
    hidden = hidden,
    allow_sockets = allow_sockets,
    secret_scan = protect.secret_scan(policy, projects),
    network = network_mode ~= "off",
    network_mode = network_mode,
    allow_domains = policy.allow_domains or {},
    deny_domains = policy.deny_domains or {},
    allow_privileged = policy.allow_privileged == true,
    seccomp = policy.seccomp ~= false,
    limits = policy.limits or {},
  },
    skipped
end

--- Resolves a configured policy for a buffer: from the cache when nothing
--- it depends on changed (policy/cache.lua). The environment is taken
--- anew each time (the last copy while the environment is unchanged).
--- Callers may change the tables they get.
---@param policy flemma_sandbox.Policy
---@param bufnr integer|nil
---@return flemma_sandbox.ResolvedPolicy resolved, flemma_sandbox.Skipped[] skipped
--- The policy a config resolves: its policy, with the chat's sandbox name
--- when sandboxes.name sets one (part of the policy's cache key).
---@param cfg flemma_sandbox.Config
---@return flemma_sandbox.Policy
function M.of_config(cfg)
  local name = cfg.sandboxes and cfg.sandboxes.name
  if not name then
    return cfg.policy
  end
  return util.with(cfg.policy, { chat_name = name })
end

function M.resolve(policy, bufnr)
  local key = cache.key(policy, bufnr)
  -- the other chats of a shared name are part of the key, not a watched
  -- path: a chat noting itself (chat_dirs.prepare) changes nothing here
  local others = chat_dirs.others(bufnr, policy.chat_name)
  if #others > 0 then
    key = key .. "\0chats\0" .. table.concat(others, "\0")
  end
  local entry = cache.get(key)
  if not entry then
    local looked = {}
    local resolved, skipped = resolve_fresh(policy, bufnr, looked, others)
    -- a project's top is looked at for the repositories a new folder may
    -- hold: a plain file made or removed there leaves this resolution as it is
    cache.put(key, looked, resolved, skipped, resolved.project_roots)
    entry = cache.get(key) or { resolved = resolved, skipped = skipped }
  end
  local out, skipped = {}, {}
  for k, v in pairs(entry.resolved) do
    out[k] = v
  end
  for i, v in ipairs(entry.skipped) do
    skipped[i] = v
  end
  -- the environment as it is now; the same as last time if nothing in it changed
  local env_stamp = surroundings.environ_stamp()
  local env = entry.env
  if not env_stamp or entry.env_stamp ~= env_stamp then
    env = M.environment(policy.env_allow)
    entry.env, entry.env_stamp = env, env_stamp
  end
  out.env, out.env_allow = {}, policy.env_allow
  for k, v in pairs(env) do
    out.env[k] = v
  end
  return out, skipped
end

return M
