--- Runs a command through the buffer's sandbox without blocking the editor
--- (libuv processes and pipes), bounds what it keeps of the output, and
--- on timeout or cancel leaves no process behind (SIGTERM, then SIGKILL
--- after a grace period).
local blocked = require("flemma_sandbox.run.blocked")
local bwrap = require("flemma_sandbox.backends.bwrap")
local capture = require("flemma_sandbox.run.capture")
local end_of_run = require("flemma_sandbox.run.end_of_run")
local proc = require("flemma_sandbox.run.proc")

-- vim.uv from Neovim 0.10; vim.loop before (deprecated on 0.12)
local uv = vim.uv or vim.loop

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

--- The environment for a child: Neovim's own, with opts.env on top.
---@param extra table<string, string>|nil
---@return string[]
local function environment(extra)
  local env = vim.fn.environ()
  for k, v in pairs(extra or {}) do
    env[k] = v
  end
  local list = {}
  for k, v in pairs(env) do
    list[#list + 1] = k .. "=" .. v
  end
  return list
end

---@param argv string[]
---@param opts flemma_sandbox.JobOpts
---@return flemma_sandbox.JobHandle|nil handle, string|nil err
local function run_once(argv, opts)
  if type(opts) ~= "table" or type(opts.on_exit) ~= "function" then
    error("flemma-sandbox: job.run: opts.on_exit must be a function", 2)
  end
  for _, key in ipairs({ "timeout_ms", "grace_ms", "output_limit" }) do
    local v = opts[key]
    if v ~= nil and (type(v) ~= "number" or v < 0) then
      error(string.format("flemma-sandbox: job.run: opts.%s must be a non-negative number", key), 2)
    end
  end
  if type(opts.wrap) ~= "function" then
    error("flemma-sandbox: job.run: opts.wrap must be a function (flemma_sandbox.wrapper(bufnr) gives one)", 2)
  end
  -- inside the sandbox the environment is rebuilt: the wrapper passes env through
  local wrapped, err, record = opts.wrap(argv, opts.env)
  if not wrapped then
    return nil, err
  end
  local check_file = end_of_run.prepare(record)
  local limit = opts.output_limit or M.defaults.output_limit
  local out, errs = capture.new(limit), capture.new(limit)
  local stdin, stdin_fd = proc.input_pipe()
  local stdout, stdout_fd = proc.output_pipe()
  local stderr, stderr_fd = proc.output_pipe()
  local timed_out, cancelled, done = false, false, false
  local exit_code, term_signal, open_streams = nil, nil, 2
  local timers, doomed = {}, nil
  local process, pid

  local function close(h)
    if h and not h:is_closing() then
      h:close()
    end
  end
  local held_pipes = {}

  local function after(ms, fn)
    local t = uv.new_timer()
    timers[#timers + 1] = t
    t:start(ms, 0, fn)
  end

  local spill = opts.spill_path and io.open(opts.spill_path, "w+b")
  local spill_max = opts.spill_max_bytes or math.huge
  local spill_seen = 0
  local function spill_write(data)
    local room = spill_max - spill_seen
    spill_seen = spill_seen + #data
    if spill and room > 0 then
      spill:write(#data > room and data:sub(1, room) or data)
    end
  end
  --- Closes the spill file; past its cap it ends with a line saying so.
  local function spill_close()
    if not spill then
      return nil
    end
    local kept = math.min(spill_seen, spill_max)
    if spill_seen > spill_max then
      local last = "\n"
      if kept > 0 then
        spill:seek("set", kept - 1)
        last = spill:read(1) or "\n"
        spill:seek("end")
      end
      spill:write(
        string.format(
          "%s[flemma-sandbox: output cut here: the first %d of %d bytes were kept (tools.output_file_max_bytes)]\n",
          last == "\n" and "" or "\n",
          kept,
          spill_seen
        )
      )
    end
    spill:close()
    spill = nil
    return { kept = kept, total = spill_seen }
  end

  -- Reported once the process has exited and both streams reached EOF, so
  -- no output arrives after the result.
  local function finish()
    if exit_code == nil or open_streams > 0 or done then
      return
    end
    done = true
    running[pid] = nil
    for _, t in ipairs(timers) do
      close(t)
    end
    if doomed then
      proc.signal_list(doomed, SIGKILL)
    end
    local spilled = spill_close()
    local text_out, cut_out, dropped_out = out:result()
    local text_err, cut_err, dropped_err = errs:result()
    local signal = term_signal ~= 0 and term_signal or nil
    if not signal and exit_code > 128 and exit_code <= 128 + 64 then
      signal = exit_code - 128 -- bwrap and shells report a signal this way
    end
    end_of_run.finish(check_file, function(check_err, recs, quarantined)
      blocked.note(recs)
      local result = {
        stdout = text_out,
        stderr = text_err .. check_err,
        exit_code = term_signal ~= 0 and 128 + term_signal or exit_code,
        signal = signal,
        timed_out = timed_out,
        cancelled = cancelled,
        truncated = cut_out or cut_err,
        stdout_dropped = dropped_out,
        stderr_dropped = dropped_err,
        sandboxed = wrapped ~= argv,
        quarantined = quarantined,
        records = recs,
        spill = spilled,
      }
      vim.schedule(function()
        opts.on_exit(result)
      end)
    end)
  end

  --- SIGTERM now, SIGKILL after the grace period unless it ended. Whatever
  --- of the tree outlives the job's own process gets SIGKILL at its exit:
  --- a stop during bwrap's setup can leave the sandbox's init orphaned.
  local function terminate()
    if done or doomed then
      return
    end
    doomed = proc.descendants(pid)
    proc.signal_tree(pid, doomed, SIGTERM)
    after(opts.grace_ms or M.defaults.grace_ms, function()
      if exit_code == nil then
        proc.signal_tree(pid, proc.descendants(pid, doomed), SIGKILL)
      end
    end)
  end

  local spawn_err
  process, pid = uv.spawn(wrapped[1], {
    args = { unpack(wrapped, 2) },
    stdio = { stdin_fd or stdin, stdout_fd or stdout, stderr_fd or stderr },
    cwd = opts.cwd,
    env = environment(opts.env),
    -- own session and process group, so the whole group can be signalled
    detached = true,
  }, function(code, sig)
    exit_code, term_signal = code, sig
    close(process)
    if open_streams > 0 then
      -- Something else still holds the output open. Give it the grace
      -- period (none when we are stopping the job), then kill it; and never
      -- wait for output forever.
      after(doomed and 0 or (opts.grace_ms or M.defaults.grace_ms), function()
        proc.signal_list(
          vim.tbl_map(function(p)
            return { pid = p, start = proc.start_time(p) }
          end, proc.pipe_holders(held_pipes)),
          SIGKILL
        )
        after(1000, function()
          close(stdout)
          close(stderr)
          open_streams = 0
          finish()
        end)
      end)
    end
    finish()
  end)
  -- the child has its own copies; ours would keep EOF from ever arriving
  for _, fd in ipairs({ stdin_fd or false, stdout_fd or false, stderr_fd or false }) do
    if fd then
      uv.fs_close(fd)
    end
  end
  if not process then
    spawn_err = pid
    spill_close()
    for _, h in ipairs({ stdin, stdout, stderr }) do
      close(h)
    end
    end_of_run.finish(check_file, function() end)
    return nil, string.format("cannot start %s: %s", wrapped[1], tostring(spawn_err))
  end

  -- Output is consumed as it is read: vim.fn.jobstart queues every chunk
  -- before its callback runs, which let 1 GB of output grow Neovim to 1 GB.
  for _, stream in ipairs({ { stdout, out }, { stderr, errs } }) do
    local pipe, cap = stream[1], stream[2]
    local id = proc.pipe_id(pipe)
    if id then
      held_pipes[id] = true
    end
    pipe:read_start(function(_, data)
      if data then
        cap:add(data)
        spill_write(data)
      elseif not pipe:is_closing() then
        close(pipe)
        open_streams = open_streams - 1
        finish()
      end
    end)
  end
  if opts.stdin and opts.stdin ~= "" then
    stdin:write(opts.stdin)
  end
  stdin:shutdown(function()
    close(stdin)
  end)

  running[pid] = function(sig)
    proc.signal_tree(pid, proc.descendants(pid), sig)
  end
  if opts.timeout_ms then
    after(opts.timeout_ms, function()
      if exit_code == nil then
        timed_out = true
        terminate()
      end
    end)
  end
  return {
    pid = pid,
    cancel = function()
      if exit_code == nil then
        cancelled = true
        terminate()
      end
    end,
  }
end

--- bwrap failed before the command started because a path it was to mount
--- over vanished after the policy was read (a host socket closing, say).
---@param r flemma_sandbox.JobResult
---@return boolean
function M.setup_raced(r)
  return r.sandboxed and not r.cancelled and not r.timed_out and bwrap.lost_race(r.exit_code, r.stdout, r.stderr)
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
      local again = run_once(argv, opts)
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
