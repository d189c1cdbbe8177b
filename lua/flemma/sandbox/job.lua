--- Runs a command through the buffer's sandbox without blocking the editor
--- (vim.loop processes and pipes), bounds what it keeps of the output, and
--- on timeout or cancel leaves no process behind (SIGTERM, then SIGKILL
--- after a grace period).
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
---@field spill_path? string also write all output (both streams) to this file
---@field spill_max_bytes? integer stop writing the spill file past this size
---@field on_exit fun(result: flemma.sandbox.JobResult)

---@class flemma.sandbox.JobHandle
---@field pid integer
---@field cancel fun()

M.defaults = { grace_ms = 2000, output_limit = 12000 }

local SIGTERM, SIGKILL = 15, 9

--- Running jobs by pid, so VimLeavePre can stop what is still running.
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

--- The pipe inode ("pipe:[123]") behind one of our pipe handles.
local function pipe_id(handle)
  local ok, fd = pcall(handle.fileno, handle)
  return ok and fd and vim.loop.fs_readlink("/proc/self/fd/" .. fd) or nil
end

--- Processes other than Neovim that hold one of the given pipes open: what
--- is left of a command that keeps writing to its output (a background
--- process, or a sandbox whose bwrap died during its setup).
---@param ids table<string, boolean>
---@return integer[]
local function pipe_holders(ids)
  local uv, me, pids = vim.loop, vim.loop.os_getpid(), {}
  local procs = uv.fs_scandir("/proc")
  while procs do
    local name = uv.fs_scandir_next(procs)
    if not name then
      break
    end
    local pid = tonumber(name)
    if pid and pid ~= me then
      local fds = uv.fs_scandir("/proc/" .. name .. "/fd")
      while fds do
        local fd = uv.fs_scandir_next(fds)
        if not fd then
          break
        end
        local target = uv.fs_readlink("/proc/" .. name .. "/fd/" .. fd)
        if target and ids[target] then
          pids[#pids + 1] = pid
          break
        end
      end
    end
  end
  return pids
end

--- A pipe for the child's output. With uv.pipe() it is a real pipe, whose
--- inode the child's end shares, so pipe_holders() can find who still
--- writes to it (libuv's own stdio pipes are socketpairs, with two inodes).
---@return userdata pipe, integer|nil child_fd
local function output_pipe()
  local uv = vim.loop
  if uv.pipe then
    local fds = uv.pipe({ nonblock = true }, { nonblock = false })
    if fds then
      local pipe = uv.new_pipe(false)
      pipe:open(fds.read)
      return pipe, fds.write
    end
  end
  return uv.new_pipe(false), nil
end

--- The child's stdin as a real pipe too: on a socket (libuv's default),
--- bash thinks it was started by sshd and reads ~/.bashrc.
---@return userdata pipe, integer|nil child_fd
local function input_pipe()
  local uv = vim.loop
  if uv.pipe then
    local fds = uv.pipe({ nonblock = false }, { nonblock = true })
    if fds then
      local pipe = uv.new_pipe(false)
      pipe:open(fds.write)
      return pipe, fds.read
    end
  end
  return uv.new_pipe(false), nil
end

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
  local sandbox_opts = opts.sandbox_opts
  if opts.env then
    -- inside the sandbox the environment is rebuilt: pass these through
    sandbox_opts = type(sandbox_opts) == "table" and vim.deepcopy(sandbox_opts) or { bufnr = sandbox_opts }
    sandbox_opts.env = opts.env
  end
  local wrapped, err = sandbox.wrap_command(argv, opts.bufnr, sandbox_opts)
  if not wrapped then
    return nil, err
  end
  local uv = vim.loop
  local limit = opts.output_limit or M.defaults.output_limit
  local out, errs = capture.new(limit), capture.new(limit)
  local stdin, stdin_fd = input_pipe()
  local stdout, stdout_fd = output_pipe()
  local stderr, stderr_fd = output_pipe()
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

  local spill = opts.spill_path and io.open(opts.spill_path, "wb")
  local spill_left = opts.spill_max_bytes or math.huge
  local function spill_write(data)
    if spill and spill_left > 0 then
      spill:write(#data > spill_left and data:sub(1, spill_left) or data)
      spill_left = spill_left - #data
    end
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
      signal_list(doomed, SIGKILL)
    end
    if spill then
      spill:close()
    end
    local text_out, cut_out, dropped_out = out:result()
    local text_err, cut_err, dropped_err = errs:result()
    local signal = term_signal ~= 0 and term_signal or nil
    if not signal and exit_code > 128 and exit_code <= 128 + 64 then
      signal = exit_code - 128 -- bwrap and shells report a signal this way
    end
    local result = {
      stdout = text_out,
      stderr = text_err,
      exit_code = term_signal ~= 0 and 128 + term_signal or exit_code,
      signal = signal,
      timed_out = timed_out,
      cancelled = cancelled,
      truncated = cut_out or cut_err,
      stdout_dropped = dropped_out,
      stderr_dropped = dropped_err,
      sandboxed = wrapped ~= argv,
    }
    vim.schedule(function()
      opts.on_exit(result)
    end)
  end

  --- SIGTERM now, SIGKILL after the grace period unless it ended. Whatever
  --- of the tree outlives the job's own process gets SIGKILL at its exit:
  --- a stop during bwrap's setup can leave the sandbox's init orphaned.
  local function terminate()
    if done or doomed then
      return
    end
    doomed = descendants(pid)
    signal_tree(pid, doomed, SIGTERM)
    after(opts.grace_ms or M.defaults.grace_ms, function()
      if exit_code == nil then
        signal_tree(pid, descendants(pid, doomed), SIGKILL)
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
        signal_list(
          vim.tbl_map(function(p)
            return { pid = p, start = start_time(p) }
          end, pipe_holders(held_pipes)),
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
    if spill then
      spill:close()
    end
    for _, h in ipairs({ stdin, stdout, stderr }) do
      close(h)
    end
    return nil, string.format("cannot start %s: %s", wrapped[1], tostring(spawn_err))
  end

  -- Output is consumed as it is read: vim.fn.jobstart queues every chunk
  -- before its callback runs, which let 1 GB of output grow Neovim to 1 GB.
  for _, stream in ipairs({ { stdout, out }, { stderr, errs } }) do
    local pipe, cap = stream[1], stream[2]
    local id = pipe_id(pipe)
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
    signal_tree(pid, descendants(pid), sig)
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

--- Kills every job still running (Neovim is exiting; detached jobs would
--- otherwise outlive it).
function M.kill_all()
  for pid, kill in pairs(running) do
    kill(SIGKILL)
    running[pid] = nil
  end
end

return M
