--- The one process runner: every process the plugin starts goes through
--- here (the lint gate scripts/check_spawns.lua fails on a start anywhere
--- else in lua/). Neovim's loop is `vim.uv` from 0.10 and `vim.loop`
--- before; both are found here only.
---
--- spawn: async, pipes, on_exit(result) once the process exited and its
--- output ended, a timeout, a cap on what is kept, and a handle whose
--- kill() signals what it started (its process group).
--- run, lines: synchronous, for callers that wait today: Neovim's
--- system() in Neovim, /bin/sh through io.popen under plain LuaJIT (the
--- command line, busted).
--- uv_spawn: the loop's own spawn for run/job.lua, which manages its
--- pipes, pty and process group itself.
local editor = require("flemma_sandbox.base.editor")
local M = {}

local in_nvim = editor.present()

--- Neovim's libuv (vim.uv, or vim.loop before 0.10), or nil without it.
---@return table|nil
function M.uv()
  return in_nvim and (vim.uv or vim.loop) or nil
end

--- The loop's spawn as it is: for run/job.lua.
---@param file string
---@param options table uv.spawn's
---@param on_exit fun(code: integer, signal: integer)
---@return userdata|nil handle, integer|string pid_or_err
function M.uv_spawn(file, options, on_exit)
  local uv = M.uv()
  if not uv then
    return nil, "no event loop"
  end
  return uv.spawn(file, options, on_exit)
end

---@class flemma_sandbox.ProcessOpts
---@field cwd? string
---@field env? string[] the whole environment, "NAME=VALUE" words (nil: Neovim's)
---@field timeout? integer ms until the process group is killed (SIGKILL)
---@field max_output? integer bytes kept of stdout and of stderr each (nil: all)
---@field stdout? boolean false: stdout not read (goes nowhere)
---@field stderr? boolean false: stderr not read (goes nowhere)

---@class flemma_sandbox.ProcessResult
---@field code integer exit status (128 + signal when killed)
---@field signal integer the signal that ended it, else 0
---@field stdout string
---@field stderr string
---@field timed_out boolean killed by opts.timeout
---@field cancelled boolean killed by the handle's kill()
---@field truncated boolean output beyond opts.max_output was dropped

---@class flemma_sandbox.Process
---@field pid integer
---@field kill fun(self: flemma_sandbox.Process, signal?: integer|string): boolean
---@field is_done fun(self: flemma_sandbox.Process): boolean

--- A stream's keeper: what it read, up to max bytes.
---@param max integer|nil
local function keeper(max)
  local k = { chunks = {}, size = 0, dropped = false }
  function k.add(data)
    if max and k.size + #data > max then
      data = data:sub(1, max - k.size)
      k.dropped = true
    end
    if #data > 0 then
      k.chunks[#k.chunks + 1] = data
      k.size = k.size + #data
    end
  end
  return k
end

local function close(h)
  if h and not h:is_closing() then
    h:close()
  end
end

--- Signals the process group of a running process (it is a session
--- leader: spawn makes it one), else the process itself.
---@param uv table
---@param p table the state of spawn
---@param signal integer|string
---@return boolean
local function signal_group(uv, p, signal)
  if p.exited or not p.handle then
    return false
  end
  local ok = uv.kill(-p.pid, signal) == 0
  if not ok then
    ok = p.handle:kill(signal) == 0
  end
  return ok
end

--- The result when the process exited and every pipe it wrote ended.
---@param p table
local function finish_if_done(p)
  if not p.exited or p.open > 0 or p.finished then
    return
  end
  p.finished = true
  close(p.timer)
  local signal = p.signal or 0
  p.on_exit({
    code = signal ~= 0 and 128 + signal or p.code,
    signal = signal,
    stdout = table.concat(p.out.chunks),
    stderr = table.concat(p.err.chunks),
    timed_out = p.timed_out,
    cancelled = p.cancelled,
    truncated = p.out.dropped or p.err.dropped,
  })
end

--- Reads a pipe into its keeper until it ends.
---@param p table
---@param pipe userdata
---@param k table
local function read_into(p, pipe, k)
  pipe:read_start(function(_, data)
    if data then
      return k.add(data)
    end
    close(pipe)
    p.open = p.open - 1
    finish_if_done(p)
  end)
end

--- The handle spawn returns.
---@param uv table
---@param p table
---@return flemma_sandbox.Process
local function handle_of(uv, p)
  return {
    pid = p.pid,
    kill = function(_, signal)
      p.cancelled = p.cancelled or not p.exited
      return signal_group(uv, p, signal or "sigkill")
    end,
    is_done = function()
      return p.finished == true
    end,
  }
end

--- Starts argv in the background, stdin closed, in a session of its own
--- (so kill() and the timeout reach what it starts too). on_exit(result)
--- runs in the loop's callback (not the main loop: vim.schedule what
--- needs the API) once it exited and its output ended. When it cannot
--- start: nil and why, and on_exit is never called.
---@param argv string[]
---@param opts flemma_sandbox.ProcessOpts|nil
---@param on_exit fun(result: flemma_sandbox.ProcessResult)
---@return flemma_sandbox.Process|nil handle, string|nil err
function M.spawn(argv, opts, on_exit)
  opts = opts or {}
  local uv = M.uv()
  if not uv then
    return nil, "cannot start " .. tostring(argv[1]) .. ": no event loop"
  end
  local p = { on_exit = on_exit, open = 0, timed_out = false, cancelled = false }
  p.out, p.err = keeper(opts.max_output), keeper(opts.max_output)
  local pipes = {
    opts.stdout ~= false and uv.new_pipe(false) or nil,
    opts.stderr ~= false and uv.new_pipe(false) or nil,
  }
  local pid_or_err
  p.handle, pid_or_err = uv.spawn(argv[1], {
    args = { unpack(argv, 2) },
    stdio = { nil, pipes[1], pipes[2] },
    cwd = opts.cwd,
    env = opts.env,
    detached = true,
  }, function(code, signal)
    p.exited, p.code, p.signal = true, code, signal
    close(p.handle)
    finish_if_done(p)
  end)
  if not p.handle then
    close(pipes[1])
    close(pipes[2])
    return nil, "cannot start " .. tostring(argv[1]) .. ": " .. tostring(pid_or_err)
  end
  p.pid = pid_or_err
  for i, k in ipairs({ p.out, p.err }) do
    if pipes[i] then
      p.open = p.open + 1
      read_into(p, pipes[i], k)
    end
  end
  if opts.timeout then
    p.timer = uv.new_timer()
    p.timer:start(opts.timeout, 0, function()
      p.timed_out = not p.exited
      signal_group(uv, p, "sigkill")
    end)
  end
  return handle_of(uv, p)
end

---@class flemma_sandbox.ProcessRunOpts
---@field input? string written to its stdin (else stdin is empty)
---@field stderr? "merge"|"null" with stdout (Neovim's system() does), or dropped
---@field raw? boolean stdout byte for byte (system() turns NUL into SOH): the shell's pipe even in Neovim

--- Single-quotes a word for /bin/sh.
---@param s string
---@return string
local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local RC_MARK = "\n__flemma_sandbox_rc="

--- argv through /bin/sh and io.popen: its output and exit status (the
--- shell prints it after the output: LuaJIT's close() does not return it).
---@param argv string[]
---@param opts flemma_sandbox.ProcessRunOpts
---@return string output, integer code
local function run_shell(argv, opts)
  local words = {}
  for i, word in ipairs(argv) do
    words[i] = quote(word)
  end
  local input_file
  local stdin = "</dev/null"
  if opts.input then
    input_file = os.tmpname()
    local f = io.open(input_file, "wb")
    if f then
      f:write(opts.input)
      f:close()
      stdin = "<" .. quote(input_file)
    end
  end
  local redirect = opts.stderr == "null" and "2>/dev/null" or "2>&1"
  local cmd = table.concat(words, " ") .. " " .. redirect .. " " .. stdin
  local f = io.popen(cmd .. "; printf '" .. RC_MARK:gsub("\n", "\\n") .. "%d' $?", "r")
  local text = f and f:read("*a") or ""
  if f then
    f:close()
  end
  if input_file then
    os.remove(input_file)
  end
  local out, code = text:match("^(.*)" .. RC_MARK .. "(%d+)$")
  if not out then
    return text, 127
  end
  return out, tonumber(code) --[[@as integer]]
end

--- Runs argv and waits for it: its output (stdout, and stderr unless
--- opts.stderr is "null") and its exit status. Neovim's system() in
--- Neovim (unless opts.stderr = "null" or opts.raw), else /bin/sh.
---@param argv string[]
---@param opts? flemma_sandbox.ProcessRunOpts
---@return string output, integer code
function M.run(argv, opts)
  opts = opts or {}
  if in_nvim and opts.stderr ~= "null" and not opts.raw then
    -- an input of nil would be written as "null"
    local out = opts.input and vim.fn.system(argv, opts.input) or vim.fn.system(argv)
    return out, vim.v.shell_error
  end
  return run_shell(argv, opts)
end

--- M.run's output as lines (Neovim's systemlist() in Neovim).
---@param argv string[]
---@param opts? flemma_sandbox.ProcessRunOpts
---@return string[] lines, integer code
function M.lines(argv, opts)
  opts = opts or {}
  if in_nvim and opts.stderr ~= "null" and not opts.raw then
    local lines = opts.input and vim.fn.systemlist(argv, opts.input) or vim.fn.systemlist(argv)
    return lines, vim.v.shell_error
  end
  local out, code = run_shell(argv, opts)
  local lines = {}
  if out ~= "" then
    for line in (out:gsub("\n$", "") .. "\n"):gmatch("([^\n]*)\n") do
      lines[#lines + 1] = line
    end
  end
  return lines, code
end

--- Runs argv and waits for it, its output thrown away: whether it exited 0.
---@param argv string[]
---@return boolean
function M.quietly(argv)
  local _, code = M.run(argv, { stderr = in_nvim and "merge" or "null" })
  return code == 0
end

return M
