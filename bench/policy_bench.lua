--- make bench (1 of 3): figures, not assertions.
---  1. get_policy + wrap_command per call, 10-path policy with variables
---  2. wall time of `true` through the wrapped argv, next to the same bwrap
---     call built by hand and to `true` alone
package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;" .. package.path
package.cpath = "lua/?.so;" .. package.cpath

local ffi = require("ffi")
local h = require("support.helpers")
local surroundings = require("flemma_sandbox.base.surroundings")
local sandbox = require("flemma_sandbox")

ffi.cdef([[
typedef struct { long tv_sec; long tv_nsec; } flemma_timespec;
int clock_gettime(int clk, flemma_timespec *ts);
int posix_spawnp(int *pid, const char *file, const void *file_actions, const void *attrp,
                 char *const argv[], char *const envp[]);
int waitpid(int pid, int *status, int options);
extern char **environ;
]])

local CLOCK_MONOTONIC = 1
local function now()
  local ts = ffi.new("flemma_timespec")
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

--- Spawns argv directly (no shell) and waits; returns the exit status word.
local function spawn_wait(argv)
  local cargv = ffi.new("char *[?]", #argv + 1)
  local keep = {}
  for i, word in ipairs(argv) do
    keep[i] = ffi.new("char[?]", #word + 1, word)
    cargv[i - 1] = keep[i]
  end
  cargv[#argv] = nil
  local pid = ffi.new("int[1]")
  assert(ffi.C.posix_spawnp(pid, argv[1], nil, nil, cargv, ffi.C.environ) == 0, "spawn failed")
  local status = ffi.new("int[1]")
  ffi.C.waitpid(pid[0], status, 0)
  return status[0]
end

local function stats(samples)
  table.sort(samples)
  local sum = 0
  for _, v in ipairs(samples) do
    sum = sum + v
  end
  return sum / #samples, samples[math.floor(#samples / 2) + 1]
end

local dir = h.tmpdir()
local home = dir .. "/home"
h.sh(table.concat({
  "mkdir -p " .. h.shell_quote(dir .. "/proj/sub") .. " " .. h.shell_quote(dir .. "/proj/a"),
  "mkdir -p " .. h.shell_quote(dir .. "/chats"),
  "mkdir -p " .. h.shell_quote(home .. "/.cache") .. " " .. h.shell_quote(home .. "/.local/share"),
}, " && "))
surroundings.use({
  cwd = function()
    return dir .. "/proj"
  end,
  buffer_dir = function()
    return dir .. "/chats"
  end,
  getenv = function(name)
    return ({ HOME = home, PATH = os.getenv("PATH") })[name]
  end,
})
sandbox.setup({
  policy = {
    rw_paths = {
      "$CWD",
      "$FLEMMA_BUFFER_PATH",
      "/tmp",
      "${TMPDIR:-/tmp}",
      "${XDG_CACHE_HOME:-~/.cache}",
      "${XDG_DATA_HOME:-~/.local/share}",
      "$CWD/sub",
      "urn:flemma:cwd/a",
      "$HOME",
      "/var/tmp",
    },
    network = false,
  },
})

local inner = { "true" }
local N = 5000
for _ = 1, 200 do -- warm up the JIT and the detection cache
  sandbox.wrap_command(inner, 1)
end
local t0 = now()
for _ = 1, N do
  sandbox.get_policy(1)
  sandbox.wrap_command(inner, 1)
end
local per_call = (now() - t0) / N * 1e6
print(string.format("get_policy + wrap_command, 10 paths with variables: %.1f us per call (%d calls)", per_call, N))

local wrapped = assert(sandbox.wrap_command(inner, 1))
local by_hand = {
  "bwrap",
  "--ro-bind",
  "/",
  "/",
  "--dev",
  "/dev",
  "--proc",
  "/proc",
  "--unshare-user",
  "--unshare-pid",
  "--unshare-uts",
  "--unshare-ipc",
  "--unshare-net",
  "--die-with-parent",
  "--new-session",
  "--",
  "true",
}
local RUNS = 40
local rows = { { "true (no sandbox)", { "true" } }, { "bwrap by hand", by_hand }, { "flemma-sandbox argv", wrapped } }
for _, row in ipairs(rows) do
  assert(spawn_wait(row[2]) == 0, row[1] .. " failed")
  local samples = {}
  for i = 1, RUNS do
    local s = now()
    spawn_wait(row[2])
    samples[i] = (now() - s) * 1e3
  end
  local mean, median = stats(samples)
  print(string.format("%-22s mean %6.2f ms  median %6.2f ms  (%d runs)", row[1], mean, median, RUNS))
end
h.rmdir(dir)
