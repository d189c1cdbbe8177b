--- Escape suite: system calls that reach the kernel or other processes,
--- and typing into the host's terminal.
local ffi = require("ffi")
local f = require("escape.fixture")
local h = require("support.helpers")
local sandbox = require("flemma_sandbox")

ffi.cdef([[
int posix_openpt(int flags);
int grantpt(int fd);
int unlockpt(int fd);
char *ptsname(int fd);
long read(int fd, void *buf, unsigned long n);
int close(int fd);
]])

describe("escape: the kernel and other processes", function()
  local w
  setup(function()
    w = f.create()
    f.use_host(w)
  end)
  teardown(function()
    f.destroy(w)
  end)
  before_each(function()
    f.policy()
  end)

  local DENIED = {
    "ptrace-parent",
    "ptrace-traceme",
    "vm-read-parent",
    "bpf",
    "keyctl",
    "add-key",
    "userfaultfd",
    "perf-event-open",
    "io-uring-setup",
    "kexec-load",
    "init-module",
    "umount",
    "pivot-root",
    "swapon",
    "fsopen",
    "unshare-mount",
  }
  for _, name in ipairs(DENIED) do
    it(name .. " fails with EPERM", function()
      local r = f.attack(w, f.script(name, "/"))
      assert.are.equal("ERR 1\n", r.stdout, r.stderr)
    end)
  end

  it("the control: without the filter, PTRACE_TRACEME works", function()
    f.policy({ seccomp = false })
    assert.are.equal("OK\n", f.attack(w, f.script("ptrace-traceme")).stdout)
  end)

  it("strace cannot attach to anything", function()
    local r = f.attack(w, "command -v strace >/dev/null || exit 0; strace -f true")
    assert.is_nil(r.stdout:find("execve", 1, true))
  end)

  -- a terminal of the host, open in the sandbox as fd 3
  local function with_host_terminal(cmd)
    local master = ffi.C.posix_openpt(2 + 256 + 2048) -- O_RDWR | O_NOCTTY | O_NONBLOCK
    assert(master >= 0 and ffi.C.grantpt(master) == 0 and ffi.C.unlockpt(master) == 0)
    local slave = ffi.string(ffi.C.ptsname(master))
    local argv = assert(sandbox.wrap_command({ "bash", "-c", cmd }, nil))
    local words = {}
    for i, a in ipairs(argv) do
      words[i] = h.shell_quote(a)
    end
    local out = h.capture("cd " .. h.shell_quote(w.proj) .. " && " .. table.concat(words, " ") .. " 3<>" .. slave)
    local buf = ffi.new("char[256]")
    local n = tonumber(ffi.C.read(master, buf, 256))
    ffi.C.close(master)
    return out, n > 0 and ffi.string(buf, n) or ""
  end

  it("TIOCSTI cannot push keystrokes into a host terminal", function()
    local out, echoed = with_host_terminal(f.script("tiocsti", 3))
    assert.are.equal("ERR 1\n", out)
    assert.are.equal("", echoed)
  end)

  it("TIOCLINUX is refused on a host terminal", function()
    local out = with_host_terminal(f.script("tioclinux", 3))
    assert.are.equal("ERR 1\n", out)
  end)
end)
