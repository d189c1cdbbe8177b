--- The client of the programs of csrc/exec, one per role (ARCHITECTURE.md):
--- flemma-sandbox-host in front of bwrap, flemma-sandbox-attach for a call
--- in a live sandbox, flemma-sandbox-init inside the sandbox,
--- flemma-sandbox-tool for the rest: where they are, what they can do
--- here, and their protocol: the inner command (network bridge, seccomp,
--- Landlock, limits), the args file, the check file and its words, the
--- run's name, and bwrap's wording when a start lost a race.
local background = require("flemma_sandbox.backends.background")
local check_plan = require("flemma_sandbox.backends.check_plan")
local core = require("flemma_sandbox.core")
local process = require("flemma_sandbox.base.process")
local surroundings = require("flemma_sandbox.base.surroundings")
local programs = require("flemma_sandbox.backends.programs")

local M = {}

--- bwrap stops at this many arguments (its MAX_ARGS), --args included.
M.MAX_ARGS = 9000
--- Above this many options they go through a file and "--args FD":
--- one argument list is limited by the kernel (ARG_MAX, 128 KiB per word).
M.ARGS_FILE_AT = 2000
M.ARGS_FILE_BYTES = 100000

--- The program of a role (backends/programs.lua).
M.program = programs.path
M.programs = programs.all

--- The tool program, under its old name for the callers that pass it to
--- backends/live.lua (--live-stop, --live-info) and for --check-after.
---@return string|nil path, string|nil err
function M.helper()
  return programs.path("tool")
end

---@type table<string, { seccomp: string|nil, landlock: integer }>
local helper_info = {}

--- What `flemma-sandbox-tool --info` says.
---@param text string
---@return { seccomp: string|nil, landlock: integer }
local function info_in(text)
  local arch = text:match("seccomp (%S+)")
  return {
    seccomp = arch ~= "unsupported" and arch or nil,
    landlock = tonumber(text:match("landlock (%d+)")) or 0,
  }
end

--- What the init program can do here, from `flemma-sandbox-tool --info`:
--- the architecture its seccomp filter covers, and the kernel's Landlock ABI.
---@return { seccomp: string|nil, landlock: integer }
function M.helper_info()
  local helper = M.program("tool")
  if not helper then
    return { landlock = 0 }
  end
  if not helper_info[helper] then
    helper_info[helper] = info_in((process.run({ helper, "--info" }, { stderr = "null" })))
  end
  return helper_info[helper]
end

---@type boolean
local reading_info = false

--- Asks the helper what it can do in the background (for the first chat
--- buffer), so the first tool call does not wait for it.
function M.info_in_background()
  local helper = M.program("tool")
  if not helper or helper_info[helper] or reading_info then
    return
  end
  reading_info = surroundings.output_in_background(helper, { "--info" }, function(stdout)
    reading_info = false
    helper_info[helper] = helper_info[helper] or info_in(stdout)
    background.ended()
  end)
  if reading_info then
    background.began()
  end
end

--- The architecture the helper's seccomp filter covers, or nil.
---@return string|nil
function M.seccomp_arch()
  return M.helper_info().seccomp
end

--- Landlock can scope abstract unix sockets and signals (ABI 6, Linux 6.12).
M.LANDLOCK_SCOPE_ABI = 6

local LIMIT_ORDER = { "processes", "memory_mb", "cpu_seconds", "file_size_mb", "open_files" }

--- The allowlist network mode (csrc/exec/proxy_bridge.h, csrc/exec/host_proxy.h):
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

--- The init program's part of the inner command: the network bridge, seccomp,
--- Landlock scope, limits, then "--".
---@param policy flemma_sandbox.ResolvedPolicy
---@param helper string
---@param inner_cmd string[]
---@return string[]
function M.inner(policy, helper, inner_cmd)
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
function M.args_file(argv, dash)
  local dir = surroundings.state_dir("args")
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

local check_files = 0

--- Up to this many bytes of check words go in the helper's argv
--- (--check-words); more are written to the check file by Neovim. Linux
--- takes up to 2 MB of arguments, and each word on its own line of ps.
M.CHECK_WORDS_BYTES = 64 * 1024

--- The name of a run's files in our state folder, without extension: its
--- check file (.check) and its proxy's socket (.sock).
---@return string|nil base, string|nil err
function M.run_base()
  local runs, err = surroundings.state_dir("runs")
  if not runs then
    return nil, "flemma-sandbox: no state folder for the check after the run: " .. tostring(err)
  end
  check_files = check_files + 1
  -- the time too: the quarantine names its runs, and pids come back
  return string.format("%s/%d-%d-%d", runs, core.getpid(), os.time(), check_files)
end

--- What the helper does on the host around the run. Right before it
--- (csrc/exec/before_run.h, csrc/exec/secret_masks.h): the ".git" entries and
--- watched paths as they are then, the host's sockets, the secret scan;
--- its masks go in front of bwrap's "--" at mask_at. After it
--- (csrc/exec/after_run.h): the missing protected paths, the projects and the
--- ".git" they hold. The check file lies in our state folder, which the
--- sandbox cannot write; the helper writes it from the words in its argv,
--- or, for a large policy, Neovim writes it here.
---@param policy flemma_sandbox.CallPlan
---@param mask_at integer position of bwrap's "--" in the command the helper runs (bwrap is 0)
---@param base? string the run's name (M.run_base)
---@return string[]|nil options the helper's options for it, string|nil err
function M.check_options(policy, mask_at, base)
  -- never a temp folder: the sandbox may write there, and the helper trusts the file
  local runs, rerr = surroundings.state_dir("runs")
  local quarantine, qerr = surroundings.state_dir("quarantine")
  local index, ierr = surroundings.state_dir("index")
  if not runs or not quarantine or not index then
    return nil, "flemma-sandbox: no state folder for the check after the run: " .. tostring(rerr or qerr or ierr)
  end
  local file = M.wrap_record(base or M.run_base()).check_file
  local words, bytes = check_plan.words_for(policy, quarantine, index)
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

--- What a wrap made for its run, made once (M.wrap_record) and returned
--- beside the argv (bwrap.lua's wrap, through every wrap path): what the
--- run's end (run/end_of_run.lua) and its caller need, never read back
--- from the argv (whose first word in clone mode is the workspace view's
--- bwrap).
---@class flemma_sandbox.WrapRecord
---@field argv string[] the wrapped command: the wrap's first value
---@field run string the run's name: its files' and its quarantine entries'
---@field check_file string what the check after the run reads
---@field records_file string where the helper and the proxy append the run's records
---@field running_file string left by a helper killed before its check after the run
---@field leftovers string[] the run's other files in the state folder, removed after it
---@field live_dir string|nil the chat's live sandbox the call goes to
---@field clone boolean whether the workspace view's bwrap comes first (clone mode)

---@param base string M.run_base()'s
---@param made? { argv: string[], live_dir: string|nil, clone: boolean } what the wrap made
---@return flemma_sandbox.WrapRecord
function M.wrap_record(base, made)
  made = made or {}
  return {
    argv = made.argv or {},
    run = base:match("[^/]+$"),
    check_file = base .. ".check",
    records_file = base .. ".records",
    running_file = base .. ".running",
    -- a check file the helper never took up, one it was killed writing,
    -- and the socket of its network proxy
    leftovers = { base .. ".check", base .. ".new", base .. ".sock" },
    live_dir = made.live_dir,
    clone = made.clone == true,
  }
end

return M
