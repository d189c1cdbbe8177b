--- make valgrind: every core function, good and bad input, 200 times, under
--- valgrind's leak checker (LuaJIT's own allocator is not what it checks).
package.cpath = "lua/?.so;" .. package.cpath
local c = require("flemma_sandbox.core")
os.execute("rm -rf /tmp/flemma-vg && mkdir -p /tmp/flemma-vg && ln -sf /etc /tmp/flemma-vg/link")
for i = 1, 200 do
  c.normalize("/a/../b//c/./d/")
  c.resolve("/proc/self/cwd/../x/y")
  c.resolve("/etc/passwd/x")
  c.expand("${X:-~/a}/$HOME/urn", { HOME = "/h" })
  c.expand("$NOPE", {})
  c.expand("${", {})
  c.dedupe({ "/tmp", "/tmp/x", "/a\0" })
  c.dedupe({ "/tmp", "/tmp/x" })
  c.sha256(string.rep("x", i))
  c.git_hooks_path('[core] hooksPath = "a\\"b" ; c\n[core "x"]\nhooksPath = y\\\n' .. string.rep("z", i))
  c.git_hooks_path("[core\n\\")
  pcall(c.git_hooks_path, i)
  pcall(c.sha256, i)
  c.bwrap_argv({
    rw_paths = { "/tmp", "/nope" },
    deny_paths = { "/etc/hostname" },
    ro_paths = { "/tmp/flemma-vg/ro", "/tmp" },
    network = false,
    allow_privileged = false,
    env = {
      A = "b",
    },
  }, { extra_args = { "--x" } }, { "true" })
  pcall(c.bwrap_argv, { rw_paths = { "/tmp" }, network = false, allow_privileged = false }, nil, { "a", 1 })
  pcall(
    c.expand,
    "$A$B",
    setmetatable({}, {
      __index = function()
        error("x")
      end,
    })
  )
  c.write_atomic("/tmp/flemma-vg", "a/b/f.txt", "content")
  c.write_atomic("/tmp/flemma-vg", "link/passwd", "x")
  c.write_atomic("/tmp/flemma-vg", "../x", "x")
  c.make_dirs("/tmp/flemma-vg/d/e")
  c.find_files("/tmp/flemma-vg", { "*.txt", "f*" }, { "d" }, 3, 2)
  c.find_files("/nope", { "*" }, {}, 1, 1)
  c.stamp({ "/tmp/flemma-vg", "/nope", "/a\0b" })
  pcall(c.stamp, { "/tmp", 1 })
  pcall(c.stamp, "/tmp")
  c.make_dirs("/tmp/flemma-vg/p/sub/.git")
  c.find_names("/tmp/flemma-vg", { ".git" }, i % 3)
  c.proxy_parse("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test\r\n\r\n")
  c.proxy_parse("GET http://a.test/x HTTP/1.1\r\nHost: b.test\r\n\r\n")
  c.proxy_parse("GET /x HTTP/1.1\r\n")
  c.host_allowed("a.example.com", { "*.example.com", "10.0.0.0/8" }, { "b.example.com" })
  c.addr_kind("::ffff:169.254.169.254", { "169.254.0.0/16" })
  c.addr_kind("nope")
  c.make_dirs("/tmp/flemma-vg/idx")
  c.find_names("/tmp/flemma-vg", { ".git" }, 10, "/tmp/flemma-vg/idx")
  c.find_files("/tmp/flemma-vg", { "*.txt" }, {}, 3, 10, "/tmp/flemma-vg/idx")
  c.make_dirs("/tmp/flemma-vg/p/new" .. i)
  c.find_names("/tmp/flemma-vg", { ".git" }, 10, "/tmp/flemma-vg/idx")
  c.node_id("/tmp/flemma-vg/p/sub/.git")
  local check = io.open("/tmp/flemma-vg/c.check", "wb")
  check:write(table.concat({
    "quarantine",
    "/tmp/flemma-vg/q",
    "index",
    "/tmp/flemma-vg/idx",
    "watch",
    "/tmp/flemma-vg/a",
    "repos",
    "/tmp/flemma-vg/p",
  }, "\0"))
  check:close()
  c.make_dirs("/tmp/flemma-vg/q")
  c.file_type("/tmp/flemma-vg/link")
  c.can_write("/tmp/flemma-vg")
  c.which("sh", os.getenv("PATH"))
  c.getcwd()
  c.key({ rw_paths = { "$HOME/x", "${Y}" }, limits = { processes = i }, [i + 5] = true, f = print })
  local loop = {}
  loop.x = loop
  pcall(c.key, loop)
  c.environ_hash()
  -- an inotify instance each: never more than one open at a time (the
  -- user's limit is shared with everything else the user runs)
  local w = assert(c.watch())
  w:add("/tmp/flemma-vg")
  w:add("/nope")
  c.make_dirs("/tmp/flemma-vg/w" .. i)
  w:events()
  if i % 2 == 0 then
    w:close()
  else
    collectgarbage() -- w is not used again: the finaliser closes it
  end
  c.read_lines("/etc/passwd", 2, 3, 40)
  c.read_lines("/etc/passwd", 1, 1e12, 7)
  c.read_lines("/nope", 1, 1, 1)
  c.read_lines("/tmp/flemma-vg", 1, 1, 1)
  pcall(c.read_lines, "/etc/passwd", 0, 1, 1)
end
collectgarbage()
collectgarbage()
os.execute("rm -rf /tmp/flemma-vg")
