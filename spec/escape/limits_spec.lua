--- Escape suite: resource exhaustion against limits the test sets low (so
--- a failure cannot fill the disk or the memory of the machine), and
--- processes that try to outlive their command.
local f = require("escape.fixture")
local h = require("support.helpers")
local sandbox = require("flemma_sandbox")

local wait_gone = f.wait_gone

describe("escape: resource limits and stray processes", function()
  local w
  setup(function()
    w = f.create()
    f.use_host(w)
  end)
  teardown(function()
    f.destroy(w)
  end)

  local function limits(l)
    f.policy({ limits = l })
  end

  it("a fork bomb stops at the process limit and leaves nothing running", function()
    if h.is_root() then
      return pending("the kernel does not enforce RLIMIT_NPROC for root")
    end
    limits({ processes = 40 })
    local r = f.attack(w, f.script("fork-bomb", 300))
    local forked = tonumber(r.stdout:match("^forked (%d+)"))
    assert.is_truthy(forked, r.stdout .. r.stderr)
    assert.is_true(forked < 40, r.stdout)
    f.stop_live() -- the warm path: what a call left goes with its chat's sandbox
    assert.are.equal("", wait_gone("attack.lua fork-bomb"))
  end)

  it("the control: without the limit the same bomb gets all its processes", function()
    if h.is_root() then
      return pending("the kernel does not enforce RLIMIT_NPROC for root")
    end
    limits({ processes = false })
    local r = f.attack(w, f.script("fork-bomb", 60))
    assert.are.equal("forked 60\n", r.stdout)
    f.stop_live()
    assert.are.equal("", wait_gone("attack.lua fork-bomb"))
  end)

  it("a file cannot grow past the file-size limit", function()
    limits({ file_size_mb = 1 })
    local before = f.snapshot(w)
    local argv = assert(sandbox.wrap_command({ "bash", "-c", "head -c 3000000 /dev/zero > work/big" }, nil))
    local r = h.run(argv, nil, w.proj)
    assert.are_not.equal(0, r.code)
    local size = tonumber(h.capture("stat -c %s " .. h.shell_quote(w.work .. "/big")))
    assert.is_true(size <= 1048576, tostring(size))
    assert.are.equal(before, f.snapshot(w))
    h.sh("rm -f " .. h.shell_quote(w.work .. "/big"))
  end)

  it("a memory bomb fails at the memory limit", function()
    limits({ memory_mb = 64 })
    local r = f.attack(w, "x=$(head -c 300000000 /dev/zero | tr '\\0' a); echo ${#x}")
    assert.is_nil(r.stdout:find("300000000", 1, true))
  end)

  it("a busy loop is stopped at the CPU-time limit", function()
    limits({ cpu_seconds = 1 })
    -- timeout(1) on the host is only the safety net; 124 would mean it fired
    local r = f.attack(w, "while :; do :; done", { timeout = 30 })
    assert.are_not.equal(0, r.code)
    assert.are_not.equal(124, r.code)
  end)

  it("cannot open more files than the open-files limit", function()
    limits({ open_files = 16 })
    local r = f.attack(w, "for i in $(seq 40); do exec {fd}</dev/null || { echo stopped-at $i; exit 0; }; done")
    assert.matches("stopped%-at %d+", r.stdout)
  end)

  it("no process survives its sandbox being killed (setsid, nohup, double fork)", function()
    f.policy()
    local marker = "sleep 1987"
    -- (.nvim.lua: a protected name no secret rule matches; a new .envrc
    -- would stop the command at once, spec/escape/created_spec.lua)
    local cmd = "echo evil > .nvim.lua; setsid "
      .. marker
      .. " & nohup "
      .. marker
      .. " >/dev/null 2>&1 & ( ("
      .. marker
      .. " &) & ); sleep 30"
    -- the host kills the outermost process with SIGKILL, as an OOM killer would
    local r = f.attack(w, cmd, { timeout = "-s KILL 1", keep_host = true })
    assert.are.equal(137, r.code)
    if not f.WARM then
      assert.are.equal("", wait_gone(marker))
    end
    -- the helper was killed before its check: what the command created
    -- stays until the next command's helper does the check for it
    assert.are.equal("evil\n", h.read(w.proj .. "/.nvim.lua"))
    local r2 = f.attack(w, "true", { keep_host = true })
    local moved = h.records_of(r2.records, "moved")
    assert.are.equal(1, #moved, r2.stderr)
    assert.are.same({ "earlier", w.proj .. "/.nvim.lua" }, { moved[1].run, moved[1].from })
    assert.is_nil(h.read(w.proj .. "/.nvim.lua"))
    local runs = w.home .. "/.local/state/flemma-sandbox/runs"
    assert.are.equal("", h.capture("ls -A " .. h.shell_quote(runs)), r2.stderr .. " code " .. r2.code)
    if f.WARM then
      -- a chat's sandbox outlives a killed call (only the call's process
      -- group goes): what left the group goes when the sandbox stops
      assert.are_not.equal("", h.capture("pgrep -f " .. h.shell_quote(marker) .. " || true"), "control")
      f.stop_live()
      assert.are.equal("", wait_gone(marker))
    end
  end)

  it("RAM-backed folders hold at most limits.tmpfs_mb each, and /dev is read-only", function()
    local bwrap = require("flemma_sandbox.backends.bwrap")
    limits({ tmpfs_mb = 8 })
    local probe = require("flemma_sandbox.backends.bwrap_probe")
    if not probe.features({})["size"] then
      -- what the status says instead
      assert.matches("not capped: this bwrap has no %-%-size", bwrap.caps_text(sandbox.get_policy()))
      return pending(probe.version({}) .. " has no --size: the private folders are not capped")
    end
    local fill = 'for d in /tmp /dev/shm "$HOME/.cache"; do n=$(basename "$d"); '
      .. 'dd if=/dev/zero of="$d/fill" bs=1M count=20 2>/dev/null && echo $n:filled || echo $n:full; '
      .. 'rm -f "$d/fill"; done; touch /dev/planted 2>/dev/null && echo dev:written || echo dev:read-only'
    local r = f.attack(w, fill)
    if f.WARM then
      -- a chat keeps these on disk, not in RAM: the disk reserve guards them
      assert.matches("tmp:filled", r.stdout)
      assert.matches("shm:filled", r.stdout)
      assert.matches("cache:filled", r.stdout)
      assert.matches("dev:read%-only", r.stdout)
      assert.matches("kept folders are on disk", bwrap.caps_text(sandbox.get_policy(f.CHAT_BUF)))
      return
    end
    assert.matches("tmp:full", r.stdout)
    assert.matches("shm:full", r.stdout)
    assert.matches("cache:full", r.stdout)
    assert.matches("dev:read%-only", r.stdout)
    assert.matches("at most 8 MiB each", bwrap.caps_text(sandbox.get_policy()))
    -- control: without the cap the same 20 MiB fit in each
    limits({ tmpfs_mb = false })
    r = f.attack(w, fill)
    assert.matches("tmp:filled", r.stdout)
    assert.matches("shm:filled", r.stdout)
    assert.matches("cache:filled", r.stdout)
  end)

  it("a command takes at most limits.inotify_instances and inotify_watches of the user's", function()
    local bwrap = require("flemma_sandbox.backends.bwrap")
    if not require("flemma_sandbox.base.util").default_inotify_cap("max_user_instances") then
      return pending("this kernel keeps no inotify limits per user namespace")
    end
    local out = w.base .. "/inotify.out"
    -- the command takes up to 1000 instances (more than a user has) and
    -- holds them; meanwhile the host, as the same user, tries to take one
    -- five times, 0.1 s apart (other processes of the user come and go:
    -- one that ends gives an instance back, which the command takes again
    -- within 20 ms, or the host first); returns how many it got
    local function squeeze()
      local words = {}
      for i, word in ipairs(assert(sandbox.wrap_command({ "bash", "-c", f.script("inotify-instances", 1000, 3) }))) do
        words[i] = h.shell_quote(word)
      end
      local probe = 'luajit -e \'local ffi = require("ffi"); ffi.cdef("int inotify_init1(int); int close(int);"); '
        .. "local got = 0; for _ = 1, 5 do local fd = ffi.C.inotify_init1(0); "
        .. "if fd >= 0 then got = got + 1; ffi.C.close(fd) end; "
        .. 'os.execute("sleep 0.1") end; print("host:got=" .. got)\''
      local script = table.concat(words, " ")
        .. " >"
        .. h.shell_quote(out)
        .. " 2>&1 & i=0; until grep -q inotify-instances "
        .. h.shell_quote(out)
        .. " || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done; "
        .. probe
        .. "; wait"
      local r = h.run({ "sh", "-c", script }, nil, w.proj)
      local taken = tonumber((h.read(out) or ""):match("inotify%-instances (%d+)"))
      assert.is_truthy(taken, (h.read(out) or "") .. r.stdout .. r.stderr)
      local got = tonumber(r.stdout:match("host:got=(%d+)"))
      assert.is_truthy(got, r.stdout .. r.stderr)
      return taken, got
    end
    local function watches(want)
      local r = f.attack(w, f.script("inotify-watches", want))
      return tonumber(r.stdout:match("inotify%-watches (%d+)")), r
    end
    limits({ inotify_instances = 3, inotify_watches = 20 })
    local taken, got = squeeze()
    assert.are.equal(3, taken)
    assert.is_true(got > 0, "the host got no instance while the command held its 3")
    local n, r = watches(200)
    assert.are.equal(20, n, r.stdout .. r.stderr)
    assert.matches("inotify at most 3 instances and 20 watches", bwrap.caps_text(sandbox.get_policy()))
    -- control: without the caps the command takes every instance the
    -- user has left, and the host's watcher gets none
    limits({ inotify_instances = false, inotify_watches = false })
    taken, got = squeeze()
    assert.is_true(taken > 3 and taken < 1000, tostring(taken))
    assert.is_true(got < 5, "the host got an instance each time it tried")
    n, r = watches(200)
    assert.are.equal(200, n, r.stdout .. r.stderr)
  end)

  it("a command is stopped when a writable root's disk runs short (a 32 MiB file system)", function()
    -- a file system of its own, made in a mount namespace of the test's:
    -- never the machine's disk
    local mnt = w.base .. "/small-fs"
    h.sh("mkdir -p " .. h.shell_quote(mnt))
    local function run_on_small_fs(reserve)
      f.policy({ rw_paths = { "$CWD", mnt }, limits = { disk_reserve_mb = reserve } })
      local argv, _, record = assert(sandbox.wrap_command({
        "bash",
        "-c",
        "dd if=/dev/zero of=" .. mnt .. "/fill bs=1M count=31 2>/dev/null; sleep 5; echo survived",
      }))
      local records = require("flemma_sandbox.run.records")
      local check = assert(record).check_file
      records.create(check)
      local words = {}
      for i, word in ipairs(argv) do
        words[i] = h.shell_quote(word)
      end
      local script = "mount -t tmpfs -o size=32m none "
        .. h.shell_quote(mnt)
        .. " && cd "
        .. h.shell_quote(w.proj)
        .. " && "
        .. table.concat(words, " ")
      local r = h.run({ "unshare", "-Urm", "sh", "-c", script })
      r.records = records.take(check)
      return r
    end
    local r = run_on_small_fs(2048)
    assert.is_nil(r.stdout:find("survived", 1, true), r.stderr)
    local stopped = h.records_of(r.records, "stopped")
    assert.are.equal(1, #stopped, r.stderr)
    assert.are.same({ "disk_reserve", mnt, "2048" }, { stopped[1].reason, stopped[1].root, stopped[1].reserve_mb })
    assert.is_true(tonumber(stopped[1].free_mb) < 2048)
    -- control: with no reserve the command fills it and goes on
    r = run_on_small_fs(false)
    assert.matches("survived", r.stdout, r.stderr)
    assert.are.same({}, h.records_of(r.records, "stopped"))
    assert.are.equal("", h.capture("ls -A " .. h.shell_quote(mnt)), "the file system was the test's own")
  end)
end)
