--- make bench, part 3 (inside headless Neovim): the cost of a command
--- with many host sockets, which the sandbox must keep out of reach.
---  1. `true` through job.run (policy, wrap, helper, bwrap, check) next to
---     Flemma's own bare bwrap argv started with jobstart, with 0, 100 and
---     1000 sockets bound by a helper in /tmp (where tmux, X11 and Neovim
---     keep theirs), and with 1000 in /var/tmp (not a private folder)
---  2. get_policy + wrap_command per call, default policy, the same counts
---  3. in a project of 200,000 files with 1000 sockets in /var/tmp: the
---     first get_policy + wrap_command (nothing cached), then per call, and
---     the longest main-thread pause while a bash tool call refused on 200
---     paths runs and finishes (a 1 ms timer's longest gap)
vim.opt.runtimepath:prepend(vim.fn.getcwd())
package.path = "spec/?.lua;" .. vim.fn.getcwd() .. "/bench/?.lua;" .. package.path
-- the check files of 800 wrapped-but-not-run commands go to a state folder
-- of the bench's own
local state = vim.fn.trim(vim.fn.system("mktemp -d /var/tmp/flemma-bench-state.XXXXXX"))
vim.env.XDG_STATE_HOME = state

local job = require("flemma_sandbox.run.job")
local sandbox = require("flemma_sandbox")
local uv = vim.uv or vim.loop

local function now_ms()
  return uv.hrtime() / 1e6
end

local function median(samples)
  table.sort(samples)
  return samples[math.floor(#samples / 2) + 1]
end

local function wait_for(pred)
  vim.wait(600000, pred, 1)
end

local function via_job(argv)
  local done
  assert(job.run(argv, {
    wrap = require("flemma_sandbox").wrapper(nil),
    on_exit = function()
      done = true
    end,
  }))
  wait_for(function()
    return done
  end)
end

local function via_jobstart(argv)
  local done
  vim.fn.jobstart(argv, {
    on_exit = function()
      done = true
    end,
  })
  wait_for(function()
    return done
  end)
end

local function timed(runs, fn)
  fn()
  local samples = {}
  for i = 1, runs do
    local t = now_ms()
    fn()
    samples[i] = now_ms() - t
  end
  return median(samples)
end

local repo = vim.fn.getcwd()
local project = vim.fn.trim(vim.fn.system("mktemp -d /var/tmp/flemma-bench-proj.XXXXXX"))
vim.fn.writefile({ "int main(void) { return 0; }" }, project .. "/main.c")
vim.cmd("cd " .. vim.fn.fnameescape(project))
sandbox.setup({ policy = { network = false } })

--- Flemma's own bwrap backend's argv for its default policy, network off.
local flemma_argv = {
  "bwrap",
  "--ro-bind",
  "/",
  "/",
  "--bind",
  project,
  project,
  "--bind",
  "/tmp",
  "/tmp",
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
  "true",
}

local RUNS = 10
local header = { "host sockets", "job.run true", "Flemma bwrap", "ratio", "policy+wrap/call" }
print(string.format("%-34s %12s %12s %7s %16s", unpack(header)))
for _, case in ipairs({ { "/tmp", 0 }, { "/tmp", 100 }, { "/tmp", 1000 }, { "/var/tmp", 1000 } }) do
  local dir = vim.fn.trim(vim.fn.system("mktemp -d " .. case[1] .. "/flemma-bench-sockets.XXXXXX"))
  local holder = vim.fn.jobstart({ "luajit", "spec/support/hold_sockets.lua", dir, tostring(case[2]) }, { cwd = repo })
  wait_for(function()
    return vim.fn.filereadable(dir .. "/ready") == 1
  end)
  local ours = timed(RUNS, function()
    via_job({ "true" })
  end)
  local theirs = timed(RUNS, function()
    via_jobstart(flemma_argv)
  end)
  -- the first call after the sockets' folder appeared resolves anew (the
  -- 200,000-file case below prints that one on its own)
  sandbox.get_policy(nil)
  sandbox.wrap_command({ "true" })
  local calls = 50
  local t = now_ms()
  for _ = 1, calls do
    sandbox.get_policy(nil)
    sandbox.wrap_command({ "true" })
  end
  local per_call_us = (now_ms() - t) / calls * 1000
  vim.fn.writefile({}, dir .. "/stop")
  vim.fn.jobwait({ holder }, 10000)
  vim.fn.delete(dir, "rf")
  print(
    string.format(
      "%-34s %9.2f ms %9.2f ms %6.2fx %13.0f us",
      string.format("%d in %s", case[2], case[1]),
      ours,
      theirs,
      ours / theirs,
      per_call_us
    )
  )
end
vim.cmd("cd " .. vim.fn.fnameescape(repo))
vim.fn.delete(project, "rf")

-- 3. a big project
local big = vim.fn.trim(vim.fn.system("mktemp -d /var/tmp/flemma-bench-big.XXXXXX"))
vim.fn.system(
  "cd "
    .. vim.fn.shellescape(big)
    .. " && mkdir -p .git/hooks && for d in $(seq 200); do mkdir d$d; for s in $(seq 10); do mkdir d$d/s$s;"
    .. " (cd d$d/s$s && touch $(seq -f 'f%g.c' 1 100)); done; done"
)
vim.cmd("cd " .. vim.fn.fnameescape(big))
local socks = vim.fn.trim(vim.fn.system("mktemp -d /var/tmp/flemma-bench-sockets.XXXXXX"))
local holder = vim.fn.jobstart({ "luajit", "spec/support/hold_sockets.lua", socks, "1000" }, { cwd = repo })
wait_for(function()
  return vim.fn.filereadable(socks .. "/ready") == 1
end)
sandbox.setup({ policy = { network = false }, approval = { bash = "allow" } })
local t0 = now_ms()
sandbox.get_policy(nil)
sandbox.wrap_command({ "true" })
local first_ms = now_ms() - t0
local calls = 200
t0 = now_ms()
for _ = 1, calls do
  sandbox.get_policy(nil)
  sandbox.wrap_command({ "true" })
end
local per_call_us = (now_ms() - t0) / calls * 1000
-- as in a session: start-up builds the scan index in the background
-- (autocmds.warm_index), so the first resolution only looks at each folder
local index_dir = state .. "/flemma-sandbox/index"
vim.fn.delete(index_dir, "rf")
require("flemma_sandbox.policy.cache").clear()
local t_index = now_ms()
assert(require("flemma_sandbox.nvim.autocmds").warm_index(), "the background index build started")
wait_for(function()
  return #vim.fn.glob(index_dir .. "/*.idx", false, true) > 0
end)
local index_ms = now_ms() - t_index
t0 = now_ms()
sandbox.get_policy(nil)
sandbox.wrap_command({ "true" })
local warm_ms = now_ms() - t0
print(
  string.format(
    "200,000 files, 1000 sockets in /var/tmp: first get_policy+wrap %.1f ms without a scan index,"
      .. " %.1f ms with one (built in the background in %.0f ms); then %.0f us per call (goal 100 us)",
    first_ms,
    warm_ms,
    index_ms,
    per_call_us
  )
)

-- the longest pause of the main thread while a refused tool call runs
local tools = require("flemma_sandbox.tools")
local result, longest, sync_ms = require("pause").measure(function(done)
  tools.run("bash", { command = "for i in $(seq 200); do echo x > /etc/flemma-bench-$i; done; false" }, {}, done)
end)
print(
  string.format(
    "a bash call refused on 200 paths: longest main-thread pause %.1f ms (%.1f ms to start it; goal 50 ms), %d notes",
    longest,
    sync_ms,
    #(result.notes or {})
  )
)
vim.fn.writefile({}, socks .. "/stop")
vim.fn.jobwait({ holder }, 10000)
vim.fn.delete(socks, "rf")
vim.cmd("cd " .. vim.fn.fnameescape(repo))
vim.fn.delete(big, "rf")
vim.fn.delete(state, "rf")
