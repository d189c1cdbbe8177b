--- policy.network = "ask": the run's proxy asks Neovim (questions/network.lua)
--- about a host name that allow_domains does not list, and goes on only on
--- a yes. A test server on 127.0.0.2 plays the outside world, reached by
--- name through the proxy's test-only map (FLEMMA_SANDBOX_PROXY_TEST=1).
local h = require("support.helpers")
local n = require("support.nvim")
local sandbox = require("flemma_sandbox")
local approval = require("flemma_sandbox.questions")
local net_ask = require("flemma_sandbox.questions.network")

--- A shell line that sends one GET for name to HTTP_PROXY and prints the reply.
local function get(name, port)
  local text = "GET http://" .. name .. ":" .. port .. "/hello HTTP/1.1\r\nHost: " .. name .. "\r\n\r\n"
  return '{ p=${HTTP_PROXY#http://}; exec 3<>"/dev/tcp/${p%:*}/${p##*:}" && printf '
    .. h.shell_quote(text)
    .. " >&3 && cat <&3; echo; }"
end

describe('policy.network = "ask"', function()
  local dir, server, server_pid, port, asked, answer, prompt
  setup(function()
    server = assert(io.popen("exec luajit spec/support/http.lua serve 127.0.0.2 2>&1", "r"))
    port, server_pid = server:read("*l"):match("^port (%d+) pid (%d+)")
    dir = h.tmpdir()
    h.write(dir .. "/hosts", "asked.test 127.0.0.2\nother.test 127.0.0.2\ndenied.test 127.0.0.2\n")
    vim.env.FLEMMA_SANDBOX_PROXY_TEST = "1"
    vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = dir .. "/hosts"
    prompt = approval.prompt
  end)
  teardown(function()
    h.sh("kill " .. server_pid)
    server:close()
    vim.env.FLEMMA_SANDBOX_PROXY_TEST = nil
    vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = nil
    net_ask.stop()
    h.rmdir(dir)
  end)
  before_each(function()
    sandbox.reset_enabled()
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { dir }, network = "ask", allow_domains = {}, deny_domains = { "denied.test" } },
    })
    approval.reset()
    net_ask.reset()
    asked = {}
    answer = "deny"
    -- the user, through the approval window's question; answers a little later
    approval.prompt = function(question, cb)
      asked[#asked + 1] = question
      vim.defer_fn(function()
        cb(answer)
      end, 50)
    end
  end)
  after_each(function()
    approval.prompt = prompt
    approval.reset()
    sandbox.setup()
  end)

  it("asks about an unlisted name through the approval path; yes reaches it, once a command", function()
    answer = "once"
    local r = n.run_job({ "bash", "-c", get("asked.test", port) .. "; " .. get("asked.test", port) })
    local _, replies = r.stdout:gsub("hello /hello host=asked%.test", "")
    assert.are.equal(2, replies, r.stdout .. r.stderr)
    assert.are.equal(1, #asked) -- two connections, one question
    assert.matches("connect to asked%.test%?", asked[1].title)
    assert.matches("asked%.test %(port " .. port .. "%) is not in policy%.allow_domains", asked[1].lines[1])
    -- "once" is for that command: the next one asks again
    r = n.run_job({ "bash", "-c", get("asked.test", port) })
    assert.matches("hello /hello host=asked%.test", r.stdout)
    assert.are.equal(2, #asked)
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(0), "\n")
    assert.matches("network:    ask %(through the proxy to nothing; never denied%.test; any other name", status)
    assert.matches("asked lately: asked%.test allowed once", status)
  end)

  it("keeps an 'always' for the session", function()
    answer = "always"
    local r = n.run_job({ "bash", "-c", get("asked.test", port) })
    assert.matches("hello /hello host=asked%.test", r.stdout)
    r = n.run_job({ "bash", "-c", get("asked.test", port) })
    assert.matches("hello /hello host=asked%.test", r.stdout)
    assert.are.equal(1, #asked)
    -- another name is its own question
    answer = "deny"
    r = n.run_job({ "bash", "-c", get("other.test", port) })
    assert.are.equal(2, #asked)
    assert.matches("^HTTP/1.1 403", r.stdout)
  end)

  it("refuses on a no with HTTP 403 and a blocked line; the server is not reached", function()
    local r = n.run_job({ "bash", "-c", get("asked.test", port) .. "; " .. get("asked.test", port) })
    assert.matches("^HTTP/1.1 403 Forbidden", r.stdout)
    assert.matches("asked%.test is not in allow_domains, and the user refused it when asked", r.stdout)
    assert.not_matches("hello /hello", r.stdout)
    local blocked = vim.tbl_filter(function(rec)
      return rec.type == "blocked"
    end, r.records)
    assert.are.equal(2, #blocked, "both requests")
    assert.are.equal("asked.test", blocked[1].host)
    assert.are.equal(1, #asked) -- the no holds for the rest of the command
  end)

  it("never asks about a deny_domains name or an IP literal", function()
    answer = "always"
    local r = n.run_job({ "bash", "-c", get("denied.test", port) .. "; " .. get("127.0.0.2", port) })
    assert.matches("denied%.test is refused by deny_domains entry denied%.test", r.stdout)
    assert.matches("127%.0%.0%.2 is not in allow_domains", r.stdout)
    assert.not_matches("hello /hello", r.stdout)
    assert.are.equal(0, #asked)
  end)

  it("asks nothing in allowlist mode (control: the same call that a yes let through)", function()
    answer = "always"
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { dir }, network = "allowlist", allow_domains = {} } })
    local r = n.run_job({ "bash", "-c", get("asked.test", port) })
    assert.matches("^HTTP/1.1 403", r.stdout)
    assert.matches("asked%.test is not in allow_domains", r.stdout)
    assert.are.equal(0, #asked)
  end)

  it("serves its question socket from Neovim only, removes it on stop, and sweeps a dead Neovim's", function()
    net_ask.stop()
    local folder = require("flemma_sandbox.base.surroundings").state_dir("ask")
    -- what a Neovim that crashed left (no pid goes past 2^22)
    local gone = folder .. "/4194305.sock"
    h.write(gone, "")
    local path = net_ask.socket()
    assert.are.equal(folder .. "/" .. vim.fn.getpid() .. ".sock", path)
    assert.are.equal("socket", vim.loop.fs_stat(path).type)
    assert.is_nil(vim.loop.fs_stat(gone))
    net_ask.stop()
    assert.is_nil(vim.loop.fs_stat(path))
  end)
end)
