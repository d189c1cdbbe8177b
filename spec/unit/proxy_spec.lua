--- flemma-sandbox-proxy on its own (csrc/proxy/proxy_main.c, proxy_conn.c):
--- what it lets through and what it refuses, with test servers on
--- 127.0.0.x that the spec starts. Nothing here talks to any other address.
local h = require("support.helpers")
local http = require("support.http")

local PROXY = "lua/flemma_sandbox/flemma-sandbox-proxy"

--- A process whose first stdout line the spec reads (io.popen): its
--- handle, that line, and a stop function.
local function start(cmd)
  local f = assert(io.popen(cmd .. " 2>&1", "r"))
  local first = f:read("*l")
  return f, first
end

describe("flemma-sandbox-proxy", function()
  local dir, server, server2, port, port2, pids
  setup(function()
    local first, first2
    server, first = start("exec luajit spec/support/http.lua serve 127.0.0.2")
    server2, first2 = start("exec luajit spec/support/http.lua serve 127.0.0.3")
    port = tonumber(first:match("^port (%d+)"))
    port2 = tonumber(first2:match("^port (%d+)"))
    pids = first:match("pid (%d+)") .. " " .. first2:match("pid (%d+)")
    assert(port and port2, "test servers started")
  end)
  teardown(function()
    h.sh("kill " .. pids)
    server:close()
    server2:close()
  end)

  local proxies = {}
  before_each(function()
    dir = h.tmpdir()
    h.write(
      dir .. "/hosts",
      "allowed.test 127.0.0.2\na.allowed.test 127.0.0.2\nother.test 127.0.0.3\nloop.test 127.0.0.2 checked\n"
    )
  end)
  after_each(function()
    for _, p in ipairs(proxies) do
      h.sh("kill " .. p.pid .. " 2>/dev/null || true")
      p.out:close()
    end
    proxies = {}
    h.rmdir(dir)
  end)

  --- Starts a proxy with the test name map; returns its socket path and
  --- a function giving what it printed since (after it is stopped).
  local function proxy(args)
    local sock = dir .. "/proxy.sock"
    local records_file = dir .. "/proxy.records"
    h.write(records_file, "")
    local cmd = "FLEMMA_SANDBOX_PROXY_TEST=1 exec 7>>"
      .. records_file
      .. " "
      .. PROXY
      .. " --records-fd 7"
      .. " --listen "
      .. sock
      .. " --test-hosts "
      .. dir
      .. "/hosts"
    for _, a in ipairs(args or {}) do
      cmd = cmd .. " " .. h.shell_quote(a)
    end
    local out, first = start(cmd)
    local pid = assert(tostring(first):match("^listening %S+ (%d+)$"), tostring(first))
    local p = { pid = pid, out = out, sock = sock }
    proxies[#proxies + 1] = p
    --- Stops it: what it said on stdout, and its records (--records-fd).
    function p.stop()
      h.sh("kill " .. pid .. " 2>/dev/null || true")
      local text = out:read("*a")
      return text, require("flemma_sandbox.run.records").parse(h.read(records_file) or "")
    end
    return p
  end

  local function get(p, target, host)
    return http.request(p.sock, "GET " .. target .. " HTTP/1.1\r\nHost: " .. host .. "\r\n\r\n")
  end

  it("lets an allowed name through, forwarded and through CONNECT (control: the server answers directly)", function()
    local direct = http.connect_tcp("127.0.0.2", port)
    direct.send("GET /hello HTTP/1.1\r\nHost: d\r\n\r\n")
    assert.matches("hello /hello host=d", direct.receive())
    direct.close()
    local p = proxy({ "--allow", "allowed.test" })
    local reply = get(p, "http://allowed.test:" .. port .. "/hello?x=1", "allowed.test:" .. port)
    assert.matches("^HTTP/1.1 200 OK", reply)
    assert.matches("hello /hello%?x=1 host=allowed.test:" .. port, reply)
    local s = assert(http.connect_unix(p.sock))
    s.send("CONNECT allowed.test:" .. port .. " HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
    assert.are.equal("HTTP/1.1 200 Connection established\r\n\r\n", s.receive_head())
    s.send("GET /tunnel HTTP/1.1\r\nHost: inside\r\n\r\n")
    assert.matches("hello /tunnel host=inside", s.receive())
    s.close()
  end)

  it("records the hosts it reached, once per host and second, and says nothing of them on stdout", function()
    local p = proxy({ "--allow", "allowed.test", "--allow", "other.test" })
    for _ = 1, 3 do
      assert.matches("^HTTP/1.1 200", get(p, "http://allowed.test:" .. port .. "/a", "allowed.test:" .. port))
    end
    local s = assert(http.connect_unix(p.sock))
    s.send("CONNECT other.test:" .. port2 .. " HTTP/1.1\r\nHost: other.test\r\n\r\n")
    assert.are.equal("HTTP/1.1 200 Connection established\r\n\r\n", s.receive_head())
    s.send("GET /t HTTP/1.1\r\nHost: inside\r\n\r\n")
    assert.matches("hello /t", s.receive())
    s.close()
    -- refused and not answered: no "reached"
    assert.matches("^HTTP/1.1 403", get(p, "http://127.0.0.2:" .. port .. "/x", "127.0.0.2"))
    local text, recs = p.stop()
    local got = {}
    for _, r in ipairs(recs) do
      got[#got + 1] = r.type .. " " .. r.host .. (r.port and (" " .. r.port) or "")
    end
    assert.are.same({
      "reached allowed.test " .. port,
      "reached other.test " .. port2,
      "blocked 127.0.0.2",
    }, got)
    assert.not_matches("reached", text)
  end)

  it("refuses an unlisted name with 403 naming the rule, and says so on stdout", function()
    local p = proxy({ "--allow", "allowed.test" })
    local reply = get(p, "http://other.test:" .. port2 .. "/hello", "other.test:" .. port2)
    assert.matches("^HTTP/1.1 403 Forbidden", reply)
    assert.matches("flemma%-sandbox: other%.test is not in allow_domains\n$", reply)
    local s = assert(http.connect_unix(p.sock))
    s.send("CONNECT other.test:" .. port2 .. " HTTP/1.1\r\n\r\n")
    assert.matches("^HTTP/1.1 403", s.receive())
    s.close()
    local _, recs = p.stop()
    assert.are.equal(2, #recs, "the GET and the CONNECT")
    for _, r in ipairs(recs) do
      assert.are.same({ "blocked", "other.test" }, { r.type, r.host })
    end
  end)

  --- A scripted Neovim that answers every question of --ask with `answer`:
  --- its socket, and a function giving the questions it got (after it is stopped).
  local function answerer(answer)
    local sock = dir .. "/ask.sock"
    local out, first = start("exec luajit spec/support/http.lua answer " .. sock .. " " .. answer)
    local pid = assert(tostring(first):match("^answering (%d+)$"), tostring(first))
    proxies[#proxies + 1] = { pid = pid, out = out }
    return sock, function()
      h.sh("kill " .. pid)
      return out:read("*a")
    end
  end

  it("with --ask, asks about an unlisted name once and goes on on a yes (control: without, 403)", function()
    local sock, questions = answerer("once")
    local p = proxy({ "--allow", "allowed.test", "--ask", sock })
    assert.matches("hello /a host=other", get(p, "http://other.test:" .. port2 .. "/a", "other.test"))
    assert.matches("hello /b host=other", get(p, "http://other.test:" .. port2 .. "/b", "other.test"))
    -- a listed name is not asked about
    assert.matches("^HTTP/1.1 200", get(p, "http://allowed.test:" .. port .. "/", "allowed.test"))
    assert.are.equal("ask other.test " .. port2 .. "\n", questions())
    local control = proxy({ "--allow", "allowed.test" })
    assert.matches("^HTTP/1.1 403", get(control, "http://other.test:" .. port2 .. "/a", "other.test"))
  end)

  it("with --ask, refuses on a no, when nobody answers, and after 16 questions", function()
    local sock, questions = answerer("deny")
    local names = {}
    for i = 1, 17 do
      names[i] = "q" .. i .. ".test"
      h.write(dir .. "/hosts", h.read(dir .. "/hosts") .. names[i] .. " 127.0.0.3\n")
    end
    local p = proxy({ "--ask", sock })
    local reply = get(p, "http://other.test:" .. port2 .. "/", "other.test")
    assert.matches("^HTTP/1.1 403", reply)
    assert.matches("other%.test is not in allow_domains, and the user refused it when asked", reply)
    -- the no holds for the proxy's run: not asked again
    assert.matches("^HTTP/1.1 403", get(p, "http://other.test:" .. port2 .. "/", "other.test"))
    for i = 1, 17 do
      reply = get(p, "http://" .. names[i] .. ":" .. port2 .. "/", names[i])
    end
    assert.matches("q17%.test is not in allow_domains, and this command asked 16 times already", reply)
    local _, asked = questions():gsub("\n", "")
    assert.are.equal(16, asked) -- other.test once, q1..q15
    -- nobody at the socket: refused, saying so
    local lonely = proxy({ "--ask", dir .. "/nobody.sock" })
    reply = get(lonely, "http://other.test:" .. port2 .. "/", "other.test")
    assert.matches("other%.test is not in allow_domains, and Neovim could not be asked", reply)
  end)

  it("takes *.x for a.x and not x, and lets deny win", function()
    local p = proxy({ "--allow", "*.allowed.test", "--allow", "other.test", "--deny", "other.test" })
    assert.matches("^HTTP/1.1 200", get(p, "http://a.allowed.test:" .. port .. "/", "a.allowed.test"))
    assert.matches("^HTTP/1.1 403", get(p, "http://allowed.test:" .. port .. "/", "allowed.test"))
    local reply = get(p, "http://other.test:" .. port2 .. "/", "other.test")
    assert.matches("^HTTP/1.1 403", reply)
    assert.matches("refused by deny_domains entry other%.test", reply)
  end)

  it("refuses IP literals unless listed, and names that resolve to loopback", function()
    local p = proxy({ "--allow", "loop.test", "--allow", "127.0.0.3" })
    local reply = get(p, "http://127.0.0.2:" .. port .. "/", "127.0.0.2")
    assert.matches("127%.0%.0%.2 is not in allow_domains", reply)
    assert.matches("^HTTP/1.1 403", get(p, "http://[::1]:" .. port .. "/", "[::1]"))
    assert.matches("^HTTP/1.1 403", get(p, "http://169.254.169.254/latest/meta-data/", "169.254.169.254"))
    -- listed: the literal is named, so its loopback address may be reached
    assert.matches("hello / host=127.0.0.3", get(p, "http://127.0.0.3:" .. port2 .. "/", "127.0.0.3"))
    -- a listed name whose addresses are all loopback (the host's own
    -- services; "checked" in the test map keeps the rule for it), where
    -- allowed.test, the same address without the rule, is reached
    reply = get(p, "http://loop.test:" .. port .. "/", "loop.test")
    assert.matches("^HTTP/1.1 403", reply)
    assert.matches("loop%.test resolves to a loopback address", reply)
  end)

  it("answers bad requests with 400 and keeps serving", function()
    local p = proxy({ "--allow", "allowed.test" })
    local cases = {
      "GET https://allowed.test/ HTTP/1.1\r\n\r\n",
      "CONNECT allowed.test HTTP/1.1\r\n\r\n",
      "GET http://allowed.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
      "nonsense\r\n\r\n",
    }
    for _, text in ipairs(cases) do
      assert.matches("^HTTP/1.1 400 Bad Request", http.request(p.sock, text), text)
    end
    assert.matches("^HTTP/1.1 200", get(p, "http://allowed.test:" .. port .. "/", "allowed.test"))
  end)

  it("passes one request per forwarded connection: a second one on it never reaches the server", function()
    local second = "GET /keepalive/second HTTP/1.1\r\nHost: other.test\r\n\r\n"
    -- control: the server answers a second request on one connection, with its Host
    local direct = http.connect_tcp("127.0.0.2", port)
    direct.send("GET /keepalive/first HTTP/1.1\r\nHost: allowed.test\r\n\r\n" .. second)
    local both = direct.receive()
    direct.close()
    assert.matches("host=other%.test", both)
    local p = proxy({ "--allow", "allowed.test" })
    local reply = http.request(
      p.sock,
      "GET http://allowed.test:"
        .. port
        .. "/keepalive/first HTTP/1.1\r\nHost: allowed.test:"
        .. port
        .. "\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
        .. second
    )
    assert.matches("hello /keepalive/first", reply)
    assert.is_nil(reply:find("other.test", 1, true), reply)
    -- a body of unknown length would hide where the next request starts
    reply = http.request(
      p.sock,
      "POST http://allowed.test:"
        .. port
        .. "/keepalive HTTP/1.1\r\nHost: allowed.test\r\n"
        .. "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    )
    assert.matches("^HTTP/1.1 411", reply)
  end)

  it("refuses heads a server could split otherwise: bare LF, bare CR, folded lines, two lengths", function()
    local p = proxy({ "--allow", "allowed.test" })
    local target = "GET http://allowed.test:" .. port .. "/keepalive HTTP/1.1\r\n"
    local cases = {
      target .. "Host: allowed.test\r\nX: a\nHost: other.test\r\n\r\n",
      target .. "Host: allowed.test\r\nX: a\rHost: other.test\r\n\r\n",
      target .. "X: a\r\n Host: other.test\r\nHost: allowed.test\r\n\r\n",
      target .. "Host : other.test\r\n\r\n",
      target .. "Host: allowed.test\r\nContent-Length: 1\r\nContent-Length: 20\r\n\r\n",
    }
    for _, text in ipairs(cases) do
      local reply = http.request(p.sock, text)
      assert.matches("^HTTP/1.1 400 Bad Request", reply, text)
      assert.is_nil(reply:find("other.test", 1, true))
    end
    -- control: the server itself takes a bare LF as the end of a line
    local direct = http.connect_tcp("127.0.0.2", port)
    direct.send("GET /keepalive HTTP/1.1\r\nX: a\nHost: other.test\r\nConnection: close\r\n\r\n")
    assert.matches("host=other%.test", direct.receive())
    direct.close()
  end)

  it("refuses a TLS hello whose server name is not the tunnel's host (no name: let through)", function()
    local p = proxy({ "--allow", "allowed.test" })
    local function tunnel_with_hello(sni)
      local s = assert(http.connect_unix(p.sock))
      s.send("CONNECT allowed.test:" .. port .. " HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
      assert.are.equal("HTTP/1.1 200 Connection established\r\n\r\n", s.receive_head())
      s.send(http.client_hello(sni))
      -- the test server answers anything it is sent with a head and a body
      local got = s.receive()
      s.close()
      return got
    end
    -- control: a hello naming the tunnel's host reaches the server
    assert.matches("HTTP/1.1", tunnel_with_hello("allowed.test"))
    assert.matches("HTTP/1.1", tunnel_with_hello(nil))
    assert.are.equal("", tunnel_with_hello("other.test"))
    local _, all = p.stop()
    local recs = h.records_of(all, "blocked")
    assert.are.equal(1, #recs)
    assert.are.same({ "blocked", "allowed.test" }, { recs[1].type, recs[1].host })
    assert.matches("other%.test", recs[1].why)
    -- the two let through reached it (one record: the same second)
    assert.are.equal("allowed.test", h.records_of(all, "reached")[1].host)
  end)

  it("serves 50 clients at once, and a client that never finishes its request stalls nobody", function()
    local p = proxy({ "--allow", "allowed.test" })
    local slow = assert(http.connect_unix(p.sock))
    slow.send("GET http://allowed.test/ HTTP/1.1\r\nHo") -- and nothing more
    local script = "for i in $(seq 50); do luajit spec/support/http.lua fetch "
      .. p.sock
      .. " http://allowed.test:"
      .. port
      .. "/bytes/200000 allowed.test & done; wait"
    local out = h.capture(script)
    local _, oks = out:gsub("ok 2%d%d%d%d%d", "")
    assert.are.equal(50, oks, out)
    slow.close()
  end)

  it("keeps the test name map behind its switch, and loopback addresses only", function()
    local r = h.run(
      { PROXY, "--listen", dir .. "/s", "--test-hosts", dir .. "/hosts" },
      { FLEMMA_SANDBOX_PROXY_TEST = "" }
    )
    assert.are.equal(2, r.code)
    assert.matches("needs FLEMMA_SANDBOX_PROXY_TEST=1", r.stderr)
    h.write(dir .. "/bad-hosts", "metadata.test 169.254.169.254\n")
    r = h.run(
      { PROXY, "--listen", dir .. "/s", "--test-hosts", dir .. "/bad-hosts" },
      { FLEMMA_SANDBOX_PROXY_TEST = "1" }
    )
    assert.are.equal(2, r.code)
    assert.matches("cannot read", r.stderr)
  end)

  it("ends with the process that started it", function()
    local pid = h.capture(
      "sh -c '" .. PROXY .. " --listen " .. dir .. "/p.sock >/dev/null 2>&1 & echo $!; sleep 0.3' | head -n 1"
    ):gsub("%s", "")
    assert.matches("^%d+$", pid)
    local gone = false
    for _ = 1, 30 do
      gone = h.capture("ps -o pid= -p " .. pid .. " || true"):gsub("%s", "") == ""
      if gone then
        break
      end
      h.sh("sleep 0.1")
    end
    assert.is_true(gone, "the proxy ended within 3 s of its parent")
    -- control: the same start with the shell still there finds it running
    local pid2 = h.capture(
      "sh -c '"
        .. PROXY
        .. " --listen "
        .. dir
        .. "/q.sock >/dev/null 2>&1 & echo $!; sleep 2' >"
        .. dir
        .. "/pid & sleep 0.5; cat "
        .. dir
        .. "/pid"
    ):gsub("%s", "")
    assert.are_not.equal("", h.capture("ps -o pid= -p " .. pid2 .. " || true"):gsub("%s", ""))
    h.sh("kill " .. pid2)
  end)
end)
