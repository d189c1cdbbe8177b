--- Escape suite: what changes between planning a command (wrap_command,
--- whose policy may come from the cache) and running it. The helper looks
--- at the tree and the host's sockets right before bwrap starts: a ".git"
--- or a protected name the user made meanwhile is read-only (and kept), a
--- socket bound meanwhile outside the private folders is covered. Each
--- attack has a control showing it works without the protection.
local f = require("escape.fixture")
local h = require("support.helpers")
local sandbox = require("flemma_sandbox")

local q = h.shell_quote

describe("escape: made between planning and running", function()
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

  --- Plans `cmd`, runs `between` on the host, then runs the plan.
  local function plan_then_run(cmd, between)
    local argv = assert(sandbox.wrap_command({ "bash", "-c", cmd }))
    between()
    return h.run(argv, f.ENV, w.proj)
  end

  it("a nested .git the user made after the plan is read-only, and kept", function()
    local deep = w.proj .. "/vendor/a/b"
    sandbox.get_policy() -- the cached plan knows no vendor/a/b
    local r = plan_then_run("echo evil > vendor/a/b/.git/hooks/post-checkout; echo done", function()
      h.sh("mkdir -p " .. q(deep .. "/.git/hooks"))
    end)
    assert.matches("done", r.stdout)
    assert.matches("Read%-only file system", r.stderr)
    assert.is_nil(h.read(deep .. "/.git/hooks/post-checkout"))
    assert.are.equal("directory", require("flemma_sandbox.core").file_type(deep .. "/.git"))
    assert.is_nil(table.concat(f.quarantined(w), "\n"):find(deep, 1, true), "the user's repository stays")
    -- control: without the ".git/" rule the same write lands
    f.policy({ deny_write = { "!.git/" } })
    r = plan_then_run("echo evil > vendor/a/b/.git/hooks/post-checkout", function() end)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("evil\n", h.read(deep .. "/.git/hooks/post-checkout"))
    h.sh("rm -rf " .. q(w.proj .. "/vendor"))
  end)

  it("a protected name the user made after the plan is read-only, and kept", function()
    local argv = assert(sandbox.wrap_command({ "bash", "-c", "echo evil >> .nvim.lua; cat .nvim.lua" }))
    h.write(w.proj .. "/.nvim.lua", "-- the user's\n")
    local r = h.run(argv, f.ENV, w.proj)
    assert.matches("Read%-only file system", r.stderr)
    assert.are.equal("-- the user's\n", r.stdout)
    assert.are.equal("-- the user's\n", h.read(w.proj .. "/.nvim.lua"))
    assert.is_nil(table.concat(f.quarantined(w), "\n"):find(w.proj .. "/.nvim.lua", 1, true))
    -- control: without the rule the command changes it
    f.policy({ deny_write = { "!.nvim.lua" } })
    r = f.attack(w, "echo evil >> .nvim.lua", { keep_host = true })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("-- the user's\nevil\n", h.read(w.proj .. "/.nvim.lua"))
    os.remove(w.proj .. "/.nvim.lua")
  end)

  it("a plan made again sees a folder that appeared (the cache checks the folders it looked in)", function()
    local function protects(resolved, path)
      for _, p in ipairs(resolved.protected) do
        if p.path == path then
          return true
        end
      end
      return false
    end
    local before = sandbox.get_policy()
    local again = sandbox.get_policy()
    assert.are.equal(before.protected, again.protected, "nothing changed: the same resolution")
    assert.is_false(protects(before, w.proj .. "/.vscode"))
    h.sh("mkdir -p " .. q(w.proj .. "/.vscode"))
    local after = sandbox.get_policy()
    h.sh("rm -rf " .. q(w.proj .. "/.vscode"))
    assert.is_true(protects(after, w.proj .. "/.vscode"))
  end)
end)

describe("escape: host sockets outside the private folders", function()
  local w, dir
  setup(function()
    w = f.create()
    f.use_host(w)
  end)
  teardown(function()
    f.destroy(w)
  end)
  before_each(function()
    f.policy()
    dir = (h.capture("mktemp -d /var/tmp/flemma-escape-socks.XXXXXX"):gsub("%s+$", ""))
    h.sh("chmod 755 " .. q(dir))
  end)
  after_each(function()
    h.write(dir .. "/stop", "")
    h.sh("sleep 0.2; rm -rf " .. q(dir))
  end)

  --- Starts a host program holding n sockets in folder; waits until bound.
  local function hold(folder, n)
    h.sh("luajit spec/support/hold_sockets.lua " .. q(folder) .. " " .. n .. " >/dev/null 2>&1 &")
    for _ = 1, 200 do
      if h.read(folder .. "/ready") then
        return folder .. "/s1.sock"
      end
      h.sh("sleep 0.05")
    end
    error("the socket holder did not start")
  end

  --- Mount points inside the sandbox at or under folder.
  local function mounts_in(folder)
    return "awk '{print $5}' /proc/self/mountinfo | grep -c '^" .. folder .. "' ; "
  end

  it("cannot reach a socket in /var/tmp bound after the plan", function()
    local argv = assert(sandbox.wrap_command({ "bash", "-c", f.script("connect-unix", "path", dir .. "/s1.sock") }))
    local sock = hold(dir, 1)
    local r = h.run(argv, f.ENV, w.proj)
    assert.matches("^ERR", r.stdout)
    -- control: the same socket, let through by allow_sockets, is reached
    f.policy({ allow_sockets = { dir } })
    assert.are.equal("OK\n", f.attack(w, f.script("connect-unix", "path", sock)).stdout)
  end)

  it("covers a folder of 300 sockets with one mount, not 300", function()
    local sock = hold(dir, 300)
    local r = f.attack(w, mounts_in(dir) .. f.script("connect-unix", "path", sock))
    assert.are.same({ "1", "ERR" }, { r.stdout:match("^(%d+)\n(%u+)") })
    -- control: let through, none covers them and the socket is reached
    f.policy({ allow_sockets = { dir } })
    r = f.attack(w, mounts_in(dir) .. f.script("connect-unix", "path", sock))
    assert.are.equal("0\nOK\n", r.stdout)
  end)

  it("covers sockets in a writable shared folder one by one: the folder stays writable", function()
    f.policy({ rw_paths = { "$CWD", "/var/tmp" } })
    local sock = hold(dir, 3)
    local r = f.attack(w, "echo kept > " .. q(dir .. "/note") .. "; " .. f.script("connect-unix", "path", sock))
    assert.matches("ERR", r.stdout)
    assert.are.equal("kept\n", h.read(dir .. "/note"))
    -- control: the same folder as a project lets its own sockets through
    f.policy({ rw_paths = { "$CWD", dir } })
    assert.are.equal("OK\n", f.attack(w, f.script("connect-unix", "path", sock)).stdout)
  end)
end)
