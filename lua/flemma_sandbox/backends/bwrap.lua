--- The bubblewrap backend: checks that bwrap can start a sandbox, and
--- builds the argv through the C core.
local core = require("flemma_sandbox.core")
local host = require("flemma_sandbox.host")
local protect = require("flemma_sandbox.policy.protect")

local M = {}

--- Paths of bwrap that started a test sandbox (only successes are kept,
--- so a failure is checked again next time).
---@type table<string, boolean>
local started = {}

--- Single-quotes a word for /bin/sh.
local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- The words of the test sandbox: the options every sandbox uses.
local TEST_WORDS = { "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent" }

--- Runs `bwrap ... -- true` with the options every sandbox uses; returns
--- nil when it worked, else what bwrap said.
---@param found string the bwrap program
---@return string|nil err
local function try_start(found)
  local words = { quote(found), table.concat(TEST_WORDS, " "), "-- true" }
  -- LuaJIT's popen close() does not report the exit status: print it
  local f = io.popen(table.concat(words, " ") .. " 2>&1 </dev/null; echo __rc=$?")
  if not f then
    return "cannot run " .. found
  end
  local out = f:read("*a") or ""
  f:close()
  local text, code = out:match("^(.-)%s*__rc=(%d+)%s*$")
  if code == "0" then
    return nil
  end
  return (text and text ~= "") and text or ("exit status " .. tostring(code))
end

--- Linux, bwrap on PATH, and a real test sandbox that starts (once per
--- bwrap path; a failure is not remembered, so it is tried again). With
--- opts.start = false the test sandbox is left for later (Flemma asks every
--- backend in its setup(), at Neovim's start-up): check_in_background()
--- or the next call without it starts it.
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param opts? { start: boolean|nil }
---@return boolean ok, string|nil err
function M.available(backend_config, opts)
  if not host.is_linux() then
    return false, "bubblewrap needs Linux (user namespaces)"
  end
  local path = backend_config.path or "bwrap"
  local found, err = core.which(path, host.getenv("PATH"))
  if not found then
    return false, "bubblewrap not found (" .. err .. "); install the bubblewrap package"
  end
  if not started[found] and not (opts and opts.start == false) then
    local failure = try_start(found)
    if failure then
      return false, "bubblewrap cannot start a sandbox here: " .. failure
    end
    started[found] = true
  end
  return true, nil
end

---@type table<string, boolean> bwrap paths whose test sandbox is running
local checking = {}

--- Starts the test sandbox in the background (off the editor's thread),
--- unless this bwrap already passed; done(ok, err) runs in the main loop
--- when it ends. For the first chat buffer, so the first tool call finds
--- the backend checked.
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param done fun(ok: boolean, err: string|nil)
function M.check_in_background(backend_config, done)
  local ok, err = M.available(backend_config, { start = false })
  local found = ok and core.which(backend_config.path or "bwrap", host.getenv("PATH"))
  if not found or started[found] then
    return done(ok, err)
  end
  if checking[found] then
    return
  end
  local uv = vim.uv or vim.loop
  -- bwrap says why on stderr (one pipe may not be both stdout and stderr)
  local out = uv.new_pipe(false)
  local chunks = {}
  checking[found] = true
  local args = vim.list_extend(vim.deepcopy(TEST_WORDS), { "--", "true" })
  local handle
  handle = uv.spawn(found, { args = args, stdio = { nil, nil, out } }, function(code)
    handle:close()
    vim.schedule(function()
      checking[found] = nil
      if code == 0 then
        started[found] = true
        return done(true, nil)
      end
      local text = table.concat(chunks):gsub("%s+$", "")
      done(false, "bubblewrap cannot start a sandbox here: " .. (text ~= "" and text or ("exit status " .. code)))
    end)
  end)
  if not handle then
    checking[found] = nil
    out:close()
    return done(false, "bubblewrap cannot start a sandbox here: cannot run " .. found)
  end
  out:read_start(function(_, data)
    if data then
      chunks[#chunks + 1] = data
    else
      out:close()
    end
  end)
end

---@type table<string, string>
local versions = {}

--- "bubblewrap 0.8.0" as the program prints it, cached per path.
---@param backend_config flemma_sandbox.BwrapConfig|table
---@return string|nil version
function M.version(backend_config)
  local path = backend_config.path or "bwrap"
  if versions[path] == nil then
    local found = core.which(path, host.getenv("PATH"))
    local text = ""
    if found then
      local f = io.popen(quote(found) .. " --version 2>/dev/null")
      text = f and f:read("*l") or ""
      if f then
        f:close()
      end
    end
    versions[path] = text or ""
  end
  return versions[path] ~= "" and versions[path] or nil
end

---@type table<string, table<string, boolean>>
local features = {}

--- Options this bwrap knows, read once per path from `bwrap --help`, so
--- newer ones (--disable-userns arrived in 0.8) are used only where present.
---@param backend_config flemma_sandbox.BwrapConfig|table
---@return table<string, boolean>
function M.features(backend_config)
  local path = backend_config.path or "bwrap"
  if not features[path] then
    local found = core.which(path, host.getenv("PATH"))
    local known = {}
    local f = found and io.popen(quote(found) .. " --help 2>&1")
    if f then
      for option in (f:read("*a") or ""):gmatch("%-%-([%w-]+)") do
        known[option] = true
      end
      f:close()
    end
    features[path] = known
  end
  return features[path]
end

--- bwrap stops at this many arguments (its MAX_ARGS), --args included.
M.MAX_ARGS = 9000
--- Above this many options they go through a file and "--args FD":
--- one argument list is limited by the kernel (ARG_MAX, 128 KiB per word).
M.ARGS_FILE_AT = 2000
M.ARGS_FILE_BYTES = 100000

local core_so = host.core_so()

---@type string|nil
local found_helper = nil

--- flemma-sandbox-exec, built next to core.so (looked for until found).
---@return string|nil path, string|nil err
function M.helper()
  if found_helper then
    return found_helper
  end
  local path = core_so and core_so:gsub("core%.so$", "flemma-sandbox-exec")
  if not path or not core.exists(path) then
    return nil, "flemma-sandbox-exec was not found next to core.so (" .. tostring(core_so) .. "); run make"
  end
  found_helper = path
  return path
end

---@type table<string, { seccomp: string|nil, landlock: integer }>
local helper_info = {}

--- What the helper can do here, from `flemma-sandbox-exec --info`: the
--- architecture its seccomp filter covers, and the kernel's Landlock ABI.
---@return { seccomp: string|nil, landlock: integer }
function M.helper_info()
  local helper = M.helper()
  if not helper then
    return { landlock = 0 }
  end
  if not helper_info[helper] then
    local f = io.popen(quote(helper) .. " --info 2>/dev/null")
    local text = f and f:read("*a") or ""
    if f then
      f:close()
    end
    local arch = text:match("seccomp (%S+)")
    helper_info[helper] = {
      seccomp = arch ~= "unsupported" and arch or nil,
      landlock = tonumber(text:match("landlock (%d+)")) or 0,
    }
  end
  return helper_info[helper]
end

--- The architecture the helper's seccomp filter covers, or nil.
---@return string|nil
function M.seccomp_arch()
  return M.helper_info().seccomp
end

--- Landlock can scope abstract unix sockets and signals (ABI 6, Linux 6.12).
M.LANDLOCK_SCOPE_ABI = 6

local LIMIT_ORDER = { "processes", "memory_mb", "cpu_seconds", "file_size_mb", "open_files" }

--- The allowlist network mode (csrc/proxy_bridge.h, csrc/host_proxy.h):
--- where the run's proxy socket is bound inside the sandbox (/dev is a
--- fresh one there, always) and the loopback port the bridge listens on,
--- which HTTP_PROXY and the others name.
M.PROXY_INSIDE = "/dev/flemma-sandbox-proxy.sock"
M.PROXY_PORT = 39128

--- A policy's network mode; a table made without one (by hand, by an
--- older caller) keeps what its `network` boolean meant before: on is the
--- host's network.
---@param policy table
---@return "off"|"allowlist"|"ask"|"host"
function M.network_mode(policy)
  return policy.network_mode or (policy.network and "host" or "off")
end

--- Whether the command goes out through the run's proxy ("ask" is the
--- allowlist whose proxy asks about other names).
---@param policy table
---@return boolean
function M.uses_proxy(policy)
  local mode = M.network_mode(policy)
  return mode == "allowlist" or mode == "ask"
end

--- The helper's part of the inner command: the network bridge, seccomp,
--- Landlock scope, limits, then "--".
---@param policy flemma_sandbox.ResolvedPolicy
---@param helper string
---@param inner_cmd string[]
---@return string[]
local function helper_inner(policy, helper, inner_cmd)
  local cmd = { helper }
  if M.uses_proxy(policy) then
    cmd[#cmd + 1] = "--proxy-bridge"
    cmd[#cmd + 1] = M.PROXY_INSIDE
    cmd[#cmd + 1] = tostring(M.PROXY_PORT)
  end
  if policy.seccomp and M.seccomp_arch() then
    cmd[#cmd + 1] = "--seccomp"
  end
  if M.helper_info().landlock >= M.LANDLOCK_SCOPE_ABI then
    cmd[#cmd + 1] = "--scope" -- the host's abstract sockets, even with network on
  end
  for _, name in ipairs(LIMIT_ORDER) do
    local value = (policy.limits or {})[name]
    if value then
      cmd[#cmd + 1] = "--limit"
      cmd[#cmd + 1] = string.format("%s=%d", name, value)
    end
  end
  cmd[#cmd + 1] = "--"
  for _, word in ipairs(inner_cmd) do
    cmd[#cmd + 1] = word
  end
  return cmd
end

local args_files = 0

--- Writes words[from..to], each ended by a NUL byte, to file.
---@return boolean|nil ok, string|nil err
local function write_nul_separated(file, words, from, to)
  local f, err = io.open(file, "wb")
  if not f then
    return nil, "cannot write " .. file .. ": " .. tostring(err)
  end
  f:write(table.concat(words, "\0", from, to), "\0")
  f:close()
  return true
end

--- Moves bwrap's options (between the program and its "--" at `dash`)
--- into a file for "--args FD"; returns the file and the shortened argv.
---@return string|nil file, string[]|nil argv, string|nil err
local function to_args_file(argv, dash)
  local dir = host.state_dir("args")
  args_files = args_files + 1
  -- without a state folder, a private temp file (mkstemp) does as well
  local file = dir and string.format("%s/%d-%d", dir, core.getpid(), args_files) or os.tmpname()
  local ok, err = write_nul_separated(file, argv, 2, dash - 1)
  if not ok then
    return nil, nil, err
  end
  local short = { argv[1] }
  for i = dash, #argv do
    short[#short + 1] = argv[i]
  end
  return file, short
end

--- Whether a failed run is bwrap giving up before the command started
--- because a path it was to mount over vanished after the policy was read
--- (a host socket closing, say): then running it again is safe.
---@param code integer exit status
---@param stdout string
---@param stderr string
---@return boolean
function M.lost_race(code, stdout, stderr)
  return code == 1 and stdout == "" and stderr:match("^bwrap: Can't [^\n]*\n?$") ~= nil
end

local check_files = 0

--- The policy fields the check file is made of: the words are kept while
--- these tables are the same ones (a cached policy's).
local CHECK_FIELDS = {
  "watched",
  "links",
  "projects",
  "ro_paths",
  "deny_paths",
  "allow_privileged",
  "project_roots",
  "allow_sockets",
  "private_paths",
  "rw_paths",
  "show_paths",
  "secret_scan",
}

---@type { fields: any[], words: string[], bytes: integer }|nil
local last_words = nil

--- The check file's words for a policy, after its first two ("mask_at" and
--- its value, which differ per command), and their length in bytes.
---@param policy flemma_sandbox.ResolvedPolicy
---@param quarantine string
---@param index string where the helper's scans keep their index (csrc/scan.h)
---@return string[] words, integer bytes
local function policy_words(policy, quarantine, index)
  local fields = { quarantine .. "\0" .. index }
  for i, name in ipairs(CHECK_FIELDS) do
    fields[i + 1] = policy[name]
  end
  if last_words and #last_words.fields == #fields then
    local same = true
    for i = 1, #fields do
      same = same and last_words.fields[i] == fields[i]
    end
    if same then
      return last_words.words, last_words.bytes
    end
  end
  local words = { "quarantine", quarantine, "index", index }
  local function add(key, list)
    for _, v in ipairs(list or {}) do
      words[#words + 1] = key
      words[#words + 1] = type(v) == "table" and v.path or v
    end
  end
  add("watch", policy.watched)
  for _, l in ipairs(policy.links or {}) do
    if l.target then
      add("link", { l.path })
      add("target", { l.target })
    end
  end
  add("repos", policy.projects)
  add("ro", policy.ro_paths)
  add("hidden", policy.deny_paths)
  -- host sockets: reachable in the projects and allow_sockets, unseen in
  -- a private folder unless bound into it
  add("sockets", { "1" })
  add("privileged", { policy.allow_privileged and "1" or "0" })
  add("open", policy.project_roots)
  add("open", policy.allow_sockets)
  add("private", policy.private_paths)
  -- writable roots on the host's disk (not the private /tmp and what is
  -- part of it, a tmpfs): the helper stops the command when one runs
  -- short of space
  local in_tmpfs = {}
  for _, path in ipairs(policy.private and policy.private.writable or {}) do
    in_tmpfs[path] = true
  end
  for _, path in ipairs(policy.private_paths or {}) do
    in_tmpfs[path] = true
  end
  for _, path in ipairs(policy.rw_paths or {}) do
    if not in_tmpfs[path] then
      add("disk", { path })
    end
  end
  add("visible", policy.rw_paths)
  add("visible", policy.show_paths)
  local scan = policy.secret_scan
  if scan and #scan.roots > 0 then
    add("secrets", scan.roots)
    add("pattern", scan.patterns)
    add("skip", protect.SCAN_SKIP)
    add("depth", { tostring(scan.depth) })
  end
  local bytes = 0
  for _, w in ipairs(words) do
    bytes = bytes + #w + 1
  end
  last_words = { fields = fields, words = words, bytes = bytes }
  return words, bytes
end

--- Up to this many bytes of check words go in the helper's argv
--- (--check-words); more are written to the check file by Neovim. Linux
--- takes up to 2 MB of arguments, and each word on its own line of ps.
M.CHECK_WORDS_BYTES = 64 * 1024

--- The name of a run's files in our state folder, without extension: its
--- check file (.check) and its proxy's socket (.sock).
---@return string|nil base, string|nil err
function M.run_base()
  local runs, err = host.state_dir("runs")
  if not runs then
    return nil, "flemma-sandbox: no state folder for the check after the run: " .. tostring(err)
  end
  check_files = check_files + 1
  -- the time too: the quarantine names its runs, and pids come back
  return string.format("%s/%d-%d-%d", runs, core.getpid(), os.time(), check_files)
end

--- What the helper does on the host around the run. Right before it
--- (csrc/before_run.h, csrc/secret_masks.h): the ".git" entries and
--- watched paths as they are then, the host's sockets, the secret scan;
--- its masks go in front of bwrap's "--" at mask_at. After it
--- (csrc/after_run.h): the missing protected paths, the projects and the
--- ".git" they hold. The check file lies in our state folder, which the
--- sandbox cannot write; the helper writes it from the words in its argv,
--- or, for a large policy, Neovim writes it here.
---@param policy flemma_sandbox.ResolvedPolicy
---@param mask_at integer position of bwrap's "--" in the command the helper runs (bwrap is 0)
---@param base? string the run's name (M.run_base)
---@return string[]|nil options the helper's options for it, string|nil err
function M.check_options(policy, mask_at, base)
  -- never a temp folder: the sandbox may write there, and the helper trusts the file
  local runs, rerr = host.state_dir("runs")
  local quarantine, qerr = host.state_dir("quarantine")
  local index, ierr = host.state_dir("index")
  if not runs or not quarantine or not index then
    return nil, "flemma-sandbox: no state folder for the check after the run: " .. tostring(rerr or qerr or ierr)
  end
  local file = (base or M.run_base()) .. ".check"
  local words, bytes = policy_words(policy, quarantine, index)
  local at = tostring(mask_at)
  if bytes <= M.CHECK_WORDS_BYTES then
    local options = { "--check-words", file, tostring(#words + 2), "mask_at", at }
    for _, w in ipairs(words) do
      options[#options + 1] = w
    end
    return options
  end
  local f, err = io.open(file, "wb")
  if not f then
    return nil, "cannot write " .. file .. ": " .. tostring(err)
  end
  f:write("mask_at\0", at, "\0", table.concat(words, "\0"), "\0")
  f:close()
  return { "--check-file", file }
end

--- The check file named in an argv M.wrap made, if any.
---@param argv string[]
---@return string|nil
function M.check_file_of(argv)
  if not (argv[1] or ""):match("/flemma%-sandbox%-exec$") then
    return nil
  end
  for i = 2, #argv do
    if argv[i] == "--" then
      return nil
    elseif argv[i] == "--check-file" or argv[i] == "--check-words" then
      return argv[i + 1]
    end
  end
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
  elseif M.features(backend_config or {})["size"] then
    ram = string.format("private /tmp, /run, home and /dev/shm at most %d MiB each in RAM", limits.tmpfs_mb)
  else
    ram = "private /tmp, /run, home and /dev/shm not capped: this bwrap has no --size"
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

---@param policy flemma_sandbox.ResolvedPolicy
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param inner_cmd string[]
---@return string[]|nil argv, string|nil err
function M.wrap(policy, backend_config, inner_cmd)
  local helper, herr = M.helper()
  if not helper then
    return nil, herr
  end
  if not policy.allow_privileged and M.features(backend_config)["disable-userns"] then
    -- no nested user namespaces: they reopen kernel attack surface
    local extra = { "--disable-userns" }
    for _, arg in ipairs(backend_config.extra_args or {}) do
      extra[#extra + 1] = arg
    end
    backend_config = setmetatable({ extra_args = extra }, { __index = backend_config })
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
  local base, berr = M.run_base()
  if not base then
    return nil, berr
  end
  local proxy = {}
  if M.uses_proxy(policy) then
    local socket = base .. ".sock"
    if #socket >= 108 then
      return nil,
        "flemma-sandbox: the network proxy's socket path is too long for a unix socket ("
          .. socket
          .. '): set XDG_STATE_HOME to a shorter folder, or policy.network = "host"'
    end
    local url = "http://127.0.0.1:" .. M.PROXY_PORT
    local extra = { "--ro-bind", socket, M.PROXY_INSIDE }
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
    if M.network_mode(policy) == "ask" and policy.ask_socket then
      add(proxy, "--ask", policy.ask_socket)
    end
  end
  -- bwrap shares the host's network only in "host" mode; RAM-backed
  -- folders are capped where bwrap has --size (Debian 12's 0.8 has it)
  local tmpfs_mb = M.features(backend_config)["size"] and (policy.limits or {}).tmpfs_mb or nil
  mounts = setmetatable({
    network = M.network_mode(policy) == "host",
    tmpfs_size = tmpfs_mb and tmpfs_mb * 1024 * 1024 or nil,
  }, { __index = mounts })
  local inner = helper_inner(policy, helper, inner_cmd)
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
  if #argv - 1 > M.MAX_ARGS then
    return nil,
      string.format(
        "policy too large: %d bwrap arguments (bwrap accepts at most %d); hidden paths: %d, protected: %d",
        #argv - 1,
        M.MAX_ARGS,
        #(policy.deny_paths or {}),
        #(policy.ro_paths or {})
      )
  end
  -- bwrap's own process is visible inside the sandbox (/proc/1/environ):
  -- it must not carry Neovim's environment
  local front = policy.env and { "--clearenv" } or {}
  if options > M.ARGS_FILE_AT or bytes > M.ARGS_FILE_BYTES then
    local file, short, ferr = to_args_file(argv, dash)
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
    -- (csrc/userns_caps.h); allow_privileged has none of its own
    for _, name in ipairs({ "inotify_instances", "inotify_watches" }) do
      local value = (policy.limits or {})[name]
      if value then
        front[#front + 1] = "--" .. name:gsub("_", "-")
        front[#front + 1] = string.format("%d", value)
      end
    end
  end
  -- always: the host's sockets are covered as they are right before the run
  local check, cerr = M.check_options(policy, dash - 1, base)
  if not check then
    return nil, cerr
  end
  local out = { helper }
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
  return out, nil
end

return M
