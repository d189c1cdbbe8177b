--- Turns a configured policy into the resolved policy a backend receives:
--- variables expanded, paths absolute and symlink-resolved, missing ones
--- skipped with a reason, the rest deduplicated.
local cache = require("flemma_sandbox.policy.cache")
local core = require("flemma_sandbox.core")
local host = require("flemma_sandbox.host")
local private_mod = require("flemma_sandbox.policy.private")
local protect = require("flemma_sandbox.policy.protect")
local repos = require("flemma_sandbox.policy.repos")
local util = require("flemma_sandbox.util")

local M = {}

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
---@field pins string[] folders above protected paths, bound onto themselves so they cannot be renamed
---@field hidden flemma_sandbox.Rule[] why each hidden path is hidden
---@field allow_sockets string[] allow_sockets, resolved: host sockets left reachable
---@field secret_scan flemma_sandbox.SecretScan what the helper scans for secret files before the command
---@field network boolean whether the command has any way out
---@field network_mode "off"|"allowlist"|"ask"|"host" how: none, the proxy (allow_domains), the proxy
--- that asks about other names, the host's network
---@field ask_socket string|nil set by wrap_command in "ask" mode: where the proxy asks (questions/network.lua)
---@field allow_domains string[]
---@field deny_domains string[]
---@field seccomp boolean
---@field limits flemma_sandbox.Limits
---@field allow_privileged boolean
---@field env table<string, string> the sandboxed process's whole environment
---@field time_limit_ms integer|nil set by wrap_command: tools.max_timeout_ms, enforced by the host-side helper

---@class flemma_sandbox.Skipped
---@field path string the entry as configured
---@field reason string

--- The named variables for one buffer; anything else comes from the environment.
---@param bufnr integer|nil
---@return table vars, string|nil cwd
function M.variables(bufnr)
  local cwd = host.cwd()
  local vars = setmetatable({
    CWD = cwd,
    FLEMMA_BUFFER_PATH = host.buffer_dir(bufnr),
  }, {
    __index = function(_, name)
      if name == "FLEMMA_PLAYGROUND" then
        return (host.playground()) -- made only when a policy names it
      end
      if name == "FLEMMA_SANDBOX_LIB" then
        local so = host.core_so()
        return so and so:match("^(.*)/[^/]+$")
      elseif name == "FLEMMA_SANDBOX_LUA" then
        return host.lua_dir()
      end
      local nvim_dir = name:match("^NVIM_(%u+)$")
      if nvim_dir == "CONFIG" or nvim_dir == "DATA" or nvim_dir == "STATE" or nvim_dir == "CACHE" then
        return host.stdpath(nvim_dir:lower())
      end
      return host.getenv(name)
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
    host.warn(message)
  end
end

--- Why a writable path would open the home folder, or nil: it is $HOME or
--- a folder above it (`/`, `/home`). Neovim started in ~ makes $CWD the
--- home folder, where dozens of files run code later (shell start-up,
--- ~/bin on PATH, git and editor config, autostart entries).
---@param resolved string
---@return string|nil reason
function M.opens_home(resolved)
  local home = host.getenv("HOME")
  home = home and home ~= "" and core.resolve(home, "/") or nil
  if not home or not core.is_within(home, resolved) then
    return nil
  end
  local what = resolved == home and "is the home folder" or "holds the home folder"
  return resolved .. " " .. what .. ": not writable unless policy.allow_home_rw = true"
end

--- Expands and resolves one list of configured paths.
---@param list string[]
---@param vars table
---@param cwd string|nil
---@param skipped flemma_sandbox.Skipped[] appended to
---@param refuse? fun(resolved: string): string|nil a reason to leave a path out
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
    local refused = resolved and refuse and refuse(resolved)
    if refused then
      resolved, err = nil, refused
      warn_once(string.format("flemma-sandbox: %s left out of rw_paths: %s", entry, refused))
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

--- Passed into every sandbox unless removed; "PREFIX*" matches a prefix.
M.DEFAULT_ENV = {
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "LANG",
  "LC_*",
  "TERM",
  "COLORTERM",
  "TMPDIR",
  "SHELL",
  "EDITOR",
  "TZ",
}

--- Names that look like credentials: a pattern ("PREFIX*") never lets
--- them through; only naming them exactly in env_allow does.
local CREDENTIAL = {
  "KEY$",
  "TOKEN$",
  "SECRET",
  "PASSWORD",
  "PASSWD",
  "CREDENTIAL",
  "^AWS_",
  "AUTH",
  "COOKIE",
  "_PAT$",
  "_DSN$",
  "_PASS$",
  "_PWD$",
}

--- Whether a variable looks like a credential: by its name, or by a value
--- that is a URL with a password in it (postgres://user:pass@host).
---@param name string
---@param value? string
---@return boolean
function M.looks_like_credential(name, value)
  local upper = name:upper()
  for _, pattern in ipairs(CREDENTIAL) do
    if upper:find(pattern) then
      return true
    end
  end
  return type(value) == "string" and value:find("^%a[%w+.-]*://[^/@%s]*:[^/@%s]*@") ~= nil
end

--- The environment a sandboxed command sees: the default names and
--- env_allow, taken from the host, and nothing else.
---@param extra string[]|nil env_allow
---@return table<string, string>
function M.environment(extra)
  local env, all = {}, nil
  local names = {}
  for _, list in ipairs({ M.DEFAULT_ENV, extra or {} }) do
    for _, n in ipairs(list) do
      names[#names + 1] = n
    end
  end
  for _, entry in ipairs(names) do
    local prefix = entry:match("^(.*)%*$")
    if not prefix then
      env[entry] = host.getenv(entry)
    else
      all = all or host.environ() or {}
      for name, value in pairs(all) do
        if name:sub(1, #prefix) == prefix and not M.looks_like_credential(name, value) then
          env[name] = value
        end
      end
    end
  end
  return env
end

--- Resolves a configured policy for a buffer, without the cache.
---@param policy flemma_sandbox.Policy
---@param bufnr integer|nil
---@param looked string[] appended to: paths whose folder matters, and ("/"-ended) paths that matter themselves
---@return flemma_sandbox.ResolvedPolicy resolved, flemma_sandbox.Skipped[] skipped
local function resolve_fresh(policy, bufnr, looked)
  local vars, cwd = M.variables(bufnr)
  local skipped = {}
  local refuse = policy.allow_home_rw ~= true and M.opens_home or nil
  local listed = resolve_list(policy.rw_paths or {}, vars, cwd, skipped, refuse, looked)
  local function expand(entry)
    local expanded, err = core.expand(entry, vars)
    if not expanded then
      return nil, err
    end
    local resolved, rerr = core.resolve(expanded, cwd)
    local raw = core.absolute(expanded, cwd)
    looked[#looked + 1] = raw
    looked[#looked + 1] = resolved
    -- the path as written too: a protected symlink is protected as a link
    return resolved, rerr, raw
  end
  local allow_sockets = {}
  for _, entry in ipairs(policy.allow_sockets or {}) do
    local real = expand(entry)
    allow_sockets[#allow_sockets + 1] = real
  end
  local private =
    private_mod.folders(protect.effective(policy.home_allow), expand, listed, allow_sockets, policy.home_writable)
  -- /tmp and $TMPDIR as writable roots are the private ones, not the
  -- host's; what lies inside them (a project under /tmp) is bound in
  local bound = {}
  for _, root in ipairs(listed) do
    if not util.contains(private.writable, root) then
      bound[#bound + 1] = root
    end
  end
  local rw = core.dedupe(bound)
  -- projects before dedupe: a project under /var/tmp is swallowed by
  -- /var/tmp in rw, but keeps its protected files and its secret scan
  local projects = protect.project_roots(bound)
  local function out_of_view(real)
    return private_mod.hiding(real, private, rw) ~= nil
  end
  local hidden = protect.hidden(policy, expand, rw, skipped, out_of_view)
  local chat_file = host.buffer_file(bufnr)
  -- the ".git/" rule stands for every repository in the projects
  local git_rule = false
  for _, entry in ipairs(protect.effective(policy.deny_write)) do
    git_rule = git_rule or entry == ".git/"
  end
  local found = git_rule and repos.find(projects) or repos.NONE
  local protected, watched, links =
    protect.protected(policy, expand, rw, chat_file and core.resolve(chat_file, "/"), projects, found)
  -- what a change of would change this resolution (cache.put)
  -- a root itself, not what is in it: the entries that matter (watched
  -- names, rules, ".git") are looked at one by one; but what comes and
  -- goes at a project's top, since a new folder there may hold a repository
  for _, root in ipairs(listed) do
    looked[#looked + 1] = root
  end
  for _, root in ipairs(projects) do
    looked[#looked + 1] = root .. "/"
  end
  for _, list in ipairs({ protected, watched, links, hidden }) do
    for _, r in ipairs(list) do
      looked[#looked + 1] = r.path
    end
  end
  -- what git reads hooks and links from, not the whole git folder, which
  -- changes with every git status (index.lock)
  for _, dot_git in ipairs(found.dot_gits) do
    looked[#looked + 1] = dot_git
    if core.file_type(dot_git) == "file" then
      looked[#looked + 1] = dot_git .. "/" -- the gitdir it names
    end
  end
  for _, r in ipairs(found.protect) do
    looked[#looked + 1] = r.path
    for _, name in ipairs({ "config", "config.worktree", "commondir" }) do
      looked[#looked + 1] = r.path .. "/" .. name .. "/"
    end
  end
  for _, file in ipairs(found.configs or {}) do
    looked[#looked + 1] = file .. "/" -- the file itself: the home folder changes often
  end
  looked[#looked + 1] = chat_file
  local deny, ro = {}, {}
  for _, h in ipairs(hidden) do
    deny[#deny + 1] = h.path
  end
  for _, p in ipairs(protected) do
    ro[#ro + 1] = p.path
  end
  -- true and "allowlist": out through the proxy; "ask": the same proxy,
  -- which asks the user about names no entry lists
  local configured = policy.network
  local network_mode = configured == false and "off"
    or (configured == "host" or configured == "ask") and configured
    or "allowlist"
  -- the home_writable folders are made inside the private home, not
  -- over a host folder (which the host need not have)
  local private_paths = {}
  for _, f in ipairs(private.folders) do
    if not util.contains(private.inner, f.path) then
      private_paths[#private_paths + 1] = f.path
    end
  end
  return {
    rw_paths = rw,
    private_paths = private_paths,
    show_paths = private.shown,
    inner_tmpfs = private.inner,
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
    pins = protect.pins(protected, rw),
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
function M.resolve(policy, bufnr)
  local key = cache.key(policy, bufnr)
  local entry = cache.get(key)
  if not entry then
    local looked = {}
    local resolved, skipped = resolve_fresh(policy, bufnr, looked)
    cache.put(key, looked, resolved, skipped)
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
  local env_stamp = host.environ_stamp()
  local env = entry.env
  if not env_stamp or entry.env_stamp ~= env_stamp then
    env = M.environment(policy.env_allow)
    entry.env, entry.env_stamp = env, env_stamp
  end
  out.env = {}
  for k, v in pairs(env) do
    out.env[k] = v
  end
  return out, skipped
end

---@param real string
---@param rules flemma_sandbox.Rule[]|nil
---@return flemma_sandbox.Rule|nil
local function rule_holding(real, rules)
  for _, r in ipairs(rules or {}) do
    if core.is_within(real, r.path) then
      return r
    end
  end
end

--- The hidden path (and its rule) that holds a real path, if any.
---@param real string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return flemma_sandbox.Rule|nil
function M.hidden_rule(real, resolved)
  return rule_holding(real, resolved.hidden)
    or protect.secret_rule(real, resolved.secret_scan)
    or private_mod.hiding(real, resolved.private, resolved.rw_paths)
end

--- The protected or watched path (and its rule) that holds a real path, if
--- any; a path through a ".git" in a project is git's, existing or not.
---@param real string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return flemma_sandbox.Rule|nil
function M.protected_rule(real, resolved)
  local rule = rule_holding(real, resolved.protected) or rule_holding(real, resolved.watched)
  if not rule and repos.in_git_dir(real, resolved.projects or {}) then
    rule = { path = real, rule = "a git folder (repository writes go through the git tool)" }
  end
  return rule
end

--- The path the kernel would reach for `path`: relative to the working
--- directory, a leading `~` read as $HOME (nothing else is expanded), every
--- symlink followed.
---@param path string
---@param cwd? string default: the host's working directory
---@return string|nil real, string|nil err
function M.real_path(path, cwd)
  if path == "~" or path:sub(1, 2) == "~/" then
    local home = host.getenv("HOME")
    if not home or home == "" then
      return nil, "HOME is not set, cannot place " .. path
    end
    path = home .. path:sub(2)
  end
  return core.resolve(path, cwd or host.cwd())
end

--- The writable root that holds a real path (the longest), if any.
---@param real string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return string|nil
function M.root_of(real, resolved)
  local best
  for _, root in ipairs(resolved.rw_paths) do
    if core.is_within(real, root) and (not best or #root > #best) then
      best = root
    end
  end
  return best
end

--- Whether `path` (relative to the cwd, `~` is $HOME) is visible in the
--- sandbox once every symlink on it is followed.
---@param path string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return boolean readable, string reason
function M.is_readable(path, resolved)
  local real, err = M.real_path(path)
  if not real then
    return false, err
  end
  local rule = M.hidden_rule(real, resolved)
  if rule then
    return false, real .. " is hidden (" .. rule.rule .. ")"
  end
  return true, real .. " is visible"
end

--- Whether `path` (relative to the cwd; a leading `~` is $HOME, nothing
--- else is expanded) lies in a writable root once every symlink on it is
--- followed.
---@param path string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return boolean writable, string reason
function M.is_writable(path, resolved)
  local real, err = M.real_path(path)
  if not real then
    return false, err
  end
  local root = M.root_of(real, resolved)
  local private = not root and private_mod.hiding(real, resolved.private, resolved.rw_paths)
  if private then
    return false, real .. " is not in rw_paths (" .. (private.write_rule or private.rule) .. ")"
  elseif not root then
    return false, real .. " is not in rw_paths"
  end
  local rule = M.protected_rule(real, resolved) or M.hidden_rule(real, resolved)
  if rule then
    return false, real .. " is protected (" .. rule.rule .. ")"
  end
  return true, real .. " is inside " .. root
end

return M
