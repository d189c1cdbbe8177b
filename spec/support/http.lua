--- Blocking HTTP over LuaJIT's FFI for the proxy's specs: a test server
--- on a 127.0.0.x address (run as its own process: `luajit
--- spec/support/http.lua serve ADDRESS`, which prints "port N pid P") and a
--- client that talks to the proxy's unix socket.
local ffi = require("ffi")

local function declare(text)
  pcall(ffi.cdef, text)
end
declare("typedef unsigned int socklen_t;")
declare("typedef unsigned short sa_family_t;")
declare("struct fs_http_in { sa_family_t family; uint16_t port; uint32_t addr; char zero[8]; };")
declare("struct fs_http_un { sa_family_t family; char path[108]; };")
declare("struct fs_http_tv { long sec; long usec; };")
for _, f in ipairs({
  "int socket(int domain, int type, int protocol);",
  "int bind(int fd, const void *addr, socklen_t len);",
  "int listen(int fd, int backlog);",
  "int accept(int fd, void *addr, socklen_t *len);",
  "int connect(int fd, const void *addr, socklen_t len);",
  "int getsockname(int fd, void *addr, socklen_t *len);",
  "int close(int fd);",
  "long recv(int fd, void *buf, unsigned long n, int flags);",
  "long send(int fd, const void *buf, unsigned long n, int flags);",
  "int setsockopt(int fd, int level, int name, const void *value, socklen_t len);",
  "uint16_t htons(uint16_t v);",
  "uint16_t ntohs(uint16_t v);",
  "int inet_pton(int af, const char *src, void *dst);",
  "int getpid(void);",
}) do
  declare(f)
end

local C = ffi.C
local AF_UNIX, AF_INET, SOCK_STREAM = 1, 2, 1
local SOL_SOCKET, SO_RCVTIMEO, SO_REUSEADDR = 1, 20, 2
local MSG_NOSIGNAL = 0x4000

local M = {}

--- A connected socket with send and receive.
local function wrap(fd)
  local buf = ffi.new("char[65536]")
  local s = {}
  function s.send(text)
    local at = 0
    while at < #text do
      local n = C.send(fd, ffi.cast("const char *", text) + at, #text - at, MSG_NOSIGNAL)
      if n <= 0 then
        return false
      end
      at = at + tonumber(n)
    end
    return true
  end
  --- Up to max bytes (default: until the peer closes or the timeout).
  function s.receive(max)
    local parts, total = {}, 0
    while not max or total < max do
      local n = tonumber(C.recv(fd, buf, 65536, 0))
      if n <= 0 then
        break
      end
      parts[#parts + 1] = ffi.string(buf, n)
      total = total + n
    end
    return table.concat(parts)
  end
  --- Reads until the peer closes, keeping nothing: how many bytes came.
  function s.count()
    local total = 0
    while true do
      local n = tonumber(C.recv(fd, buf, 65536, 0))
      if n <= 0 then
        return total
      end
      total = total + n
    end
  end
  --- Bytes until the head of a reply ends (the blank line).
  function s.receive_head()
    local got = ""
    while not got:find("\r\n\r\n", 1, true) do
      local n = tonumber(C.recv(fd, buf, 1, 0))
      if n <= 0 then
        break
      end
      got = got .. ffi.string(buf, 1)
    end
    return got
  end
  function s.close()
    C.close(fd)
  end
  return s
end

local function set_timeout(fd, seconds)
  local tv = ffi.new("struct fs_http_tv", { seconds, 0 })
  C.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, tv, ffi.sizeof(tv))
end

local function unix_address(path)
  local addr = ffi.new("struct fs_http_un")
  addr.family = AF_UNIX
  ffi.copy(addr.path, path, #path)
  return addr
end

--- fd connected to addr, wrapped, receives timing out after `seconds`
--- (default 10); nil (fd closed) when the connection is refused.
local function connected(fd, addr, seconds)
  if C.connect(fd, addr, ffi.sizeof(addr)) ~= 0 then
    C.close(fd)
    return nil
  end
  set_timeout(fd, seconds or 10)
  return wrap(fd)
end

--- Connects to a unix socket; receives time out after `seconds` (default 10).
---@param path string
---@param seconds? integer
function M.connect_unix(path, seconds)
  local fd = C.socket(AF_UNIX, SOCK_STREAM, 0)
  assert(fd >= 0, "socket failed")
  return connected(fd, unix_address(path), seconds)
end

--- Connects to address:port over TCP (a loopback address only).
function M.connect_tcp(address, port, seconds)
  assert(address:match("^127%."), "specs talk to loopback only")
  local fd = C.socket(AF_INET, SOCK_STREAM, 0)
  local addr = ffi.new("struct fs_http_in")
  addr.family = AF_INET
  addr.port = C.htons(port)
  assert(C.inet_pton(AF_INET, address, ffi.cast("void *", ffi.cast("char *", addr) + 4)) == 1)
  return connected(fd, addr, seconds)
end

--- One request through the proxy at socket path: the whole reply.
function M.request(path, text)
  local s = assert(M.connect_unix(path), "proxy socket " .. path)
  s.send(text)
  local reply = s.receive()
  s.close()
  return reply
end

--- The file under root a GET /files/PATH asks for (no "..": test servers
--- serve their own folder only), or nil.
local function file_body(root, target)
  local rel = root and target:match("^/files/([^?]*)")
  if not rel or rel:find("..", 1, true) then
    return nil
  end
  local f = io.open(root .. "/" .. rel, "rb")
  local body = f and f:read("*a")
  if f then
    f:close()
  end
  return body
end

--- The server: answers GET /hello with "hello HOST-HEADER", GET /bytes/N
--- with N bytes, GET /slow/S with a line every 50 ms for S seconds, GET
--- /files/PATH with root's file (404 when missing: enough for git's dumb
--- HTTP), and closes each connection after one reply (one client at a time).
--- With FLEMMA_SPEC_SLOW_MARK set, a /slow reply makes that file once its
--- first line is sent (a spec's killer waits for it).
local function serve(address, root)
  assert(address:match("^127%."), "specs listen on loopback only")
  local fd = C.socket(AF_INET, SOCK_STREAM, 0)
  local one = ffi.new("int[1]", 1)
  C.setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, one, 4)
  local addr = ffi.new("struct fs_http_in")
  addr.family = AF_INET
  assert(C.inet_pton(AF_INET, address, ffi.cast("void *", ffi.cast("char *", addr) + 4)) == 1)
  assert(C.bind(fd, addr, ffi.sizeof(addr)) == 0, "bind " .. address)
  assert(C.listen(fd, 128) == 0)
  local len = ffi.new("socklen_t[1]", ffi.sizeof(addr))
  C.getsockname(fd, addr, len)
  io.stdout:write("port ", C.ntohs(addr.port), " pid ", C.getpid(), "\n")
  io.stdout:flush()
  local chunk = string.rep("x", 65536)
  while true do
    local c = C.accept(fd, nil, nil)
    if c >= 0 then
      set_timeout(c, 10)
      local s = wrap(c)
      local head = s.receive_head()
      local target = head:match("^%u+ (%S+)") or ""
      local host = head:match("\r\n[Hh]ost:%s*([^\r]*)") or ""
      local size = tonumber(target:match("^/bytes/(%d+)$"))
      local slow = tonumber(target:match("^/slow/(%d+)$"))
      local file = file_body(root, target)
      if target:match("^/keepalive") then
        -- HTTP/1.1 keep-alive: requests on one connection until the client
        -- closes or one says "Connection: close", each answered with its
        -- target and Host (what a server behind a CDN would serve)
        while head ~= "" do
          local this_target = head:match("^%u+ (%S+)") or ""
          -- lenient, as many servers are: a bare LF ends a header line too
          local body = "hello " .. this_target .. " host=" .. (head:match("\n[Hh]ost:%s*([^\r\n]*)") or "")
          local closing = head:lower():find("\r\nconnection:%s*close") ~= nil
          s.send(
            "HTTP/1.1 200 OK\r\nContent-Length: "
              .. #body
              .. (closing and "\r\nConnection: close" or "")
              .. "\r\n\r\n"
              .. body
          )
          if closing then
            break
          end
          head = s.receive_head()
        end
      elseif file then
        s.send("HTTP/1.1 200 OK\r\nContent-Length: " .. #file .. "\r\nConnection: close\r\n\r\n" .. file)
      elseif root and target:match("^/files/") then
        s.send("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
      elseif slow then
        -- a line every 50 ms for `slow` seconds: a transfer still going on
        s.send("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        local mark = os.getenv("FLEMMA_SPEC_SLOW_MARK")
        for _ = 1, slow * 20 do
          if not s.send("tick\n") then
            break
          end
          if mark then
            io.open(mark, "w"):close()
            mark = nil
          end
          os.execute("sleep 0.05")
        end
      elseif size then
        s.send("HTTP/1.1 200 OK\r\nContent-Length: " .. size .. "\r\nConnection: close\r\n\r\n")
        local left = size
        while left > 0 and s.send(left >= #chunk and chunk or chunk:sub(1, left)) do
          left = left - #chunk
        end
      else
        local body = "hello " .. target .. " host=" .. host
        s.send("HTTP/1.1 200 OK\r\nContent-Length: " .. #body .. "\r\nConnection: close\r\n\r\n" .. body)
      end
      s.close()
    end
  end
end

--- Neovim's side of policy.network = "ask", scripted: listens on the unix
--- socket path, prints each question line the proxy puts and replies
--- `answer` to it, until killed.
local function answer_questions(path, answer)
  local fd = C.socket(AF_UNIX, SOCK_STREAM, 0)
  local addr = unix_address(path)
  assert(C.bind(fd, addr, ffi.sizeof(addr)) == 0, "bind " .. path)
  assert(C.listen(fd, 16) == 0)
  io.stdout:write("answering ", C.getpid(), "\n")
  io.stdout:flush()
  while true do
    local c = C.accept(fd, nil, nil)
    if c >= 0 then
      set_timeout(c, 10)
      local s = wrap(c)
      local line = ""
      while not line:find("\n", 1, true) do
        local more = s.receive(1)
        if more == "" then
          break
        end
        line = line .. more
      end
      io.stdout:write(line)
      io.stdout:flush()
      s.send(answer .. "\n")
      s.close()
    end
  end
end

if arg and arg[1] == "serve" then
  serve(arg[2], arg[3])
elseif arg and arg[1] == "answer" then
  answer_questions(arg[2], arg[3])
elseif arg and arg[1] == "fetch" then
  -- fetch SOCKET TARGET HOST: one GET through the proxy; prints "ok N"
  -- (a 200 reply of N bytes) or what came instead
  local reply = M.request(arg[2], "GET " .. arg[3] .. " HTTP/1.1\r\nHost: " .. arg[4] .. "\r\n\r\n")
  print(reply:match("^HTTP/1.1 200") and ("ok " .. #reply) or ("bad " .. reply:sub(1, 200)))
end

--- The bytes of a minimal TLS ClientHello record naming sni (none for nil),
--- followed by a blank line so that the spec's plain test server, which
--- reads a head, answers it.
---@param sni string|nil
---@return string
function M.client_hello(sni)
  local function u16(n)
    return string.char(math.floor(n / 256), n % 256)
  end
  local ext = ""
  if sni then
    local entry = "\0" .. u16(#sni) .. sni
    ext = u16(0) .. u16(#entry + 2) .. u16(#entry) .. entry
  end
  local body = "\3\3" .. string.rep("\1", 32) .. "\0" .. u16(2) .. "\0\47" .. "\1\0" .. u16(#ext) .. ext
  local handshake = "\1\0" .. u16(#body) .. body
  return "\22\3\1" .. u16(#handshake) .. handshake .. "\r\n\r\n"
end

return M
