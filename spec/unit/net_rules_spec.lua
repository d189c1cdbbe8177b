--- The network proxy's rules (csrc/shared/net_rules.c): request heads, domain
--- entries, and the addresses it never connects to unless named.
local core = require("flemma_sandbox.core")

local CRLF = "\r\n"

local function head(...)
  return table.concat({ ... }, CRLF) .. CRLF .. CRLF
end

describe("proxy request heads", function()
  it("reads CONNECT host:port, and a forwarded http:// request with the path to send on", function()
    local r = assert(core.proxy_parse(head("CONNECT api.Anthropic.com.:443 HTTP/1.1", "Host: x")))
    assert.are.same({ "CONNECT", "api.anthropic.com", 443, true }, { r.method, r.host, r.port, r.connect })
    local text = head("GET http://example.com:8080/a/b?c HTTP/1.1", "Host: example.com:8080", "Accept: */*") .. "body"
    r = assert(core.proxy_parse(text))
    assert.are.same({ "GET", "example.com", 8080, false }, { r.method, r.host, r.port, r.connect })
    assert.are.equal(#text - 4, r.head_len)
    assert.are.equal("/a/b?c", text:sub(r.origin_at, r.target_at + r.target_len - 1))
    r = assert(core.proxy_parse(head("GET http://example.com HTTP/1.0")))
    assert.are.equal(80, r.port)
    assert.are.equal(r.target_at + r.target_len, r.origin_at, "no path: the proxy sends /")
    r = assert(core.proxy_parse(head("POST /x HTTP/1.1", "host:  [::1]:81 ")))
    assert.are.same({ "::1", 81 }, { r.host, r.port })
    r = assert(core.proxy_parse(head("CONNECT [2001:db8::1]:443 HTTP/1.1")))
    assert.are.equal("2001:db8::1", r.host)
  end)

  it("waits for the whole head, and refuses one over 16 KiB", function()
    assert.is_false(core.proxy_parse("CONNECT a.b:443 HTTP/1.1\r\nHost: a"))
    assert.is_false(core.proxy_parse(""))
    local _, err = core.proxy_parse("GET http://a/ HTTP/1.1\r\nX: " .. string.rep("y", 17000))
    assert.matches("over 16384 bytes", err)
  end)

  it("refuses what could hide or change the host it goes to", function()
    local cases = {
      [head("CONNECT user:pw@evil.test:443 HTTP/1.1")] = "CONNECT needs host:port",
      [head("CONNECT evil.test HTTP/1.1")] = "CONNECT needs host:port",
      [head("CONNECT evil.test:0 HTTP/1.1")] = "CONNECT needs host:port",
      [head("CONNECT evil.test:65536 HTTP/1.1")] = "CONNECT needs host:port",
      [head("CONNECT [::1:443 HTTP/1.1")] = "CONNECT needs host:port",
      [head("CONNECT a..b:443 HTTP/1.1")] = "CONNECT needs host:port",
      [head("CONNECT a.test..:443 HTTP/1.1")] = "CONNECT needs host:port",
      [head("CONNECT a/b:443 HTTP/1.1")] = "CONNECT needs host:port",
      [head("GET http://good.test@evil.test/ HTTP/1.1")] = "a bad host",
      [head("GET http://good.test/ HTTP/1.1", "Host: evil.test")] = "names another host",
      [head("GET / HTTP/1.1", "Host: a.test", "Host: b.test")] = "more than one Host header",
      [head("GET / HTTP/1.1")] = "needs a valid Host header",
      [head("GET https://a.test/ HTTP/1.1")] = "https goes through CONNECT",
      [head("GET ftp://a.test/ HTTP/1.1")] = "only http:// targets",
      [head("GET http://a.test/ HTTP/2.0")] = "not HTTP/1.0 or HTTP/1.1",
      [head("get http://a.test/ HTTP/1.1")] = "not an HTTP method",
      [head("GET  http://a.test/ HTTP/1.1")] = "not an HTTP request line",
      ["GET http://a\0.test/ HTTP/1.1" .. CRLF .. CRLF] = "NUL byte",
    }
    for text, why in pairs(cases) do
      local r, err = core.proxy_parse(text)
      assert.is_nil(r, text)
      assert.truthy(tostring(err):find(why, 1, true), text .. " -> " .. tostring(err))
    end
  end)
end)

describe("domain entries", function()
  local allow = { "api.anthropic.com", "*.example.com", "192.0.2.7", "10.1.0.0/16", "2001:db8::/32" }

  it("match a name exactly, *.x its strict subdomains, and addresses by literal or range", function()
    local expect = {
      ["api.anthropic.com"] = true,
      ["API.ANTHROPIC.COM"] = true,
      ["anthropic.com"] = false,
      ["evilapi.anthropic.com"] = false,
      ["a.example.com"] = true,
      ["a.b.example.com"] = true,
      ["example.com"] = false,
      ["badexample.com"] = false,
      ["192.0.2.7"] = true,
      ["192.0.2.8"] = false,
      ["10.1.200.3"] = true,
      ["10.2.0.1"] = false,
      ["2001:db8::5"] = true,
      ["::ffff:192.0.2.7"] = true,
      ["2001:db9::5"] = false,
    }
    for host, allowed in pairs(expect) do
      assert.are.equal(allowed, (core.host_allowed(host, allow, {})), host)
    end
  end)

  it("let a deny entry win over an allow entry, and name it", function()
    local ok, rule = core.host_allowed("secret.example.com", allow, { "secret.example.com" })
    assert.is_false(ok)
    assert.are.equal("secret.example.com", rule)
    ok, rule = core.host_allowed("elsewhere.test", allow, {})
    assert.is_false(ok)
    assert.is_nil(rule, "no allow entry: no rule to name")
  end)

  it("never let a name entry match an address, nor an address entry a name", function()
    assert.is_false((core.host_allowed("192.0.2.7", { "*.0.2.7" }, {})))
    assert.is_false((core.host_allowed("1.2.3.4", { "*.4" }, {})))
    assert.is_false((core.host_allowed("x10.1.0.0", { "10.1.0.0/16" }, {})))
  end)
end)

describe("address kinds", function()
  it("keep loopback, link-local (metadata), private and reserved ranges apart from public ones", function()
    local expect = {
      ["127.0.0.1"] = "loopback",
      ["127.9.9.9"] = "loopback",
      ["::1"] = "loopback",
      ["169.254.169.254"] = "link-local",
      ["fe80::1"] = "link-local",
      ["10.0.0.1"] = "private",
      ["172.16.0.1"] = "private",
      ["172.31.255.255"] = "private",
      ["172.32.0.1"] = "public",
      ["192.168.1.1"] = "private",
      ["100.64.0.1"] = "private",
      ["fd00::1"] = "private",
      ["0.0.0.0"] = "reserved",
      ["::"] = "reserved",
      ["224.0.0.1"] = "reserved",
      ["255.255.255.255"] = "reserved",
      ["ff02::1"] = "reserved",
      ["::ffff:127.0.0.1"] = "loopback",
      ["64:ff9b::a9fe:a9fe"] = "link-local",
      ["2002:a00:1::"] = "private",
      ["93.184.216.34"] = "public",
      ["2606:4700::1111"] = "public",
    }
    for ip, kind in pairs(expect) do
      assert.are.equal(kind, (core.addr_kind(ip)), ip)
    end
  end)

  it("say when an allow entry names the address itself", function()
    assert.are.same({ "loopback", true }, { core.addr_kind("127.0.0.2", { "127.0.0.0/8" }) })
    assert.are.same({ "loopback", false }, { core.addr_kind("127.0.0.2", { "localhost", "127.0.0.1" }) })
    assert.are.same({ "private", true }, { core.addr_kind("::ffff:10.0.0.3", { "10.0.0.3" }) })
    assert.is_nil((core.addr_kind("localhost")))
  end)
end)
