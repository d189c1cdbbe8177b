--- make bench, part 5 (LuaJIT): the allowlist proxy (flemma-sandbox-proxy)
--- next to a direct connection over loopback, to a test server on
--- 127.0.0.2 that the bench starts: the throughput of a 200 MB transfer
--- (goal: at least 90 % of direct), the time to connect and fetch a
--- small reply (the latency the proxy adds), and the time to start one
--- (each allowlist run starts its own).
package.path = "spec/?.lua;" .. package.path
local ffi = require("ffi")
local http = require("support.http")

pcall(ffi.cdef, "struct fs_bench_ts { long sec; long nsec; }; int clock_gettime(int clock, struct fs_bench_ts *ts);")
local ts = ffi.new("struct fs_bench_ts")
local function now_ms()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.sec) * 1000 + tonumber(ts.nsec) / 1e6
end

local dir = io.popen("mktemp -d /tmp/flemma-bench-proxy.XXXXXX"):read("*l")
local server = assert(io.popen("exec luajit spec/support/http.lua serve 127.0.0.2", "r"))
local port, server_pid = server:read("*l"):match("^port (%d+) pid (%d+)")
local hosts = io.open(dir .. "/hosts", "w")
hosts:write("big.test 127.0.0.2\n")
hosts:close()
local sock = dir .. "/proxy.sock"
local proxy = assert(
  io.popen(
    "FLEMMA_SANDBOX_PROXY_TEST=1 exec lua/flemma_sandbox/flemma-sandbox-proxy --listen "
      .. sock
      .. " --allow big.test --test-hosts "
      .. dir
      .. "/hosts",
    "r"
  )
)
local proxy_pid = proxy:read("*l"):match("(%d+)$")

local SIZE = 200 * 1024 * 1024
local function direct(path)
  local s = assert(http.connect_tcp("127.0.0.2", tonumber(port)))
  s.send("GET " .. path .. " HTTP/1.1\r\nHost: big.test\r\n\r\n")
  local n = s.count()
  s.close()
  return n
end
local function proxied(path)
  local s = assert(http.connect_unix(sock))
  s.send("GET http://big.test:" .. port .. path .. " HTTP/1.1\r\nHost: big.test\r\n\r\n")
  local n = s.count()
  s.close()
  return n
end

local function best_of(runs, fn, ...)
  local best = math.huge
  for _ = 1, runs do
    local t = now_ms()
    fn(...)
    best = math.min(best, now_ms() - t)
  end
  return best
end

direct("/bytes/" .. SIZE)
proxied("/bytes/" .. SIZE)
-- interleaved, best of 9 each: this machine's noise is larger than the gap
local d, p = math.huge, math.huge
for _ = 1, 9 do
  d = math.min(d, best_of(1, direct, "/bytes/" .. SIZE))
  p = math.min(p, best_of(1, proxied, "/bytes/" .. SIZE))
end
print(string.format("%-40s %10s %10s %8s", "allowlist proxy", "direct", "proxy", "ratio"))
print(
  string.format(
    "%-40s %7.0f MB/s %7.0f MB/s %7.0f%%",
    "200 MB over loopback (goal 90%)",
    SIZE / 1048576 / (d / 1000),
    SIZE / 1048576 / (p / 1000),
    d / p * 100
  )
)
local small_d, small_p = 0, 0
for _ = 1, 200 do
  small_d = small_d + best_of(1, direct, "/hello")
  small_p = small_p + best_of(1, proxied, "/hello")
end
print(
  string.format(
    "%-40s %7.2f ms %8.2f ms %+7.2f ms",
    "connect and a small reply",
    small_d / 200,
    small_p / 200,
    (small_p - small_d) / 200
  )
)
-- what each allowlist run pays: flemma-sandbox-host starts a proxy for it
-- (csrc/exec/host_proxy.c); the anchor is starting a program that prints a line
-- (until it says it listens; stopping it is not counted)
local function started(cmd)
  local t = now_ms()
  local f = io.popen(cmd, "r")
  local line = f:read("*l")
  local took = now_ms() - t
  local pid = line and line:match("listening %S+ (%d+)$")
  if pid then
    os.execute("kill " .. pid)
  end
  f:close()
  return took
end
local start_p, start_e = 0, 0
for _ = 1, 50 do
  start_e = start_e + started("exec echo listening")
  start_p = start_p + started("exec lua/flemma_sandbox/flemma-sandbox-proxy --listen " .. dir .. "/start.sock")
end
print(
  string.format(
    "%-40s %7.2f ms %8.2f ms %+7.2f ms",
    "start, per run (anchor: echo)",
    start_e / 50,
    start_p / 50,
    (start_p - start_e) / 50
  )
)
os.execute("kill " .. server_pid .. " " .. proxy_pid)
server:close()
proxy:close()
os.execute("rm -rf " .. dir)
