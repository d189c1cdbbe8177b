--- Runs real bubblewrap through wrap_command and checks what happened on the
--- host: files, the loopback network, processes.
local h = require("support.helpers")
local net = require("support.net")
local surroundings = require("flemma_sandbox.base.surroundings")
local sandbox = require("flemma_sandbox")

describe("sandboxed execution (real bwrap)", function()
  local dir, proj, outside

  local function use_policy(policy)
    policy.rw_paths = policy.rw_paths or { "$CWD" }
    sandbox.setup({ backend = "bwrap", policy = policy })
  end

  local function run(inner, env)
    local argv, _, record = assert(sandbox.wrap_command(inner, nil))
    assert.is_truthy(argv[1] == "bwrap" or argv[1]:match("/flemma%-sandbox%-host$"), argv[1])
    return h.run_wrapped(argv, env, nil, record)
  end

  before_each(function()
    dir = h.tmpdir()
    proj = dir .. "/proj"
    outside = dir .. "/outside"
    h.sh("mkdir " .. h.shell_quote(proj) .. " " .. h.shell_quote(outside))
    h.write(outside .. "/keep.txt", "original\n")
    surroundings.use({
      cwd = function()
        return proj
      end,
    })
    use_policy({})
  end)
  after_each(function()
    surroundings.use(nil)
    sandbox.setup()
    h.rmdir(dir)
  end)

  it("lets a write to a rw path land", function()
    local r = run({ "sh", "-c", "echo landed > " .. h.shell_quote(proj .. "/out.txt") })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("landed\n", h.read(proj .. "/out.txt"))
  end)

  it("a first run with no state folder yet keeps it: nothing of ours is ever watched or moved", function()
    -- the state folder (and Neovim's, above it) inside a writable folder, none of it made yet
    local xdg_state = dir .. "/state"
    surroundings.use({
      cwd = function()
        return proj
      end,
      getenv = function(name)
        return name == "XDG_STATE_HOME" and xdg_state or os.getenv(name)
      end,
      stdpath = function(name)
        -- Neovim's state folder under the same XDG_STATE_HOME: the first missing folder above it is ours
        return name == "state" and (xdg_state .. "/nvim") or (dir .. "/nvim-" .. name)
      end,
    })
    use_policy({ rw_paths = { "$CWD", dir } })
    local r = run({ "sh", "-c", "echo evil > " .. h.shell_quote(proj .. "/.nvim.lua") })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("directory", require("flemma_sandbox.core").file_type(xdg_state .. "/flemma-sandbox/quarantine"))
    assert.is_nil(h.read(proj .. "/.nvim.lua"))
    local moved = h.records_of(r.records, "moved")
    assert.are.equal(1, #moved, r.stderr)
    assert.are.equal(proj .. "/.nvim.lua", moved[1].from)
    assert.matches("^" .. xdg_state:gsub("%p", "%%%0") .. "/flemma%-sandbox/quarantine/", moved[1].to)
    assert.are.equal("evil\n", h.read(moved[1].to), "the file is in the quarantine")
  end)

  it("stops a command at tools.max_timeout_ms, whoever runs it, and leaves no process", function()
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { "$CWD" } }, tools = { max_timeout_ms = 1000 } })
    local t0 = os.time()
    local r = run({ "sh", "-c", "sleep 1987; echo never" })
    assert.is_true(os.time() - t0 < 10, "stopped within the grace period")
    assert.are_not.equal(0, r.code)
    assert.are.same({ { type = "stopped", reason = "time_limit", ms = "1000" } }, h.records_of(r.records, "stopped"))
    -- the kernel ends what was in the sandbox's pid namespace a moment
    -- after its init: gone within 3 s
    local left = ""
    for _ = 1, 30 do
      left = h.capture("pgrep -f 'sleep [1]987' || true")
      if left == "" then
        break
      end
      h.sh("sleep 0.1")
    end
    assert.are.equal("", left)
    -- control: within the limit the command ends by itself
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { "$CWD" } }, tools = { max_timeout_ms = 20000 } })
    r = run({ "sh", "-c", "sleep 1; echo done" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("done\n", r.stdout)
    assert.are.same({}, r.records)
  end)

  it("fails a write outside rw_paths and leaves the file as it was", function()
    local target = outside .. "/keep.txt"
    local r = run({ "sh", "-c", "echo evil > " .. h.shell_quote(target) })
    assert.are_not.equal(0, r.code)
    assert.matches("Read%-only file system", r.stderr)
    assert.are.equal("original\n", h.read(target))

    r = run({ "sh", "-c", "rm -f " .. h.shell_quote(target) .. "; touch " .. h.shell_quote(outside .. "/new") })
    assert.are_not.equal(0, r.code)
    assert.are.equal("original\n", h.read(target))
    assert.is_nil(h.read(outside .. "/new"))
  end)

  it("gives each command a private /tmp: the host's is out of reach, nothing lands there", function()
    local marker = "/tmp/flemma-exec-" .. tostring(os.time()) .. tostring(math.random(1e6))
    h.write(marker .. ".host", "host file\n")
    local r = run({ "sh", "-c", "cat " .. marker .. ".host; echo x > " .. marker .. " && cat " .. marker })
    os.remove(marker .. ".host")
    assert.are.equal("x\n", r.stdout) -- writable inside
    assert.matches("No such file", r.stderr) -- the host's file is not there
    assert.is_nil(h.read(marker))
  end)

  it("blocks the host's loopback when network is false or the allowlist, and allows it with the host's", function()
    local listener = net.listen()
    local connect = "exec 3<>/dev/tcp/127.0.0.1/" .. listener.port .. " && echo connected"

    for _, mode in ipairs({ false, true, "allowlist" }) do
      use_policy({ network = mode })
      local r = run({ "bash", "-c", connect })
      assert.are_not.equal(0, r.code, tostring(mode))
      assert.is_false(listener.accepted(), tostring(mode))
    end

    -- control: the host's network reaches it
    use_policy({ network = "host" })
    local r = run({ "bash", "-c", connect })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("connected\n", r.stdout)
    assert.is_true(listener.accepted())
    listener.close()
  end)

  it("runs the command in its own PID namespace", function()
    local host_pid = tonumber(h.run({ "sh", "-c", "echo $PPID" }).stdout)
    local r =
      run({ "sh", "-c", "ls /proc | grep -c '^[0-9]'; if test -e /proc/" .. host_pid .. "; then echo visible; fi" })
    assert.are.equal(0, r.code, r.stderr)
    local count = tonumber(r.stdout:match("^(%d+)"))
    -- bwrap's init, the bridge to the network proxy, sh, ls and grep
    assert.is_true(count <= 5, "saw " .. tostring(count) .. " processes")
    assert.not_matches("visible", r.stdout)
  end)

  it("runs an inner command whose first word starts with --", function()
    h.write(proj .. "/--flemma-probe", '#!/bin/sh\necho probe-ran "$@"\n')
    h.sh("chmod +x " .. h.shell_quote(proj .. "/--flemma-probe"))
    surroundings.use({
      cwd = function()
        return proj
      end,
      getenv = function(name)
        return name == "PATH" and (proj .. ":" .. os.getenv("PATH")) or os.getenv(name)
      end,
    })
    local r = run({ "--flemma-probe", "--help" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("probe-ran --help\n", r.stdout)
  end)

  it("hides deny paths: an empty folder, a file that cannot be read", function()
    h.sh("mkdir " .. h.shell_quote(outside .. "/keys") .. " && echo KEY > " .. h.shell_quote(outside .. "/keys/id"))
    h.write(outside .. "/token", "TOKEN\n")
    use_policy({ deny_read = { outside .. "/keys", outside .. "/token" } })
    local r = run({ "sh", "-c", "ls -A " .. h.shell_quote(outside .. "/keys") })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stdout)
    -- /dev/null bound on a nodev mount: opening it fails, nothing leaks
    r = run({ "cat", outside .. "/token" })
    assert.are_not.equal(0, r.code)
    assert.are.equal("", r.stdout)
    assert.matches("Permission denied", r.stderr)
    assert.are.equal("KEY\n", h.read(outside .. "/keys/id"))
    assert.are.equal("TOKEN\n", h.read(outside .. "/token"))
  end)

  it("drops privileges: no capabilities inside, even for root", function()
    local r = run({ "sh", "-c", "grep CapEff /proc/self/status" })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("CapEff:%s+0+\n", r.stdout)
  end)

  it("refuses nested user namespaces where bwrap can (--disable-userns)", function()
    local probe = require("flemma_sandbox.backends.bwrap_probe")
    if not probe.features({})["disable-userns"] then
      pending("this bwrap has no --disable-userns")
      return
    end
    local r = run({ "sh", "-c", "unshare -U true && echo nested-ok" })
    assert.are_not.equal(0, r.code)
    assert.are.equal("", r.stdout)
  end)

  it("gives the command a clean environment: no API keys unless named", function()
    local env = {
      PATH = os.getenv("PATH"),
      HOME = dir .. "/home-demo",
      LANG = "C.UTF-8",
      OPENAI_API_KEY = "sk-test-secret",
      GITHUB_TOKEN = "ghp-secret",
      NOT_LISTED = "x",
    }
    surroundings.use({
      cwd = function()
        return proj
      end,
      getenv = function(name)
        return env[name]
      end,
      environ = function()
        return env
      end,
    })
    local r = h.run(assert(sandbox.wrap_command({ "env" }, nil)), { OPENAI_API_KEY = "sk-test-secret" })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("\nLANG=C.UTF%-8\n", "\n" .. r.stdout)
    assert.matches("\nHOME=" .. (dir .. "/home-demo"):gsub("%p", "%%%0") .. "\n", "\n" .. r.stdout)
    assert.not_matches("secret", r.stdout)
    assert.not_matches("NOT_LISTED", r.stdout)

    use_policy({ env_allow = { "OPENAI_API_KEY", "GITHUB*", "NOT_*" } })
    r = h.run((assert(sandbox.wrap_command({ "env" }, nil))))
    assert.matches("OPENAI_API_KEY=sk%-test%-secret", r.stdout)
    assert.matches("NOT_LISTED=x", r.stdout)
    assert.not_matches("GITHUB_TOKEN", r.stdout) -- a pattern never lets a credential through
  end)

  it("calls bwrap available only when it really starts a sandbox", function()
    local bwrap = require("flemma_sandbox.backends.bwrap")
    assert.are.same({ true, nil }, { bwrap.available({}) })
    local ok, err = bwrap.available({ path = "/bin/false" })
    assert.is_false(ok)
    assert.matches("cannot start a sandbox here", err)
    ok, err = bwrap.available({ path = "/nonexistent/bwrap" })
    assert.is_false(ok)
    assert.matches("install the bubblewrap package", err)
  end)

  it("keeps a missing rw path out instead of failing the command", function()
    use_policy({ rw_paths = { "$CWD", dir .. "/not-there" } })
    local r = run({ "sh", "-c", "echo ok > " .. h.shell_quote(proj .. "/f") })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("ok\n", h.read(proj .. "/f"))
    assert.is_nil(h.read(dir .. "/not-there"))
  end)

  it("without a state folder refuses to run a project command, saying why, and leaves nothing behind", function()
    surroundings.use({
      cwd = function()
        return proj
      end,
      getenv = function(name)
        return name == "PATH" and os.getenv("PATH") or nil -- no HOME, no XDG_STATE_HOME
      end,
    })
    -- the check after the run needs a folder the sandbox cannot write
    local argv, err = sandbox.wrap_command({ "sh", "-c", "echo evil > .envrc" }, nil)
    assert.is_nil(argv)
    assert.matches("no state folder for the check after the run: .*HOME", err)
    assert.is_nil(h.read(proj .. "/.envrc"))
    assert.are.equal("", h.capture("ls -A " .. h.shell_quote(proj)))
  end)

  it("as root, a socket in another user's private folder neither breaks the sandbox nor gets hidden", function()
    if not h.is_root() then
      return pending("needs root: the folder belongs to another user")
    end
    local priv = dir .. "/priv"
    h.sh("mkdir " .. h.shell_quote(priv))
    local l = net.listen_kind("unix", priv .. "/s")
    h.sh("chown -R nobody " .. h.shell_quote(priv) .. " && chmod 700 " .. h.shell_quote(priv))
    local argv = assert(sandbox.wrap_command({ "sh", "-c", "echo ran" }, nil))
    local r = h.run(argv)
    l.close()
    assert.are.equal("ran\n", r.stdout, r.stderr)
    assert.is_nil(table.concat(argv, " "):find(priv, 1, true))
  end)

  it("a protected file we cannot open is still protected and does not stop the command", function()
    if h.is_root() then
      return pending("root can open any file")
    end
    h.write(proj .. "/.envrc", "original\n")
    h.sh("chmod 000 " .. h.shell_quote(proj .. "/.envrc"))
    local r = h.run(assert(sandbox.wrap_command({ "sh", "-c", "echo ran; echo evil > .envrc" }, nil)), nil, proj)
    h.sh("chmod 600 " .. h.shell_quote(proj .. "/.envrc"))
    assert.are.equal("ran\n", r.stdout, r.stderr)
    assert.are.equal("original\n", h.read(proj .. "/.envrc"))
  end)
end)
