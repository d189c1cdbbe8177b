--- make bench: the secret scan and the rest of the hardening, timed.
---  1. core.scan_secrets on a project of 100,000 files, by depth
---  2. policy.resolve with the default policy on that project (scan, deny
---     lists, sockets, protected paths), per call
---  3. wall time of `true` through the default policy (placeholders held by
---     the host-side helper, seccomp and limits inside), and without a
---     project (no placeholders), and without seccomp and limits too
package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;" .. package.path
package.cpath = "lua/?.so;" .. package.cpath

local core = require("flemma_sandbox.core")
local config = require("flemma_sandbox.config")
local h = require("support.helpers")
local host = require("flemma_sandbox.host")
local policy = require("flemma_sandbox.policy")
local protect = require("flemma_sandbox.policy.protect")
local sandbox = require("flemma_sandbox")

local function now()
  return tonumber(h.capture("date +%s.%N"))
end

-- clock() is process CPU time: fine for the scan and resolve, which run here
local function time(n, fn)
  local t0 = os.clock()
  for _ = 1, n do
    fn()
  end
  return (os.clock() - t0) / n
end

local home = os.getenv("HOME")
h.sh("mkdir -p " .. h.shell_quote(home .. "/.cache"))
local base =
  core.resolve((h.capture("mktemp -d " .. h.shell_quote(home .. "/.cache/flemma-bench.XXXXXX")):gsub("%s+$", "")), "/")
local proj = base .. "/proj"
-- 100 folders x 10 subfolders x 100 files, and a few secrets on top
h.sh(
  "mkdir -p "
    .. h.shell_quote(proj)
    .. " && cd "
    .. h.shell_quote(proj)
    .. " && for d in $(seq 100); do mkdir -p d$d; for s in $(seq 10); do mkdir d$d/s$s;"
    .. " (cd d$d/s$s && touch $(seq -f 'f%g.c' 1 100)); done; done"
    .. " && touch .env .env.local d1/server.pem d2/s1/deep.key"
)
local files = tonumber(h.capture("find " .. h.shell_quote(proj) .. " -type f | wc -l"))
print(string.format("project tree: %d files", files))
for _, depth in ipairs({ 1, 2, 3, 8 }) do
  local found
  local per = time(depth <= 2 and 200 or 5, function()
    found = core.scan_secrets(proj, protect.DEFAULT_SECRET_FILES, protect.SCAN_SKIP, depth, protect.SCAN_LIMIT)
  end)
  print(string.format("scan_secrets depth %d: %8.3f ms, %d found", depth, per * 1e3, #found))
end

host.use({
  cwd = function()
    return proj
  end,
})
local p = config.merge_layer(config.defaults, { policy = { rw_paths = { "$CWD", "/tmp" } } }).policy
local resolved
local per = time(200, function()
  resolved = policy.resolve(p, nil)
end)
print(
  string.format(
    "policy.resolve, default policy on that project: %.2f ms (%d hidden, %d protected, %d pinned)",
    per * 1e3,
    #resolved.hidden,
    #resolved.placeholders,
    #resolved.pins
  )
)

local function wrapped(configured)
  configured.network = false
  sandbox.setup({ policy = configured })
  return assert(sandbox.wrap_command({ "true" }))
end
local no_limits =
  { processes = false, memory_mb = false, cpu_seconds = false, file_size_mb = false, open_files = false }
local rows = {
  {
    "bwrap by hand",
    { "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--", "true" },
  },
  { "default policy", wrapped({ rw_paths = { "$CWD", "/tmp" } }) },
  { "  no project", wrapped({ rw_paths = { "/tmp" } }) },
  { "  no project, no seccomp or limits", wrapped({ rw_paths = { "/tmp" }, seccomp = false, limits = no_limits }) },
}
for _, row in ipairs(rows) do
  local words = {}
  for i, w in ipairs(row[2]) do
    words[i] = h.shell_quote(w)
  end
  local cmd = table.concat(words, " ")
  local runs = 40
  local t0 = now()
  h.sh("for i in $(seq " .. runs .. "); do " .. cmd .. " || exit 1; done")
  print(
    string.format("%-36s %6.2f ms per run (%d runs, includes a shell loop)", row[1], (now() - t0) / runs * 1e3, runs)
  )
end
host.use(nil)
os.execute("rm -rf " .. h.shell_quote(base))
