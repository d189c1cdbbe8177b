--- Runs a command through the buffer's sandbox without blocking the editor
--- (libuv processes and pipes), bounds what it keeps of the output, and
--- on timeout or cancel leaves no process behind (SIGTERM, then SIGKILL
--- after a grace period).
local blocked = require("flemma_sandbox.run.blocked")
local capture = require("flemma_sandbox.run.capture")
local end_of_run = require("flemma_sandbox.run.end_of_run")
local proc = require("flemma_sandbox.run.proc")
local records = require("flemma_sandbox.run.records")
local process = require("flemma_sandbox.base.process")
local spill = require("flemma_sandbox.run.spill")

local uv = process.uv()

local M = {}

---@class flemma_sandbox.JobResult
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
---@field quarantined flemma_sandbox.Quarantined[] what the command created at protected names, moved after it ended
---@field records flemma_sandbox.Record[] what the helper and the proxy reported (run/records.lua)
---@field spill { kept: integer, total: integer }|nil bytes of output kept in opts.spill_path, and bytes seen
---@field error string|nil set when the command could not be started

---@class flemma_sandbox.JobOpts
--- wraps argv for its sandbox, given opts.env to pass through (the public
--- API's wrapper(bufnr), or Flemma's ctx.sandbox.wrap_command); with
--- the wrap's record when there is one (run/end_of_run.lua)
---@field wrap fun(argv: string[], env: table<string, string>|nil): string[]|nil, string|nil, flemma_sandbox.WrapRecord?
---@field cwd? string
---@field env? table<string, string>
---@field stdin? string written, then stdin is closed (it is always closed)
---@field timeout_ms? integer
---@field grace_ms? integer between SIGTERM and SIGKILL, default 2000
---@field output_limit? integer characters kept per stream, default 12000
---@field spill_path? string also write all output (both streams) to this file
---@field spill_max_bytes? integer stop writing the spill file past this size (then a last line says so)
---@field on_exit fun(result: flemma_sandbox.JobResult)

---@class flemma_sandbox.JobHandle
---@field pid integer
---@field cancel fun()

M.defaults = { grace_ms = 2000, output_limit = 12000 }

local SIGTERM, SIGKILL = 15, 9

--- Running jobs by pid, so VimLeavePre can stop what is still running.
---@type table<integer, fun(sig: integer)>
local running = {}

---@class flemma_sandbox.Job one attempt of a run (run_once), shared by its parts
---@field argv string[] what the caller asked to run
---@field opts flemma_sandbox.JobOpts
---@field wrapped string[] argv as wrapped for its sandbox
---@field ran table end_of_run.prepare's handle
---@field out flemma_sandbox.Capture
---@field errs flemma_sandbox.Capture
---@field stdin userdata
---@field stdout userdata
---@field stderr userdata
---@field spill flemma_sandbox.Spill
---@field timed_out boolean
---@field cancelled boolean
---@field done boolean the result was reported
---@field exit_code integer|nil nil while the process runs
---@field term_signal integer|nil
---@field open_streams integer streams not at EOF yet
---@field timers userdata[]
---@field doomed table|nil the tree's processes when it was told to stop
---@field process userdata|nil
---@field pid integer|nil
---@field held_pipes table<string, boolean> our pipes' ids, to find who else holds them

local function close(h)
  if h and not h:is_closing() then
    h:close()
  end
end

--- Runs fn after ms, on a timer closed when the job's result is reported.
---@param j flemma_sandbox.Job
local function after(j, ms, fn)
  local t = uv.new_timer()
  j.timers[#j.timers + 1] = t
  t:start(ms, 0, fn)
end

--- The result the caller gets, from what the job saw and the check after
--- the run.
---@param j flemma_sandbox.Job
---@return flemma_sandbox.JobResult
local function result_of(j, spilled, check_err, recs, quarantined)
  local text_out, cut_out, dropped_out = j.out:result()
  local text_err, cut_err, dropped_err = j.errs:result()
  local signal = j.term_signal ~= 0 and j.term_signal or nil
  if not signal and j.exit_code > 128 and j.exit_code <= 128 + 64 then
    signal = j.exit_code - 128 -- bwrap and shells report a signal this way
  end
  return {
    stdout = text_out,
    stderr = text_err .. check_err,
    exit_code = j.term_signal ~= 0 and 128 + j.term_signal or j.exit_code,
    signal = signal,
    timed_out = j.timed_out,
    cancelled = j.cancelled,
    truncated = cut_out or cut_err,
    stdout_dropped = dropped_out,
    stderr_dropped = dropped_err,
    sandboxed = j.wrapped ~= j.argv,
    quarantined = quarantined,
    records = recs,
    spill = spilled,
  }
end

--- Reported once the process has exited and both streams reached EOF, so
--- no output arrives after the result.
---@param j flemma_sandbox.Job
local function finish(j)
  if j.exit_code == nil or j.open_streams > 0 or j.done then
    return
  end
  j.done = true
  running[j.pid] = nil
  for _, t in ipairs(j.timers) do
    close(t)
  end
  if j.doomed then
    proc.signal_list(j.doomed, SIGKILL)
  end
  local spilled = j.spill:close()
  end_of_run.finish(j.ran, function(check_err, recs, quarantined)
    blocked.note(recs)
    local result = result_of(j, spilled, check_err, recs, quarantined)
    vim.schedule(function()
      j.opts.on_exit(result)
    end)
  end)
end

--- SIGTERM now, SIGKILL after the grace period unless it ended. Whatever
--- of the tree outlives the job's own process gets SIGKILL at its exit:
--- a stop during bwrap's setup can leave the sandbox's init orphaned.
---@param j flemma_sandbox.Job
local function terminate(j)
  if j.done or j.doomed then
    return
  end
  j.doomed = proc.descendants(j.pid)
  proc.signal_tree(j.pid, j.doomed, SIGTERM)
  after(j, j.opts.grace_ms or M.defaults.grace_ms, function()
    if j.exit_code == nil then
      proc.signal_tree(j.pid, proc.descendants(j.pid, j.doomed), SIGKILL)
    end
  end)
end

--- The process exited.
---@param j flemma_sandbox.Job
local function on_process_exit(j, code, sig)
  j.exit_code, j.term_signal = code, sig
  close(j.process)
  if j.open_streams > 0 then
    -- Something else still holds the output open. Give it the grace
    -- period (none when we are stopping the job), then kill it; and never
    -- wait for output forever.
    after(j, j.doomed and 0 or (j.opts.grace_ms or M.defaults.grace_ms), function()
      proc.signal_list(
        vim.tbl_map(function(p)
          return { pid = p, start = proc.start_time(p) }
        end, proc.pipe_holders(j.held_pipes)),
        SIGKILL
      )
      after(j, 1000, function()
        close(j.stdout)
        close(j.stderr)
        j.open_streams = 0
        finish(j)
      end)
    end)
  end
  finish(j)
end

--- Starts the wrapped command with the job's pipes; the child's ends of
--- them are closed here (the child has its own copies; ours would keep EOF
--- from ever arriving).
---@param j flemma_sandbox.Job
---@param fds (integer|false)[] the child's ends: stdin, stdout, stderr (false: the pipe itself)
---@return string|nil err
local function spawn(j, fds)
  j.process, j.pid = process.uv_spawn(j.wrapped[1], {
    args = { unpack(j.wrapped, 2) },
    stdio = { fds[1] or j.stdin, fds[2] or j.stdout, fds[3] or j.stderr },
    cwd = j.opts.cwd,
    env = proc.environment(j.opts.env),
    -- own session and process group, so the whole group can be signalled
    detached = true,
  }, function(code, sig)
    on_process_exit(j, code, sig)
  end)
  for _, fd in ipairs(fds) do
    if fd then
      uv.fs_close(fd)
    end
  end
  if j.process then
    return nil
  end
  local spawn_err = j.pid
  j.spill:close()
  for _, h in ipairs({ j.stdin, j.stdout, j.stderr }) do
    close(h)
  end
  end_of_run.finish(j.ran, function() end)
  return string.format("cannot start %s: %s", j.wrapped[1], tostring(spawn_err))
end

--- Output is consumed as it is read: vim.fn.jobstart queues every chunk
--- before its callback runs, which let 1 GB of output grow Neovim to 1 GB.
---@param j flemma_sandbox.Job
local function read_output(j)
  for _, stream in ipairs({ { j.stdout, j.out }, { j.stderr, j.errs } }) do
    local pipe, cap = stream[1], stream[2]
    local id = proc.pipe_id(pipe)
    if id then
      j.held_pipes[id] = true
    end
    pipe:read_start(function(_, data)
      if data then
        cap:add(data)
        j.spill:write(data)
      elseif not pipe:is_closing() then
        close(pipe)
        j.open_streams = j.open_streams - 1
        finish(j)
      end
    end)
  end
end

--- The job's handle, with its stdin written and closed and its time limit
--- set.
---@param j flemma_sandbox.Job
---@return flemma_sandbox.JobHandle
local function started(j)
  if j.opts.stdin and j.opts.stdin ~= "" then
    j.stdin:write(j.opts.stdin)
  end
  j.stdin:shutdown(function()
    close(j.stdin)
  end)
  local pid = j.pid
  running[pid] = function(sig)
    proc.signal_tree(pid, proc.descendants(pid), sig)
  end
  if j.opts.timeout_ms then
    after(j, j.opts.timeout_ms, function()
      if j.exit_code == nil then
        j.timed_out = true
        terminate(j)
      end
    end)
  end
  return {
    pid = pid,
    cancel = function()
      if j.exit_code == nil then
        j.cancelled = true
        terminate(j)
      end
    end,
  }
end

--- Refuses opts a run cannot use (the error names the caller of run()).
---@param opts flemma_sandbox.JobOpts
local function check_opts(opts)
  if type(opts) ~= "table" or type(opts.on_exit) ~= "function" then
    error("flemma-sandbox: job.run: opts.on_exit must be a function", 3)
  end
  for _, key in ipairs({ "timeout_ms", "grace_ms", "output_limit" }) do
    local v = opts[key]
    if v ~= nil and (type(v) ~= "number" or v < 0) then
      error(string.format("flemma-sandbox: job.run: opts.%s must be a non-negative number", key), 3)
    end
  end
  if type(opts.wrap) ~= "function" then
    error("flemma-sandbox: job.run: opts.wrap must be a function (flemma_sandbox.wrapper(bufnr) gives one)", 3)
  end
end

---@param argv string[]
---@param opts flemma_sandbox.JobOpts
---@return flemma_sandbox.JobHandle|nil handle, string|nil err
local function run_once(argv, opts)
  check_opts(opts)
  -- inside the sandbox the environment is rebuilt: the wrapper passes env through
  local wrapped, err, record = opts.wrap(argv, opts.env)
  if not wrapped then
    return nil, err
  end
  local limit = opts.output_limit or M.defaults.output_limit
  local j = {
    argv = argv,
    opts = opts,
    wrapped = wrapped,
    ran = end_of_run.prepare(record),
    out = capture.new(limit),
    errs = capture.new(limit),
    timed_out = false,
    cancelled = false,
    done = false,
    open_streams = 2,
    timers = {},
    held_pipes = {},
  }
  local stdin_fd, stdout_fd, stderr_fd
  j.stdin, stdin_fd = proc.input_pipe()
  j.stdout, stdout_fd = proc.output_pipe()
  j.stderr, stderr_fd = proc.output_pipe()
  j.spill = spill.new(opts.spill_path, opts.spill_max_bytes)
  local spawn_err = spawn(j, { stdin_fd or false, stdout_fd or false, stderr_fd or false })
  if spawn_err then
    return nil, spawn_err
  end
  read_output(j)
  return started(j)
end

--- bwrap failed before the command started because a path it was to mount
--- over vanished after the policy was read (a host socket closing, say).
---@param r flemma_sandbox.JobResult
---@return boolean
function M.setup_raced(r)
  return r.sandboxed and not r.cancelled and not r.timed_out and records.lost_race(r.exit_code, r.records)
end

--- Runs argv in the buffer's sandbox. A start that lost a race with the
--- host (see M.setup_raced) is tried once more with a fresh policy; the
--- handle cancels whichever attempt runs.
---@param argv string[]
---@param opts flemma_sandbox.JobOpts
---@return flemma_sandbox.JobHandle|nil handle, string|nil err
function M.run(argv, opts)
  if type(opts) ~= "table" or type(opts.on_exit) ~= "function" then
    error("flemma-sandbox: job.run: opts.on_exit must be a function", 2)
  end
  local current, retried
  local first = setmetatable({
    on_exit = function(r)
      if retried or not M.setup_raced(r) then
        return opts.on_exit(r)
      end
      retried = true
      local again_opts = setmetatable({}, { __index = opts })
      function again_opts.on_exit(r2)
        r2.records = records.after_retry(r.records, r2.records)
        return opts.on_exit(r2)
      end
      local again = run_once(argv, again_opts)
      if not again then
        return opts.on_exit(r)
      end
      current = again
    end,
  }, { __index = opts })
  local handle, err = run_once(argv, first)
  if not handle then
    return nil, err
  end
  current = handle
  return {
    pid = handle.pid,
    cancel = function()
      current.cancel()
    end,
  }
end

--- Kills every job still running (Neovim is exiting; detached jobs would
--- otherwise outlive it).
function M.kill_all()
  for pid, kill in pairs(running) do
    kill(SIGKILL)
    running[pid] = nil
  end
end

return M
