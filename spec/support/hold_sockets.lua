--- A host program (luajit spec/support/hold_sockets.lua DIR N) that binds N unix
--- sockets in DIR, as a desktop session's programs do, and holds them until
--- DIR/stop exists.
package.path = "spec/?.lua;" .. package.path
local ffi = require("ffi")
local net = require("support.net")

ffi.cdef("int poll(void *fds, unsigned long n, int timeout);")

local dir, n = arg[1], tonumber(arg[2])
local held = {}
for i = 1, n do
  held[i] = net.listen_kind("unix", string.format("%s/s%d.sock", dir, i))
end
local ready = assert(io.open(dir .. "/ready", "w"))
ready:close()
while not io.open(dir .. "/stop", "r") do
  ffi.C.poll(nil, 0, 50)
end
for _, l in ipairs(held) do
  l.close()
end
