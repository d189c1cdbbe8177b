--- A TCP listener on the host's loopback through LuaJIT's FFI, so specs can
--- tell whether a sandboxed process reached the host network. Only ever
--- binds 127.0.0.1.
local ffi = require("ffi")

ffi.cdef([[
typedef unsigned int socklen_t;
typedef unsigned short sa_family_t;
struct flemma_sockaddr_in { sa_family_t sin_family; uint16_t sin_port; uint32_t sin_addr; char zero[8]; };
int socket(int domain, int type, int protocol);
int bind(int fd, const void *addr, socklen_t len);
int listen(int fd, int backlog);
int accept(int fd, void *addr, socklen_t *len);
int getsockname(int fd, void *addr, socklen_t *len);
int close(int fd);
uint16_t htons(uint16_t v);
uint16_t ntohs(uint16_t v);
uint32_t htonl(uint32_t v);
]])

local AF_INET, SOCK_STREAM, SOCK_NONBLOCK = 2, 1, 2048
local INADDR_LOOPBACK = 0x7f000001

local M = {}

--- Opens a non-blocking listener on 127.0.0.1 with a free port.
---@return { port: integer, accepted: fun(): boolean, close: fun() }
function M.listen()
  local fd = ffi.C.socket(AF_INET, SOCK_STREAM + SOCK_NONBLOCK, 0)
  assert(fd >= 0, "socket failed")
  local addr = ffi.new("struct flemma_sockaddr_in")
  addr.sin_family = AF_INET
  addr.sin_port = 0
  addr.sin_addr = ffi.C.htonl(INADDR_LOOPBACK)
  assert(ffi.C.bind(fd, addr, ffi.sizeof(addr)) == 0, "bind failed")
  assert(ffi.C.listen(fd, 16) == 0, "listen failed")
  local len = ffi.new("socklen_t[1]", ffi.sizeof(addr))
  assert(ffi.C.getsockname(fd, addr, len) == 0, "getsockname failed")
  local count = 0
  return {
    port = ffi.C.ntohs(addr.sin_port),
    --- true when at least one connection has arrived so far
    accepted = function()
      while true do
        local c = ffi.C.accept(fd, nil, nil)
        if c < 0 then
          break
        end
        ffi.C.close(c)
        count = count + 1
      end
      return count > 0
    end,
    close = function()
      ffi.C.close(fd)
    end,
  }
end

return M
