--- Runs a command through the buffer's sandbox with vim.fn.jobstart: never
--- blocks the editor, bounds what it keeps of the output, and on timeout or
--- cancel leaves no process behind (SIGTERM, then SIGKILL after a grace).
local capture = require("flemma.sandbox.capture")
local frontmatter = require("flemma.sandbox.frontmatter")
local sandbox = require("flemma.sandbox")

local M = {}

---@class flemma.sandbox.JobResult
---@field stdout string
---@field stderr string
---@field exit_code integer
---@field signal integer|nil the signal that ended it, when Neovim reported one (exit code 128+N)
---@field timed_out boolean
---@field cancelled boolean
---@field truncated boolean some output was left out (see stdout_dropped, stderr_dropped)
---@field stdout_dropped integer
---@field stderr_dropped integer
---@field sandboxed boolean whether the command ran inside a backend
---@field error string|nil set when the command could not be started

---@class flemma.sandbox.JobOpts
---@field bufnr? integer the buffer whose policy applies
---@field sandbox_opts? table passed to wrap_command as opts
---@field cwd? string
---@field env? table<string, string>
---@field stdin? string written, then stdin is closed (it is always closed)
---@field timeout_ms? integer
---@field grace_ms? integer between SIGTERM and SIGKILL, default 2000
---@field output_limit? integer characters kept per stream, default 12000
---@field on_exit fun(result: flemma.sandbox.JobResult)

---@class flemma.sandbox.JobHandle
---@field id integer the job id
---@field pid integer
---@field cancel fun()

M.defaults = { grace_ms = 2000, output_limit = 12000 }

local SIGTERM, SIGKILL = 15, 9

--- Running jobs by id, so VimLeavePre can stop what is still running.
---@type table<integer, fun(sig: integer)>
local running = {}

--- Start time of a process (field 22 of /proc/PID/stat), to tell it from a
--- later process that reuses its PID.
local function start_time(pid)
  local f = io.open("/proc/" .. pid .. "/stat", "r")
  if not f then
    return nil
  end
  local stat = f:read("*l") or ""
  f:close()
  local fields = stat:match("^%d+ %b() (.*)$")
  if not fields then
    return nil
  end
  local i = 2 -- fields after the name start at field 3
  for word in fields:gmatch("%S+") do
    i = i + 1
    if i == 22 then
      return word
    end
  end
end

--- Every descendant of pid as { pid, start }, read from /proc.
local function descendants(pid, out)
  out = out or {}
  local f = io.open("/proc/" .. pid .. "/task/" .. pid .. "/children", "r")
  if f then
    local text = f:read("*a") or ""
    f:close()
    for child in text:gmatch("%d+") do
      out[#out + 1] = { pid = tonumber(child), start = start_time(child) }
      descendants(child, out)
    end
  end
  return out
end

--- Signals every process in `tree` that is still the one recorded (setsid strays, and a sandbox's namespace init,
--- which only SIGKILL reaches from outside).
local function signal_list(tree, sig)
  for _, p in ipairs(tree) do
    if p.start and start_time(p.pid) == p.start then
      pcall(vim.loop.kill, p.pid, sig)
    end
  end
end

--- The job's process group (its own session, see `detach`), then the tree.
local function signal_tree(pid, tree, sig)
  pcall(vim.loop.kill, -pid, sig)
  signal_list(tree, sig)
end

--- Joins what jobstart hands a callback back into the raw bytes.
local function chunk_of(data)
  return table.concat(data, "\n")
end

---@param argv string[]
---@param opts flemma.sandbox.JobOpts
---@return flemma.sandbox.JobHandle|nil handle, string|nil err
function M.run(argv, opts)
  if type(opts) ~= "table" or type(opts.on_exit) ~= "function" then
    error("flemma-sandbox: job.run: opts.on_exit must be a function", 2)
  end
  for _, key in ipairs({ "timeout_ms", "grace_ms", "output_limit" }) do
    local v = opts[key]
    if v ~= nil and (type(v) ~= "number" or v < 0) then
      error(string.format("flemma-sandbox: job.run: opts.%s must be a non-negative number", key), 2)
    end
  end
  frontmatter.sync(opts.bufnr)
  local wrapped, err = sandbox.wrap_command(argv, opts.bufnr, opts.sandbox_opts)
  if not wrapped then
    return nil, err
  end
  local limit = opts.output_limit or M.defaults.output_limit
  local out, errs = capture.new(limit), capture.new(limit)
  local timed_out, cancelled, done = false, false, false
  local timers = {}
  local pid

  local function stop_timers()
    for _, t in ipairs(timers) do
      if not t:is_closing() then
        t:stop()
        t:close()
      end
    end
  end

  local function after(ms, fn)
    local t = vim.loop.new_timer()
    timers[#timers + 1] = t
    t:start(ms, 0, vim.schedule_wrap(fn))
  end

  -- what was running when termination began; killed for good at the end
  local doomed

  --- SIGTERM now, SIGKILL after the grace period unless it ended. Whatever
  --- of the tree outlives the job's own process gets SIGKILL at its exit:
  --- a stop during bwrap's setup can leave the sandbox's init orphaned.
  local function terminate()
    if done or not pid or doomed then
      return
    end
    doomed = descendants(pid)
    signal_tree(pid, doomed, SIGTERM)
    after(opts.grace_ms or M.defaults.grace_ms, function()
      if not done then
        signal_tree(pid, descendants(pid, doomed), SIGKILL)
      end
    end)
  end

  local id = vim.fn.jobstart(wrapped, {
    cwd = opts.cwd,
    env = opts.env,
    -- own session and process group, so the whole group can be signalled
    detach = true,
    on_stdout = function(_, data)
      out:add(chunk_of(data))
    end,
    on_stderr = function(_, data)
      errs:add(chunk_of(data))
    end,
    on_exit = function(job_id, code)
      done = true
      running[job_id] = nil
      stop_timers()
      if doomed then
        signal_list(doomed, SIGKILL)
      end
      local stdout, cut_out, dropped_out = out:result()
      local stderr, cut_err, dropped_err = errs:result()
      opts.on_exit({
        stdout = stdout,
        stderr = stderr,
        exit_code = code,
        signal = (code > 128 and code <= 128 + 64) and code - 128 or nil,
        timed_out = timed_out,
        cancelled = cancelled,
        truncated = cut_out or cut_err,
        stdout_dropped = dropped_out,
        stderr_dropped = dropped_err,
        sandboxed = wrapped ~= argv,
      })
    end,
  })
  if id <= 0 then
    return nil, id == -1 and ("not executable: " .. tostring(wrapped[1])) or "invalid arguments to jobstart"
  end
  pid = vim.fn.jobpid(id)
  if opts.stdin then
    vim.fn.chansend(id, opts.stdin)
  end
  vim.fn.chanclose(id, "stdin")
  running[id] = function(sig)
    signal_tree(pid, descendants(pid), sig)
  end
  if opts.timeout_ms then
    after(opts.timeout_ms, function()
      if not done then
        timed_out = true
        terminate()
      end
    end)
  end
  return {
    id = id,
    pid = pid,
    cancel = function()
      if not done then
        cancelled = true
        terminate()
      end
    end,
  }
end

--- Kills every job still running (Neovim is exiting; detached jobs would
--- otherwise outlive it).
function M.kill_all()
  for id, kill in pairs(running) do
    kill(SIGKILL)
    running[id] = nil
  end
end

return M
