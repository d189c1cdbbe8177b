--- A host process that binds a unix socket while a sandboxed command runs
--- (luajit spec/escape/listen_later.lua DIR NAME RESULT SECONDS): it
--- changes into DIR, binds NAME as given (a relative name is listed in
--- /proc/net/unix without its folder), accepts for SECONDS or until
--- RESULT.stop exists, then writes "accepted" or "none" to RESULT.
package.path = "spec/?.lua;" .. package.path
local ffi = require("ffi")
local net = require("support.net")

ffi.cdef([[
int chdir(const char *path);
int poll(void *fds, unsigned long n, int timeout);
]])

local dir, name, result, seconds = arg[1], arg[2], arg[3], tonumber(arg[4]) or 10
assert(ffi.C.chdir(dir) == 0, "chdir " .. dir)
local l = net.listen_kind("unix", name)
local got = false
local waited = 0
while waited < seconds * 1000 and not got do
  got = l.accepted()
  local stop = io.open(result .. ".stop", "r")
  if stop then
    stop:close()
    got = got or l.accepted()
    break
  end
  ffi.C.poll(nil, 0, 20)
  waited = waited + 20
end
l.close()
os.remove(dir .. "/" .. name)
local f = assert(io.open(result, "w"))
f:write(got and "accepted" or "none")
f:close()
