--- make bench, the command line: the wall time of `flemma-sandbox run`
--- and `list`, next to their anchors in the same run: a bare bwrap start
--- (`bwrap --ro-bind / / ... true`) and the headless Neovim the command
--- line starts (`nvim --headless -u NONE -c qa!`). Medians of alternating
--- runs, with a saved config (setup() with a few keys) as a user has one.
--- Run by luajit from the repository.
local ffi = require("ffi")
ffi.cdef([[
struct flemma_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct flemma_timespec *ts);
]])

local RUNS = tonumber(os.getenv("CLI_RUNS") or "") or 15
local root = io.popen("pwd"):read("*l")
local bin = root .. "/bin/flemma-sandbox"

local function now_ms()
  local ts = ffi.new("struct flemma_timespec")
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local function sh(cmd)
  assert(os.execute(cmd .. " >/dev/null 2>&1") == 0, cmd)
end

local scratch = io.popen("mktemp -d /var/tmp/flemma-cli-bench.XXXXXX"):read("*l")
local env = string.format(
  "HOME=%s/home XDG_STATE_HOME=%s/home/.local/state XDG_CACHE_HOME=%s/home/.cache",
  scratch,
  scratch,
  scratch
)
sh("mkdir -p " .. scratch .. "/home " .. scratch .. "/repo " .. scratch .. "/plain")
sh(
  "cd "
    .. scratch
    .. "/repo && git init -q && for i in $(seq 200); do echo $i > f$i.txt; done"
    .. " && git add . && git -c user.email=b@b -c user.name=b commit -qm init"
)
-- the user's config, saved as Neovim's setup() saves it
sh(
  env
    .. " nvim --headless -u NONE -i NONE -n --cmd 'set rtp^="
    .. root
    .. "' -c \"lua require('flemma_sandbox').setup({ policy = { network = false,"
    .. " home_allow = { '~/.m2' }, limits = { processes = 2048 } }, sandboxes = { idle_ttl_s = 600 } })\" -c 'qa!'"
)

local function timed(cmd)
  local t0 = now_ms()
  sh(cmd)
  return now_ms() - t0
end

local function median(samples)
  table.sort(samples)
  return samples[math.floor(#samples / 2) + 1]
end

--- Medians of cmds run in turn RUNS times (after one warm-up each).
local function medians(cmds)
  local samples = {}
  for i, cmd in ipairs(cmds) do
    timed(cmd)
    samples[i] = {}
  end
  for _ = 1, RUNS do
    for i, cmd in ipairs(cmds) do
      table.insert(samples[i], timed(cmd))
    end
  end
  local out = {}
  for i = 1, #cmds do
    out[i] = median(samples[i])
  end
  return out
end

local function at(dir, cmd)
  return "cd " .. scratch .. "/" .. dir .. " && env " .. env .. " " .. cmd
end

local bare = "bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent -- true"
local nvim = "nvim --headless -u NONE -i NONE -n -c 'qa!'"
local m = medians({
  bare,
  nvim,
  at("plain", bin .. " run bench -- true"),
  at("repo", bin .. " run bench -- true"),
  at("plain", bin .. " list"),
})
print(string.format("command line, median of %d (a saved config; the sandbox running, joined):", RUNS))
local rows = {
  { "anchor: a bare bwrap start (true)", m[1] },
  { "anchor: nvim --headless -u NONE, start and quit", m[2] },
  { "run NAME -- true, a folder (direct)", m[3], m[3] / m[1], "bwrap" },
  { "run NAME -- true, a git repository (its copy synced after)", m[4], m[4] / m[1], "bwrap" },
  { "list", m[5], m[5] / m[2], "nvim" },
}
for _, r in ipairs(rows) do
  print(string.format("  %-58s %7.1f ms%s", r[1], r[2], r[3] and string.format("  (%.2fx %s)", r[3], r[4]) or ""))
end
-- the sandboxes stop, the scratch folder goes
for _, dir in ipairs({ "plain", "repo" }) do
  sh(at(dir, bin .. " delete --force bench"))
end
sh("rm -rf " .. scratch)
