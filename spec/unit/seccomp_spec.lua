--- The seccomp filter's hand-written i386 numbers against the kernel
--- headers, and the helper's command line.
local h = require("support.helpers")

local I386_NAMES = {
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "kexec_load",
  "init_module",
  "finit_module",
  "delete_module",
  "bpf",
  "perf_event_open",
  "userfaultfd",
  "keyctl",
  "add_key",
  "request_key",
  "mount",
  "umount",
  "umount2",
  "pivot_root",
  "swapon",
  "swapoff",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  "open_tree",
  "move_mount",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "mount_setattr",
}

local HELPER = "lua/flemma_sandbox/flemma-sandbox-init"
local LIB = "lua/flemma_sandbox/flemma-sandbox-"

describe("seccomp", function()
  it("the i386 deny list matches asm/unistd_32.h", function()
    local header = h.read("/usr/include/x86_64-linux-gnu/asm/unistd_32.h") or h.read("/usr/include/asm/unistd_32.h")
    if not header then
      return pending("no i386 syscall header here")
    end
    local src = assert(h.read("csrc/exec/seccomp.c"))
    --- the numbers of a C initializer's body, and those the header gives names
    local function numbers_in(body)
      local numbers = {}
      for n in body:gmatch("%d+") do
        numbers[#numbers + 1] = tonumber(n)
      end
      return numbers
    end
    local function numbers_of(names)
      local numbers = {}
      for i, name in ipairs(names) do
        numbers[i] = tonumber((assert(header:match("#define __NR_" .. name .. " (%d+)"), name)))
      end
      return numbers
    end
    assert.are.same(numbers_of(I386_NAMES), numbers_in(assert(src:match("I386_DENIED%[%] = {(.-)}"))))
    assert.are.equal(54, tonumber(header:match("#define __NR_ioctl (%d+)")))
    -- the syscalls whose arguments the filter reads (the ways to a later SIGCONT)
    assert.are.same(
      numbers_of({ "timer_create", "fcntl", "fcntl64", "prctl", "clone", "clone3" }),
      numbers_in(assert(src:match("#define I386_ARG_RULES {(.-)}")))
    )
  end)

  it("the helper reports its filter and refuses a bad command line", function()
    local r = h.run({ LIB .. "tool", "--info" })
    assert.matches("^seccomp %S+\nlandlock %d+\n$", r.stdout)
    r = h.run({ HELPER, "--limit", "processes=-1", "--", "true" })
    assert.are.equal(126, r.code)
    assert.matches("not a whole number", r.stderr)
    r = h.run({ HELPER, "--limit", "stack=1", "--", "true" })
    assert.matches("unknown limit", r.stderr)
    r = h.run({ HELPER, "--seccomp" })
    assert.are.equal(2, r.code)
    -- (under make sanitize, LeakSanitizer would need ptrace, which the filter denies)
    r = h.run({ HELPER, "--seccomp", "--", "/no/such/program" }, { ASAN_OPTIONS = "detect_leaks=0" })
    assert.are.equal(127, r.code)
  end)

  it("each program takes its own role's options and refuses the others' (the two trust levels)", function()
    local marker = os.tmpname()
    os.remove(marker)
    local touch = { "--", "touch", marker }
    local function code(program, options)
      local argv = { LIB .. program }
      for _, words in ipairs({ options, touch }) do
        for _, word in ipairs(words) do
          argv[#argv + 1] = word
        end
      end
      return h.run(argv).code
    end
    -- the control: the init program runs a command with its own options
    assert.are.equal(0, code("init", { "--limit", "open_files=64" }))
    assert.truthy(h.read(marker))
    os.remove(marker)
    assert.are.equal(2, code("init", { "--clearenv" }))
    assert.are.equal(2, code("init", { "--check-file", "x.check" }))
    assert.are.equal(2, code("init", { "--live-keeper", "3", "1" }))
    assert.are.equal(2, code("host", { "--seccomp" }))
    assert.are.equal(2, code("host", { "--supervise", "3" }))
    assert.are.equal(2, code("attach", { "--scope" }))
    assert.are.equal(2, code("attach", { "--clearenv" })) -- no --live DIR
    assert.are.equal(2, code("tool", {}))
    assert.are.equal(2, code("tool", { "--info" }))
    assert.is_nil(h.read(marker))
  end)

  it("a command that is not there exits 127 and one that cannot run 126, as a shell says", function()
    local dir = h.tmpdir()
    -- a folder of $PATH that cannot be searched (execvp says EACCES, not ENOENT, for a user)
    h.sh("mkdir " .. h.shell_quote(dir .. "/locked") .. " && chmod 000 " .. h.shell_quote(dir .. "/locked"))
    h.write(dir .. "/plain.txt", "not a program\n")
    local env = { PATH = dir .. "/locked:/usr/bin:/bin" }
    assert.are.equal(127, h.run({ HELPER, "--", "no-such-command-anywhere" }, env).code)
    assert.are.equal(126, h.run({ HELPER, "--", dir .. "/plain.txt" }, env).code)
    h.sh("chmod 700 " .. h.shell_quote(dir .. "/locked"))
    h.rmdir(dir)
  end)

  it("a command found in a later folder of $PATH that cannot run says why (permission denied)", function()
    local dir = h.tmpdir()
    -- found by name in the second folder of $PATH, not executable: execvp says
    -- EACCES; the folders searched for the exit code before it are not there
    h.write(dir .. "/not-runnable-tool", "not a program\n")
    local env = { PATH = dir .. "/no-such-folder:" .. dir .. ":/usr/bin:/bin" }
    local r = h.run({ HELPER, "--", "not-runnable-tool" }, env)
    assert.are.equal(126, r.code)
    assert.matches("not%-runnable%-tool: Permission denied", r.stderr)
    assert.is_nil(r.stderr:find("No such file", 1, true))
    h.rmdir(dir)
  end)

  it("limits are lowered for the command and cannot be raised back", function()
    local r = h.run({
      HELPER,
      "--limit",
      "open_files=64",
      "--limit",
      "cpu_seconds=7",
      "--",
      "sh",
      "-c",
      "ulimit -n; ulimit -t; ulimit -n 128",
    })
    assert.matches("^64\n7\n", r.stdout)
    assert.are_not.equal(0, r.code)
  end)
end)
