--- Listeners on the host through LuaJIT's FFI, so specs can tell whether a
--- sandboxed process reached them: TCP and UDP on loopback only (127.0.0.1
--- and ::1), and unix sockets (a path, or an abstract name).
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
struct flemma_sockaddr_in6 {
  sa_family_t sin6_family; uint16_t sin6_port; uint32_t flow; uint8_t addr[16]; uint32_t scope;
};
struct flemma_sockaddr_un_l { sa_family_t sun_family; char sun_path[108]; };
long recv(int fd, void *buf, unsigned long n, int flags);
]])

local AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
local SOCK_STREAM, SOCK_DGRAM, SOCK_NONBLOCK = 1, 2, 2048
local INADDR_LOOPBACK = 0x7f000001

local M = {}

--- A non-blocking listener: "tcp4" or "udp4" (127.0.0.1), "tcp6" (::1),
--- "unix" (at path `name`) or "abstract" (abstract `name`).
---@param kind "tcp4"|"tcp6"|"udp4"|"unix"|"abstract"
---@param name? string
---@return { port: integer|nil, accepted: fun(): boolean, close: fun() }
function M.listen_kind(kind, name)
  local family = ({ tcp4 = AF_INET, tcp6 = AF_INET6, udp4 = AF_INET, unix = AF_UNIX, abstract = AF_UNIX })[kind]
  local stype = kind == "udp4" and SOCK_DGRAM or SOCK_STREAM
  local fd = ffi.C.socket(family, stype + SOCK_NONBLOCK, 0)
  assert(fd >= 0, "socket failed")
  local addr
  if kind == "tcp6" then
    addr = ffi.new("struct flemma_sockaddr_in6")
    addr.sin6_family = AF_INET6
    addr.addr[15] = 1
  elseif kind == "udp4" or kind == "tcp4" then
    addr = ffi.new("struct flemma_sockaddr_in")
    addr.sin_family = AF_INET
    addr.sin_addr = ffi.C.htonl(INADDR_LOOPBACK)
  else
    addr = ffi.new("struct flemma_sockaddr_un_l")
    addr.sun_family = AF_UNIX
    ffi.copy(addr.sun_path + (kind == "abstract" and 1 or 0), name, #name)
  end
  local size = (kind == "unix" or kind == "abstract") and (2 + #name + (kind == "abstract" and 1 or 0))
    or ffi.sizeof(addr)
  assert(ffi.C.bind(fd, addr, size) == 0, "bind failed: " .. kind)
  assert(stype == SOCK_DGRAM or ffi.C.listen(fd, 16) == 0, "listen failed")
  local port
  if kind ~= "unix" and kind ~= "abstract" then
    local len = ffi.new("socklen_t[1]", ffi.sizeof(addr))
    assert(ffi.C.getsockname(fd, addr, len) == 0, "getsockname failed")
    port = ffi.C.ntohs(kind == "tcp6" and addr.sin6_port or addr.sin_port)
  end
  local count, buf = 0, ffi.new("char[512]")
  return {
    port = port,
    accepted = function()
      while true do
        if stype == SOCK_DGRAM then
          if ffi.C.recv(fd, buf, 512, 0) < 0 then
            break
          end
        else
          local c = ffi.C.accept(fd, nil, nil)
          if c < 0 then
            break
          end
          ffi.C.close(c)
        end
        count = count + 1
      end
      return count > 0
    end,
    close = function()
      ffi.C.close(fd)
    end,
  }
end

--- Opens a non-blocking TCP listener on 127.0.0.1 with a free port.
---@return { port: integer, accepted: fun(): boolean, close: fun() }
function M.listen()
  return M.listen_kind("tcp4")
end

return M
