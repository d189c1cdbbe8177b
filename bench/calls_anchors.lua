--- make bench, calls_bench's measuring (inside headless Neovim): the
--- anchors every row is measured next to (a bare bwrap start, Flemma's own
--- bare bwrap argv when FLEMMA_DIR names a checkout, `srt true` when it is
--- installed), rounds that run the rows and the anchors in an order rotated
--- each round, the medians of the per-round ratios, and the host sockets.
local fixture = require("repo_fixture")

local M = {}

M.ROUNDS = tonumber(vim.env.FLEMMA_SANDBOX_BENCH_ROUNDS or "") or 11

--- Starts argv (a list, no shell) and waits for it; opts go to jobstart.
---@param argv string[]
---@param opts table|nil
function M.run(argv, opts)
  local done, code
  local o = vim.tbl_extend("force", opts or {}, {
    on_exit = function(_, c)
      code, done = c, true
    end,
  })
  assert(vim.fn.jobstart(argv, o) > 0, argv[1] .. " did not start")
  vim.wait(120000, function()
    return done
  end, 1)
  assert(code == 0, table.concat(argv, " ") .. " exited " .. tostring(code))
end

--- `true` through job.run as a chat's call (bufnr nil: a call with no
--- chat), waited for; it must exit 0.
---@param bufnr integer|nil
function M.chat_call(bufnr)
  local sandbox = require("flemma_sandbox")
  local done
  assert(require("flemma_sandbox.run.job").run({ "true" }, {
    bufnr = bufnr,
    wrap = sandbox.wrapper(bufnr),
    on_exit = function(r)
      done = r
    end,
  }))
  vim.wait(120000, function()
    return done ~= nil
  end, 1)
  assert(done.exit_code == 0, done.stderr)
end

--- Flemma's own bwrap argv for a project with network off, built by
--- Flemma's bwrap backend of FLEMMA_DIR (nil and why when there is none).
---@param project string
---@return string[]|nil argv, string|nil why
local function flemma_argv(project)
  local dir = vim.env.FLEMMA_DIR
  if not dir or dir == "" then
    return nil, "not available (FLEMMA_DIR not set)"
  end
  package.path = dir .. "/lua/?.lua;" .. dir .. "/lua/?/init.lua;" .. package.path
  local ok, backend = pcall(require, "flemma.sandbox.backends.bwrap")
  if not ok then
    return nil, "not available (" .. tostring(backend):gsub("\n.*", "") .. ")"
  end
  -- its default policy: the project and /tmp writable, no extra arguments
  local policy = { rw_paths = { project, "/tmp" }, network = false }
  local argv, err = backend.wrap(policy, { path = "bwrap", extra_args = {} }, { "true" })
  return argv, argv and nil or ("not available (" .. tostring(err) .. ")")
end

--- The anchors for a project: a list of { name, fn }, and a line saying
--- which are not available and why.
---@param project string
---@return table anchors, string missing
function M.anchors(project)
  local bare = { "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "true" }
  local list = {
    {
      "bare bwrap",
      function()
        M.run(bare)
      end,
    },
  }
  local missing = {}
  local fl, why = flemma_argv(project)
  if fl then
    list[#list + 1] = {
      "Flemma argv",
      function()
        M.run(fl)
      end,
    }
  else
    missing[#missing + 1] = "Flemma's bare bwrap argv: " .. why
  end
  if vim.fn.executable("srt") == 1 then
    list[#list + 1] = {
      "srt true",
      function()
        M.run({ "srt", "true" })
      end,
    }
  else
    missing[#missing + 1] = "srt: not installed"
  end
  return list, table.concat(missing, "; ")
end

--- Runs rows and anchors M.ROUNDS times, the order rotated each round (a
--- row's prep, untimed, just before it). Returns per row its median ms and
--- the median of its per-round ratios to each anchor.
---@param rows table[] each { label, fn, prep = fn|nil, goal = number|nil, goal_text = string }
---@param anchors table[]
---@return table results
function M.rounds(rows, anchors)
  local cases = {}
  for _, a in ipairs(anchors) do
    cases[#cases + 1] = { fn = a[2], anchor = true }
  end
  for _, r in ipairs(rows) do
    cases[#cases + 1] = { fn = r.fn, prep = r.prep }
  end
  for _, c in ipairs(cases) do -- a warm-up of each, not counted
    if c.prep then
      c.prep()
    end
    c.fn()
    c.ms = {}
  end
  for round = 1, M.ROUNDS do
    for i = 0, #cases - 1 do
      local c = cases[(i + round) % #cases + 1]
      if c.prep then
        c.prep()
      end
      local t0 = fixture.now_ms()
      c.fn()
      c.ms[round] = fixture.now_ms() - t0
    end
  end
  local out = {}
  for i, r in ipairs(rows) do
    local c = cases[#anchors + i]
    local res = { label = r.label, goal = r.goal, goal_text = r.goal_text, ratios = {} }
    for a = 1, #anchors do
      local ratios = {}
      for round = 1, M.ROUNDS do
        ratios[round] = c.ms[round] / cases[a].ms[round]
      end
      res.ratios[a] = fixture.median(ratios)
    end
    res.ms = fixture.median(vim.deepcopy(c.ms))
    out[i] = res
  end
  local anchor_ms = {}
  for a = 1, #anchors do
    anchor_ms[a] = fixture.median(vim.deepcopy(cases[a].ms))
  end
  return out, anchor_ms
end

--- Prints results of M.rounds: per row its median, its ratio to each
--- anchor, the goal and whether it is met (on the last anchor that is a
--- bwrap: Flemma's argv when there is one, else the bare bwrap).
---@param title string
---@param results table[]
---@param anchors table[]
---@param anchor_ms number[]
function M.print(title, results, anchors, anchor_ms)
  local names = {}
  for a, anchor in ipairs(anchors) do
    names[a] = string.format("%s %.2f ms", anchor[1], anchor_ms[a])
  end
  print(string.format("%s (median of %d rounds; anchors: %s)", title, M.ROUNDS, table.concat(names, ", ")))
  local judge = (anchors[2] and anchors[2][1] == "Flemma argv") and 2 or 1
  for _, r in ipairs(results) do
    local ratios = {}
    for a, anchor in ipairs(anchors) do
      ratios[a] = string.format("%.2fx %s", r.ratios[a], anchor[1])
    end
    local verdict = ""
    if r.goal then
      verdict = r.ratios[judge] <= r.goal and "met" or "NOT met"
    end
    local line =
      string.format("  %-58s %8.2f ms  %s  goal %s %s", r.label, r.ms, table.concat(ratios, "  "), r.goal_text, verdict)
    print((line:gsub("%s+$", "")))
  end
end

--- The warm call's floor (bench/floor, built by make bench-calls): a
--- client with no libc and no ld.so sends its argv and fds 0-2 over a
--- unix socket to a server that vforks and execs /bin/true and answers
--- its status. Returns the row (no goal: what a call that only attaches
--- costs) and the function that stops the server.
---@param repo string
---@param dir string a folder for the socket
---@return table row, fun() stop
function M.floor(repo, dir)
  local base = vim.fn.tempname():gsub(".*/", dir .. "/floor-")
  local sock, stop_file = base .. ".sock", base .. ".stop"
  local client = repo .. "/bench/out/floor-client"
  local server = vim.fn.jobstart({ repo .. "/bench/out/floor-server", sock, stop_file })
  assert(server > 0, "bench/out/floor-server did not start (make bench-calls builds it)")
  vim.wait(5000, function()
    return vim.fn.getftype(sock) == "socket"
  end, 1)
  local row = {
    label = "floor: a static client attaching, the server execs true",
    goal_text = "(bench/floor)",
    fn = function()
      M.run({ client, sock, "/bin/true" })
    end,
  }
  return row,
    function()
      vim.fn.writefile({}, stop_file)
      M.run({ client, sock, "/bin/true" }) -- wakes its accept
      vim.fn.jobwait({ server }, 5000)
      vim.fn.delete(stop_file)
    end
end

--- The experiment beside the floor: a call sent to the chat's real
--- supervisor over the live wire by a static client doing no host-side
--- work (bench/floor/wire_client.c): what a warm call costs once the
--- plan, the key and the check after the run live in the keeper. argv is
--- a warm call's (its --live folder holds the socket).
---@param repo string
---@param argv string[]
---@return table row
function M.wire_row(repo, argv)
  local live
  for i, word in ipairs(argv) do
    if word == "--live" then
      live = argv[i + 1]
      break
    end
  end
  assert(live, "no --live in a warm call's argv")
  return {
    label = "the wire alone: no host-side work, the real supervisor",
    goal_text = "(bench/floor)",
    fn = function()
      M.run({ repo .. "/bench/out/wire-client", live .. "/socket", "/bin/true" })
    end,
  }
end

--- The floors of a cold call (no chat), cut from its own wrapped argv:
--- its bwrap argv alone with `true` (the mounts and namespaces), and with
--- the init program (seccomp, limits) but no host program. What the full
--- call costs above the second is the host program's: its start, the
--- checks before the run (the .git scan, watched names, host sockets,
--- secret files) and after it.
---@param argv string[] sandbox.wrapper(nil)({ "true" })
---@return table[] rows
function M.cold_floor_rows(argv)
  local from, init_at = nil, nil
  for i, word in ipairs(argv) do
    if word == "bwrap" and not from then
      from = i
    elseif from and not init_at and word:match("/flemma%-sandbox%-init$") then
      init_at = i
    end
  end
  assert(from and init_at, "a cold call's argv has bwrap and the init program")
  -- bwrap's "--" stands right before the init program
  local bwrap_only = vim.list_extend(vim.list_slice(argv, from, init_at - 1), { "true" })
  local with_init = vim.list_slice(argv, from)
  return {
    {
      label = "  its bwrap argv alone, `true` (no init, no host program)",
      goal_text = "(floor)",
      fn = function()
        M.run(bwrap_only)
      end,
    },
    {
      label = "  its bwrap argv and the init program (no host program)",
      goal_text = "(floor)",
      fn = function()
        M.run(with_init)
      end,
    },
  }
end

--- Binds n unix sockets in a new folder of /tmp (where desktop programs
--- keep theirs) with spec/support/hold_sockets.lua; returns the stop
--- function (nothing to stop for 0).
---@param n integer
---@param repo string
---@return fun()
function M.hold_sockets(n, repo)
  if n == 0 then
    return function() end
  end
  local dir = vim.fn.trim(vim.fn.system("mktemp -d /tmp/flemma-bench-sockets.XXXXXX"))
  local holder = vim.fn.jobstart({ "luajit", "spec/support/hold_sockets.lua", dir, tostring(n) }, { cwd = repo })
  vim.wait(60000, function()
    return vim.fn.filereadable(dir .. "/ready") == 1
  end, 1)
  return function()
    vim.fn.writefile({}, dir .. "/stop")
    vim.fn.jobwait({ holder }, 10000)
    vim.fn.delete(dir, "rf")
  end
end

---@type integer files new_file made so far (their names differ)
local made = 0

--- An empty file made in folder, named anew each time.
---@param folder string
function M.new_file(folder)
  made = made + 1
  vim.fn.writefile({}, string.format("%s/new%d.txt", folder, made))
end

--- get_policy + wrap_command of the standalone API, us: hot (median per
--- call of 200) and right after a new entry in the project root (median of
--- 21): the row of make bench-calls, and bench/policy_row.lua alone.
---@param sandbox table require("flemma_sandbox")
---@param project string
---@return number hot_us, number fresh_us
function M.policy_us(sandbox, project)
  local function once()
    local t0 = fixture.now_ms()
    sandbox.get_policy(nil)
    sandbox.wrap_command({ "true" })
    return (fixture.now_ms() - t0) * 1000
  end
  once()
  local hot, fresh = {}, {}
  for i = 1, 200 do
    hot[i] = once()
  end
  for i = 1, 21 do
    M.new_file(project)
    fresh[i] = once()
  end
  return fixture.median(hot), fixture.median(fresh)
end

return M
