--- Escape suite: getting data out through the network with network off,
--- and through host unix sockets. Listeners are the test's own, on loopback
--- (127.0.0.1, ::1) or unix sockets; nothing is ever sent elsewhere.
local f = require("escape.fixture")
local h = require("support.helpers")
local net = require("support.net")
local core = require("flemma_sandbox.core")

describe("escape: the network and host sockets", function()
  local w, listeners
  setup(function()
    w = f.create()
    f.use_host(w, {})
  end)
  teardown(function()
    f.destroy(w)
  end)
  before_each(function()
    listeners = {}
    f.policy()
  end)
  after_each(function()
    for _, l in ipairs(listeners) do
      l.close()
    end
  end)

  local function listen(kind, name)
    local l = net.listen_kind(kind, name)
    listeners[#listeners + 1] = l
    return l
  end

  it("cannot reach a TCP listener on the host's 127.0.0.1", function()
    local l = listen("tcp4")
    local r = f.attack(w, "echo EXFIL > /dev/tcp/127.0.0.1/" .. l.port)
    assert.are_not.equal(0, r.code)
    assert.is_false(l.accepted())
  end)

  it("cannot reach a TCP listener on the host's ::1", function()
    local ok, l = pcall(listen, "tcp6")
    if not ok then
      return pending("no IPv6 loopback here")
    end
    local r = f.attack(w, "echo EXFIL > /dev/tcp/::1/" .. l.port)
    assert.are_not.equal(0, r.code)
    assert.is_false(l.accepted())
  end)

  it("cannot send UDP to the host's 127.0.0.1", function()
    local l = listen("udp4")
    f.attack(w, "for i in 1 2 3; do echo EXFIL > /dev/udp/127.0.0.1/" .. l.port .. "; done")
    assert.is_false(l.accepted())
  end)

  it("cannot reach a host's abstract unix socket", function()
    local name = "flemma-escape-" .. f.SECRET
    local l = listen("abstract", name)
    local r = f.attack(w, f.script("connect-unix", "abstract", name))
    assert.matches("^ERR", r.stdout)
    assert.is_false(l.accepted())
  end)

  it("cannot reach a host's abstract unix socket even with network on (Landlock scope)", function()
    local client = require("flemma_sandbox.backends.helper")
    if client.helper_info().landlock < client.LANDLOCK_SCOPE_ABI then
      return pending("the kernel has no Landlock scoping (Linux 6.12+)")
    end
    f.policy({ network = true })
    local name = "flemma-escape-net-" .. f.SECRET
    local l = listen("abstract", name)
    local r = f.attack(w, f.script("connect-unix", "abstract", name))
    assert.matches("^ERR", r.stdout)
    assert.is_false(l.accepted())
  end)

  it("the control: with the host's network, the same TCP listener is reached", function()
    f.policy({ network = "host" })
    local l = listen("tcp4")
    f.attack(w, "echo EXFIL > /dev/tcp/127.0.0.1/" .. l.port)
    assert.is_true(l.accepted())
  end)

  it("cannot connect to a unix socket a host process listens on in the home folder", function()
    local path = w.home .. "/agent.sock"
    local l = listen("unix", path)
    local r = f.attack(w, f.script("connect-unix", "path", path))
    assert.matches("^ERR", r.stdout)
    assert.is_false(l.accepted())
  end)

  it("cannot connect to $SSH_AUTH_SOCK in /tmp although /tmp is writable", function()
    local dir = (h.capture("mktemp -d /tmp/flemma-escape-ssh.XXXXXX"):gsub("%s+$", ""))
    local l = listen("unix", dir .. "/agent.1")
    f.use_host(w, {
      getenv = function(name)
        if name == "SSH_AUTH_SOCK" then
          return dir .. "/agent.1"
        end
        return name == "HOME" and w.home or (not name:match("^XDG_") and os.getenv(name) or nil)
      end,
    })
    local r = f.attack(w, f.script("connect-unix", "path", dir .. "/agent.1"))
    f.use_host(w)
    assert.matches("^ERR", r.stdout)
    assert.is_false(l.accepted())
    h.sh("rm -rf " .. dir)
  end)

  it("cannot connect to an unnamed host socket in /tmp (a tmux server, say)", function()
    local dir = (h.capture("mktemp -d /tmp/flemma-escape-tmux.XXXXXX"):gsub("%s+$", ""))
    local l = listen("unix", dir .. "/default")
    local r = f.attack(w, f.script("connect-unix", "path", dir .. "/default"))
    assert.matches("^ERR", r.stdout)
    assert.is_false(l.accepted())
    h.sh("rm -rf " .. dir)
  end)

  it("cannot reach the session bus folder /run/user/UID", function()
    local dir = "/run/user/" .. core.getuid()
    if core.file_type(dir) ~= "directory" or not h.capture("test -w " .. dir .. " && echo yes"):match("yes") then
      return pending(dir .. " does not exist here")
    end
    local path = dir .. "/flemma-escape-bus-" .. tostring(core.getpid())
    local l = listen("unix", path)
    local r = f.attack(w, f.script("connect-unix", "path", path) .. "; ls -A " .. dir)
    os.remove(path)
    assert.matches("^ERR", r.stdout)
    assert.is_false(l.accepted())
    if core.file_type(dir .. "/bus") == "socket" then
      assert.matches("^ERR", f.attack(w, f.script("connect-unix", "path", dir .. "/bus")).stdout)
    end
  end)

  it("the control: a socket inside the project keeps working", function()
    local path = w.proj .. "/dev-server.sock"
    local l = listen("unix", path)
    local r = f.attack(w, f.script("connect-unix", "path", path))
    os.remove(path)
    assert.are.equal("OK\n", r.stdout)
    assert.is_true(l.accepted())
  end)

  it("allow_sockets lets a chosen host socket through", function()
    local path = w.home .. "/allowed.sock"
    local l = listen("unix", path)
    f.policy({ allow_sockets = { "~/allowed.sock" } })
    local r = f.attack(w, f.script("connect-unix", "path", path))
    os.remove(path)
    assert.are.equal("OK\n", r.stdout)
    assert.is_true(l.accepted())
  end)
end)
