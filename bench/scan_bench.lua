--- make bench: the secret scan and the rest of the hardening, timed.
---  1. core.find_files on a project of 200,000 files, by depth
---  2. the search for every ".git" in it (at the start of each command, and
---     again in the check after it), beside `find -name .git -prune`
---  3. policy.resolve with the default policy on that project (scan, deny
---     lists, sockets, protected paths, repositories), per call
---  4. wall time of `true` through the default policy (the host-side helper
---     checking after the run, seccomp and limits inside), and without a
---     project (nothing to check), and without seccomp and limits too
package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;" .. package.path
package.cpath = "lua/?.so;" .. package.cpath

local core = require("flemma_sandbox.core")
local config = require("flemma_sandbox.config")
local h = require("support.helpers")
local surroundings = require("flemma_sandbox.base.surroundings")
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
-- 200 folders x 10 subfolders x 100 files, a few secrets and repositories on top
h.sh(
  "mkdir -p "
    .. h.shell_quote(proj)
    .. " && cd "
    .. h.shell_quote(proj)
    .. " && for d in $(seq 200); do mkdir -p d$d; for s in $(seq 10); do mkdir d$d/s$s;"
    .. " (cd d$d/s$s && touch $(seq -f 'f%g.c' 1 100)); done; done"
    .. " && touch .env .env.local d1/server.pem d2/s1/deep.key && mkdir -p .git/hooks d3/s2/.git d150/s9/.git"
)
local files = tonumber(h.capture("find " .. h.shell_quote(proj) .. " -type f | wc -l"))
print(string.format("project tree: %d files", files))
for _, depth in ipairs({ 1, 2, 3, 8 }) do
  local found
  local per = time(depth <= 2 and 200 or 5, function()
    found = core.find_files(proj, protect.DEFAULT_SECRET_FILES, protect.SCAN_SKIP, depth, protect.SCAN_LIMIT)
  end)
  print(string.format("find_files (the secret scan) depth %d: %8.3f ms, %d found", depth, per * 1e3, #found))
end

surroundings.use({
  cwd = function()
    return proj
  end,
})
-- wall time for both: find is another process
local function wall(n, fn)
  local t0 = now()
  for _ = 1, n do
    fn()
  end
  return (now() - t0) / n
end
local found_git
local ours = wall(10, function()
  found_git = core.find_names(proj, { ".git" }, 100000)
end)
local anchor = wall(10, function()
  h.capture("find " .. h.shell_quote(proj) .. " -name .git -prune -print | wc -l")
end)
print(
  string.format(
    "every .git in the project: %.1f ms (%d found); find -name .git -prune: %.1f ms; ratio %.2f",
    ours * 1e3,
    #found_git,
    anchor * 1e3,
    ours / anchor
  )
)
-- the check after a run, as the tool program does it (flemma-sandbox-tool
-- --check-after NAME.running, a process of its own: its start is in the figure)
local check_words = { "quarantine", base, "started", "1", "repos", proj }
for _, g in ipairs(found_git) do
  check_words[#check_words + 1] = "known"
  check_words[#check_words + 1] = core.node_id(g)
end
local running = base .. "/bench.running"
local exec_helper = assert(require("flemma_sandbox.backends.helper").helper())
local true_ms = wall(10, function()
  h.sh("true")
end) * 1e3
local check_ms = wall(10, function()
  local cf = assert(io.open(running, "wb"))
  cf:write(table.concat(check_words, "\0"), "\0")
  cf:close()
  h.sh(h.shell_quote(exec_helper) .. " --check-after " .. h.shell_quote(running))
  assert(not core.exists(running), "the check after the run did not take its file")
end) * 1e3
print(
  string.format(
    "the check after a run (nothing new, flemma-sandbox-tool --check-after): %.1f ms; a shell running true: %.1f ms",
    check_ms,
    true_ms
  )
)

local p = config.merge_layer(config.defaults, { policy = { rw_paths = { "$CWD", "/tmp" } } }).policy
local resolved
local per = time(10, function()
  resolved = policy.resolve(p, nil)
end)
print(
  string.format(
    "policy.resolve, default policy on that project: %.2f ms (%d hidden, %d protected, %d watched, %d pinned)",
    per * 1e3,
    #resolved.hidden,
    #resolved.protected,
    #resolved.watched,
    #resolved.pins
  )
)

--- A new argv per run: each one's check file is used up by its run.
local function wrapped(configured)
  configured.network = false
  return function()
    sandbox.setup({ policy = configured })
    return assert(sandbox.wrap_command({ "true" }))
  end
end
local no_limits =
  { processes = false, memory_mb = false, cpu_seconds = false, file_size_mb = false, open_files = false }
local rows = {
  {
    "bwrap by hand",
    function()
      return { "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--", "true" }
    end,
  },
  { "default policy", wrapped({ rw_paths = { "$CWD", "/tmp" } }) },
  { "  no project", wrapped({ rw_paths = { "/tmp" } }) },
  { "  no project, no seccomp or limits", wrapped({ rw_paths = { "/tmp" }, seccomp = false, limits = no_limits }) },
}
for _, row in ipairs(rows) do
  local runs = 20
  local script = base .. "/runs.sh"
  local f = assert(io.open(script, "w"))
  for _ = 1, runs do
    local words = {}
    for i, w in ipairs(row[2]()) do
      words[i] = h.shell_quote(w)
    end
    f:write(table.concat(words, " "), " || exit 1\n")
  end
  f:close()
  local t0 = now()
  h.sh("sh " .. h.shell_quote(script))
  print(
    string.format("%-36s %6.2f ms per run (%d runs, argv made beforehand)", row[1], (now() - t0) / runs * 1e3, runs)
  )
end
surroundings.use(nil)
os.execute("rm -rf " .. h.shell_quote(base))
