--- Runs inside the sandbox (luajit spec/escape/attack.lua NAME ARGS...):
--- one system-level attack per call, through LuaJIT's FFI, so the escape
--- suite needs no compiler or Python in the sandbox. Prints "OK" when the
--- attack got through, else "ERR <errno>".
local ffi = require("ffi")

ffi.cdef([[
long syscall(long number, ...);
int ioctl(int fd, unsigned long request, ...);
int getppid(void);
int fork(void);
int pause(void);
void _exit(int status);
int socket(int domain, int type, int protocol);
int connect(int fd, const void *addr, unsigned int len);
long write(int fd, const void *buf, unsigned long n);
struct flemma_sockaddr_un { unsigned short sun_family; char sun_path[108]; };
struct flemma_iovec { void *base; unsigned long len; };
]])

-- x86_64 and aarch64 numbers of the syscalls attacked directly
local NR = {
  x64 = {
    ptrace = 101,
    process_vm_readv = 310,
    mount = 165,
    umount2 = 166,
    unshare = 272,
    bpf = 321,
    keyctl = 250,
    add_key = 248,
    userfaultfd = 323,
    perf_event_open = 298,
    io_uring_setup = 425,
    kexec_load = 246,
    init_module = 175,
    pivot_root = 155,
    swapon = 167,
    fsopen = 430,
  },
  arm64 = {
    ptrace = 117,
    process_vm_readv = 270,
    mount = 40,
    umount2 = 39,
    unshare = 97,
    bpf = 280,
    keyctl = 219,
    add_key = 217,
    userfaultfd = 282,
    perf_event_open = 241,
    io_uring_setup = 425,
    kexec_load = 104,
    init_module = 105,
    pivot_root = 41,
    swapon = 224,
    fsopen = 430,
  },
}
local nr = NR[jit.arch]

local function report(rc)
  if rc >= 0 then
    print("OK")
  else
    print("ERR " .. ffi.errno())
  end
end

local TIOCSTI, TIOCLINUX = 0x5412, 0x541C
local CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000

local name = arg[1]
local attacks = {
  ["ptrace-parent"] = function()
    return ffi.C.syscall(nr.ptrace, ffi.cast("long", 16), ffi.cast("long", ffi.C.getppid()), nil, nil)
  end,
  ["ptrace-traceme"] = function()
    return ffi.C.syscall(nr.ptrace, ffi.cast("long", 0), ffi.cast("long", 0), nil, nil)
  end,
  ["vm-read-parent"] = function()
    local buf = ffi.new("char[16]")
    local libc_addr = ffi.cast("void *", 0x400000)
    local l = ffi.new("struct flemma_iovec[1]", { { buf, 16 } })
    local r = ffi.new("struct flemma_iovec[1]", { { libc_addr, 16 } })
    return ffi.C.syscall(nr.process_vm_readv, ffi.cast("long", ffi.C.getppid()), l, ffi.cast("long", 1), r, 1, 0)
  end,
  ["mount-tmpfs"] = function()
    return ffi.C.syscall(nr.mount, "none", arg[2], "tmpfs", ffi.cast("long", 0), nil)
  end,
  ["remount-rw"] = function()
    return ffi.C.syscall(nr.mount, "none", "/", nil, ffi.cast("long", 32 + 4096), nil) -- MS_REMOUNT|MS_BIND
  end,
  ["umount"] = function()
    return ffi.C.syscall(nr.umount2, arg[2], ffi.cast("long", 2)) -- MNT_DETACH
  end,
  ["unshare-user"] = function()
    return ffi.C.syscall(nr.unshare, ffi.cast("long", CLONE_NEWUSER))
  end,
  ["unshare-mount"] = function()
    return ffi.C.syscall(nr.unshare, ffi.cast("long", CLONE_NEWNS))
  end,
  ["bpf"] = function()
    local attr = ffi.new("char[128]")
    return ffi.C.syscall(nr.bpf, ffi.cast("long", 0), attr, ffi.cast("long", 128))
  end,
  ["keyctl"] = function()
    return ffi.C.syscall(nr.keyctl, ffi.cast("long", 0), ffi.cast("long", -3), ffi.cast("long", 0))
  end,
  ["add-key"] = function()
    return ffi.C.syscall(nr.add_key, "user", "flemma", "x", ffi.cast("long", 1), ffi.cast("long", -2))
  end,
  ["userfaultfd"] = function()
    return ffi.C.syscall(nr.userfaultfd, ffi.cast("long", 0))
  end,
  ["perf-event-open"] = function()
    local attr = ffi.new("char[128]")
    return ffi.C.syscall(nr.perf_event_open, attr, ffi.cast("long", 0), ffi.cast("long", -1), ffi.cast("long", -1), 0)
  end,
  ["io-uring-setup"] = function()
    local params = ffi.new("char[120]")
    return ffi.C.syscall(nr.io_uring_setup, ffi.cast("long", 4), params)
  end,
  ["kexec-load"] = function()
    return ffi.C.syscall(nr.kexec_load, ffi.cast("long", 0), ffi.cast("long", 0), nil, ffi.cast("long", 0))
  end,
  ["init-module"] = function()
    return ffi.C.syscall(nr.init_module, nil, ffi.cast("long", 0), "")
  end,
  ["pivot-root"] = function()
    return ffi.C.syscall(nr.pivot_root, "/tmp", "/tmp")
  end,
  ["swapon"] = function()
    return ffi.C.syscall(nr.swapon, "/dev/null", ffi.cast("long", 0))
  end,
  ["fsopen"] = function()
    return ffi.C.syscall(nr.fsopen, "tmpfs", ffi.cast("long", 0))
  end,
  -- pushes "x" into the input queue of the terminal open on fd arg[2]
  ["tiocsti"] = function()
    local c = ffi.new("char[1]", "x")
    return ffi.C.ioctl(tonumber(arg[2]), TIOCSTI, c)
  end,
  ["tioclinux"] = function()
    local sub = ffi.new("char[1]", 2) -- TIOCL_SETSEL would paste; any subcode is refused
    return ffi.C.ioctl(tonumber(arg[2]), TIOCLINUX, sub)
  end,
  -- connect to a unix socket: arg[2] "path" or "abstract", arg[3] the name
  ["connect-unix"] = function()
    local fd = ffi.C.socket(1, 1, 0)
    if fd < 0 then
      return fd
    end
    local addr = ffi.new("struct flemma_sockaddr_un")
    addr.sun_family = 1
    local path = arg[3]
    local offset = arg[2] == "abstract" and 1 or 0
    ffi.copy(addr.sun_path + offset, path, #path)
    local rc = ffi.C.connect(fd, addr, 2 + offset + #path)
    if rc == 0 then
      ffi.C.write(fd, "EXFIL\n", 6)
    end
    return rc
  end,
}

-- forks up to arg[2] sleeping children (bounded, so a missing limit cannot
-- take the machine down); prints how many it got
if name == "fork-bomb" then
  local n = 0
  for _ = 1, tonumber(arg[2]) do
    local pid = ffi.C.fork()
    if pid == 0 then
      ffi.C.pause()
      ffi.C._exit(0)
    elseif pid < 0 then
      break
    end
    n = n + 1
  end
  print("forked " .. n)
  os.exit(0)
end

-- takes up to arg[2] inotify instances, or (inotify-watches) one instance
-- and up to arg[2] watches on files of its own in /tmp; prints how many it
-- got, then holds them arg[3] seconds, taking (instances) any that another
-- process of the user gives back meanwhile, as a greedy command would
if name == "inotify-instances" or name == "inotify-watches" then
  ffi.cdef([[
int inotify_init1(int flags);
int inotify_add_watch(int fd, const char *path, unsigned int mask);
int poll(void *fds, unsigned long nfds, int timeout);
]])
  local n, want = 0, tonumber(arg[2])
  if name == "inotify-instances" then
    while n < want and ffi.C.inotify_init1(0) >= 0 do
      n = n + 1
    end
  else
    local fd = ffi.C.inotify_init1(0)
    os.execute("mkdir -p /tmp/watched && cd /tmp/watched && seq " .. want .. " | xargs touch")
    while fd >= 0 and n < want and ffi.C.inotify_add_watch(fd, "/tmp/watched/" .. (n + 1), 2) >= 0 do
      n = n + 1
    end
  end
  print(name .. " " .. n)
  io.stdout:flush()
  if arg[3] then -- holds them that long, for the host to try to take one
    for _ = 1, tonumber(arg[3]) * 50 do
      ffi.C.poll(nil, 0, 20)
      while name == "inotify-instances" and n < want and ffi.C.inotify_init1(0) >= 0 do
        n = n + 1
      end
    end
  end
  os.exit(0)
end

local attack = attacks[name]
if not attack or not nr then
  io.stderr:write("unknown attack or architecture: ", tostring(name), " ", jit.arch, "\n")
  os.exit(2)
end
report(tonumber(attack()))
