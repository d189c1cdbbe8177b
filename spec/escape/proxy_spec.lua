--- Escape suite: the allowlist network mode (the default). The command has
--- its own network namespace, and its only way out is the run's proxy, to
--- allow_domains. Test servers on 127.0.0.2/3 play the outside world,
--- reached by name through the proxy's test-only name map
--- (FLEMMA_SANDBOX_PROXY_TEST=1); nothing is sent anywhere else.
local f = require("escape.fixture")
local h = require("support.helpers")
local net = require("support.net")

--- A shell line that sends the request text to HTTP_PROXY and prints the reply.
local function through_proxy(text)
  return 'p=${HTTP_PROXY#http://}; exec 3<>"/dev/tcp/${p%:*}/${p##*:}" && printf '
    .. h.shell_quote(text)
    .. " >&3 && cat <&3"
end

describe("escape: the network through the allowlist proxy", function()
  local w, server, server_pid, port, hosts, env, slow_mark
  setup(function()
    w = f.create()
    f.use_host(w, {})
    -- a /slow reply's start is marked there (the killer below waits for it)
    -- (on the host, outside the tree whose changes each attack checks)
    slow_mark = os.tmpname()
    os.remove(slow_mark)
    server = assert(
      io.popen(
        "FLEMMA_SPEC_SLOW_MARK="
          .. h.shell_quote(slow_mark)
          .. " exec luajit spec/support/http.lua serve 127.0.0.2 2>&1",
        "r"
      )
    )
    local first = server:read("*l")
    port, server_pid = first:match("^port (%d+) pid (%d+)")
    port = tonumber(port)
    hosts = w.outside .. "/proxy-hosts"
    -- loop.test stands for a name that resolves to the host's loopback
    h.write(hosts, "allowed.test 127.0.0.2\nother.test 127.0.0.2\nloop.test 127.0.0.1 checked\n")
    env = { FLEMMA_SANDBOX_PROXY_TEST = "1", FLEMMA_SANDBOX_PROXY_TEST_HOSTS = hosts }
  end)
  teardown(function()
    os.remove(slow_mark)
    h.sh("kill " .. server_pid)
    server:close()
    f.destroy(w)
  end)
  before_each(function()
    f.policy({ network = "allowlist", allow_domains = { "allowed.test", "loop.test" } })
  end)

  local function get(name)
    return "GET http://" .. name .. ":" .. port .. "/hello HTTP/1.1\r\nHost: " .. name .. "\r\n\r\n"
  end

  it("reaches an allowed name through HTTP_PROXY, and no other (control: both answer directly)", function()
    local r = f.attack(w, through_proxy(get("allowed.test")), { env = env })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("hello /hello host=allowed.test", r.stdout)
    r = f.attack(w, through_proxy(get("other.test")), { env = env })
    assert.matches("^HTTP/1.1 403 Forbidden", r.stdout)
    assert.matches("other%.test is not in allow_domains", r.stdout)
    assert.are.same({ "blocked", "other.test" }, { r.records[1].type, r.records[1].host })
    assert.are.equal(1, #r.records)
    -- control: the same server answers the host for either name
    local http = require("support.http")
    local s = assert(http.connect_tcp("127.0.0.2", port))
    s.send("GET /hello HTTP/1.1\r\nHost: other.test\r\n\r\n")
    assert.matches("hello /hello host=other%.test", s.receive())
    s.close()
  end)

  it("cannot reach the host's loopback, directly or through the proxy by address or by name", function()
    local l = net.listen()
    local r = f.attack(w, "echo EXFIL > /dev/tcp/127.0.0.1/" .. l.port, { env = env })
    assert.are_not.equal(0, r.code)
    r = f.attack(
      w,
      through_proxy("CONNECT 127.0.0.1:" .. l.port .. " HTTP/1.1\r\n\r\n")
        .. "; "
        .. through_proxy("CONNECT loop.test:" .. l.port .. " HTTP/1.1\r\n\r\n"),
      { env = env }
    )
    assert.matches("127%.0%.0%.1 is not in allow_domains", r.stdout)
    assert.matches("loop%.test resolves to a loopback address", r.stdout)
    assert.is_false(l.accepted())
    -- control: with the host's network the listener is reached
    f.policy({ network = "host" })
    f.attack(w, "echo EXFIL > /dev/tcp/127.0.0.1/" .. l.port)
    assert.is_true(l.accepted())
    l.close()
  end)

  it("cannot reach a host's abstract unix socket: the namespace is the sandbox's own", function()
    local name = "flemma-escape-proxy-" .. f.SECRET
    local l = net.listen_kind("abstract", name)
    local r = f.attack(w, f.script("connect-unix", "abstract", name), { env = env })
    assert.matches("^ERR", r.stdout)
    assert.is_false(l.accepted())
    l.close()
  end)

  it("ends the command's transfer, without a hang, when the proxy is killed in the middle of it", function()
    -- a chat's sandbox has its proxy's socket in its live folder
    local runs = require("flemma_sandbox.base.surroundings").state_dir(f.WARM and "live" or "runs")
    -- a host-side killer, once the transfer runs (the server marks its
    -- start): the sandbox cannot see the proxy's process
    os.remove(slow_mark)
    h.sh(
      "(i=0; until [ -e "
        .. h.shell_quote(slow_mark)
        .. " ] || [ $i -ge 600 ]; do sleep 0.05; i=$((i+1)); done; pkill -KILL -f "
        .. h.shell_quote("flemma-sandbox-proxy --listen " .. runs)
        .. ") >/dev/null 2>&1 </dev/null &"
    )
    local t = os.time()
    local req = "GET http://allowed.test:" .. port .. "/slow/20 HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
    local r = f.attack(w, through_proxy(req) .. "; echo ended", { env = env })
    assert.matches("tick\n", r.stdout, 1, true)
    if f.WARM then
      -- without its proxy a chat's sandbox stops (the next call starts it
      -- again). Its keeper records why as soon as the proxy ends; the call
      -- may end a moment sooner (its transfer broke first), and then the
      -- record is in the keeper's own records, not in the call's.
      local function keeper_says()
        local p = io.popen("cat " .. h.shell_quote(runs) .. "/*/keeper.records 2>/dev/null")
        local text = p:read("*a")
        p:close()
        return text:find("proxy_ended", 1, true) ~= nil
      end
      local stopped = h.records_of(r.records, "stopped")
      local recorded = (stopped[1] or {}).reason == "proxy_ended"
      for _ = 1, 100 do
        recorded = recorded or keeper_says()
        if recorded then
          break
        end
        h.sh("sleep 0.05")
      end
      assert.is_true(recorded, "the sandbox stopped for its proxy: " .. r.stderr)
      assert.is_true(os.time() - t < 10, "the command ended long before the 20 s transfer would have")
      return
    end
    assert.matches("ended\n$", r.stdout)
    assert.is_true(os.time() - t < 10, "the command ended long before the 20 s transfer would have")
  end)

  it("leaves no proxy process and no socket after the run", function()
    -- proxies only: a command line that starts with the program (the
    -- killer shell of the spec above, or its pkill, names it later on);
    -- this world's only: its socket is in our state folder (runs/, or
    -- live/ for a chat's sandbox), never another run's on the machine
    local state = require("flemma_sandbox.base.surroundings").state_dir("runs"):gsub("/runs$", "")
    local pattern = "^[^ ]*/flemma-sandbox-proxy --listen "
      .. state:gsub("[%^%$%(%)%.%[%]%*%+%?%{%}|\\]", "\\%0")
      .. "/"
    local count = "pgrep -c -f " .. h.shell_quote(pattern) .. " || true"
    local function proxies()
      return tonumber((h.capture(count):gsub("%s", ""))) or 0
    end
    -- another run's proxy on the machine (another user's sandbox, say) is
    -- not counted; control: a count of every proxy sees it
    local other_dir = h.tmpdir()
    local program = require("flemma_sandbox.core").absolute(
      "lua/flemma_sandbox/flemma-sandbox-proxy",
      require("flemma_sandbox.core").getcwd()
    )
    local other =
      assert(io.popen("exec " .. h.shell_quote(program) .. " --listen " .. h.shell_quote(other_dir .. "/p.sock"), "r"))
    local other_pid = assert(other:read("*l"):match("^listening %S+ (%d+)$"))
    local function stop_other()
      if other then
        -- (a proxy ends with its parent: this one's waits in close for it)
        h.sh("kill " .. other_pid .. " 2>/dev/null || true")
        other:close()
        other = nil
        h.rmdir(other_dir)
      end
    end
    finally(stop_other)
    local every = "pgrep -f '^[^ ]*/flemma-sandbox-proxy --listen '"
    assert.matches("%f[%d]" .. other_pid .. "%f[^%d]", h.capture(every .. " || true"))
    assert.are.equal(0, proxies(), "another run's proxy was counted")
    stop_other()
    -- a chat's sandbox keeps its proxy while it runs: stopped here first
    f.stop_live()
    -- the proxy the spec above killed may take a moment to be reaped
    for _ = 1, 50 do
      if proxies() == 0 then
        break
      end
      h.sh("sleep 0.1")
    end
    assert.are.equal(0, proxies(), "a proxy of an earlier run is still alive")
    -- control: the count sees this run's proxy while a transfer goes on
    -- (counted on the host once the server marks the transfer's start)
    local seen = os.tmpname()
    os.remove(slow_mark)
    h.sh(
      "(i=0; until [ -e "
        .. h.shell_quote(slow_mark)
        .. " ] || [ $i -ge 600 ]; do sleep 0.05; i=$((i+1)); done; "
        .. "{ "
        .. count
        .. "; } > "
        .. h.shell_quote(seen)
        .. ") >/dev/null 2>&1 </dev/null &"
    )
    local slow = "GET http://allowed.test:" .. port .. "/slow/2 HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
    f.attack(w, through_proxy(slow), { env = env })
    for _ = 1, 50 do
      if (h.read(seen) or ""):find("\n") then
        break
      end
      h.sh("sleep 0.1")
    end
    assert.are.equal(1, tonumber((h.read(seen) or ""):match("^(%d+)\n")), "the run's own proxy counted")
    os.remove(seen)
    f.stop_live()
    assert.are.equal(0, proxies(), "this run's proxy outlived it")
    f.attack(w, through_proxy(get("allowed.test")), { env = env })
    f.stop_live()
    assert.are.equal(0, proxies(), "this run's proxy outlived it")
    local runs = require("flemma_sandbox.base.surroundings").state_dir("runs")
    assert.are.equal("", h.capture("ls -A " .. h.shell_quote(runs)))
  end)
end)
