--- Processes and pipes of a job, read from /proc: the process tree, who
--- still holds a job's output pipe, signalling what is still the process it
--- was (PIDs get reused), real pipes for a child's stdio and its
--- environment.
local uv = require("flemma_sandbox.base.process").uv()

local M = {}

--- Start time of a process (field 22 of /proc/PID/stat), to tell it from a
--- later process that reuses its PID.
---@param pid integer|string
---@return string|nil
function M.start_time(pid)
  local f = io.open("/proc/" .. pid .. "/stat", "r")
  if not f then
    return nil
  end
  local stat = f:read("*l") or ""
  f:close()
  -- the name may hold spaces and unbalanced parentheses ("a(b", "x) y"):
  -- the fields start after its last ")", as proc(5) says
  local fields = stat:match("^%d+ %(.*%) (.*)$")
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
---@param pid integer|string
---@param out? { pid: integer, start: string|nil }[] appended to
---@return { pid: integer, start: string|nil }[]
function M.descendants(pid, out)
  out = out or {}
  local f = io.open("/proc/" .. pid .. "/task/" .. pid .. "/children", "r")
  if f then
    local text = f:read("*a") or ""
    f:close()
    for child in text:gmatch("%d+") do
      out[#out + 1] = { pid = tonumber(child), start = M.start_time(child) }
      M.descendants(child, out)
    end
  end
  return out
end

--- Signals every process in `tree` that is still the one recorded (setsid strays, and a sandbox's namespace init,
--- which only SIGKILL reaches from outside).
---@param tree { pid: integer, start: string|nil }[]
---@param sig integer
function M.signal_list(tree, sig)
  for _, p in ipairs(tree) do
    if p.start and M.start_time(p.pid) == p.start then
      pcall(uv.kill, p.pid, sig)
    end
  end
end

--- The job's process group (its own session, see `detach`), then the tree.
---@param pid integer
---@param tree { pid: integer, start: string|nil }[]
---@param sig integer
function M.signal_tree(pid, tree, sig)
  pcall(uv.kill, -pid, sig)
  M.signal_list(tree, sig)
end

--- The pipe inode ("pipe:[123]") behind one of our pipe handles.
---@param handle userdata a luv pipe
---@return string|nil
function M.pipe_id(handle)
  local ok, fd = pcall(handle.fileno, handle)
  return ok and fd and uv.fs_readlink("/proc/self/fd/" .. fd) or nil
end

--- Processes other than Neovim that hold one of the given pipes open: what
--- is left of a command that keeps writing to its output (a background
--- process, or a sandbox whose bwrap died during its setup).
---@param ids table<string, boolean>
---@return integer[]
function M.pipe_holders(ids)
  local me, pids = uv.os_getpid(), {}
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
function M.output_pipe()
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
function M.input_pipe()
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
function M.environment(extra)
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

return M
