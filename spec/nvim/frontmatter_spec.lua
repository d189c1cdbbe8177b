local h = require("support.helpers")
local n = require("support.nvim")
local frontmatter = require("flemma_sandbox.chat.frontmatter")
local sandbox = require("flemma_sandbox")

describe("frontmatter.evaluate", function()
  it("reads flemma.opt.sandbox as a table, true or false", function()
    assert.are.same(
      { sandbox = { enabled = true, policy = { network = false } } },
      frontmatter.evaluate("flemma.opt.sandbox = { enabled = true, policy = { network = false } }")
    )
    assert.are.same({ sandbox = true }, frontmatter.evaluate("flemma.opt.sandbox = true"))
    assert.are.same(
      { sandbox = { policy = { network = false } } },
      frontmatter.evaluate("flemma.opt.sandbox.policy.network = false")
    )
  end)

  it("tolerates other Flemma options and reads that set nothing", function()
    local opts = frontmatter.evaluate("flemma.opt.tools.auto_approve = { 'x' }\nif flemma.opt.sandbox.enabled then end")
    assert.are.same({ tools = { auto_approve = { "x" } } }, opts)
    assert.are.same(
      { sandbox = { policy = { rw_paths = {} } } },
      frontmatter.evaluate("flemma.opt.sandbox = { policy = { rw_paths = {} } }")
    )
  end)

  local refused = {
    { "flemma.opt.sandbox = {", "line 2:.*expected" },
    { "\n\nos.execute('touch /tmp/x')", "line 4:.*os" },
    { "io.open('/etc/passwd')", "line 2:.*io" },
    { "vim.fn.system('id')", "line 2:.*vim" },
    { "require('ffi')", "line 2:.*require" },
    { "x = 1", "line 2: frontmatter may only set flemma.opt.%*, not the global 'x'" },
    { "flemma.other = 1", "only flemma.opt" },
    { "while true do end", "ran too long" },
    { "local function f() return f() + 1 end\nf()", "stack overflow" },
  }
  for _, c in ipairs(refused) do
    it("refuses " .. c[1]:gsub("\n", " "), function()
      local opts, err = frontmatter.evaluate(c[1])
      assert.is_nil(opts)
      assert.matches(c[2], err)
    end)
  end
end)

local function protect_effective(list)
  return require("flemma_sandbox.policy.protect").effective(list)
end

describe("frontmatter in .chat buffers", function()
  local dir, notes, restore
  before_each(function()
    dir = h.tmpdir()
    h.sh("mkdir " .. h.shell_quote(dir .. "/data"))
    sandbox.reset_enabled()
    sandbox.setup({ enabled = false })
    notes, restore = n.capture_notify()
  end)
  after_each(function()
    restore()
    vim.cmd("silent! %bwipeout!")
    sandbox.setup()
    sandbox.reset_enabled()
    h.rmdir(dir)
  end)

  it("gives the buffer its own layer, above setup() and below the runtime override", function()
    local buf = n.open_chat(dir .. "/a.chat", {
      "```lua",
      "flemma.opt.sandbox = { enabled = true, policy = { rw_paths = { '" .. dir .. "/data' }, network = false } }",
      "```",
      "@You: hello",
    })
    local cfg, source = sandbox.resolve_config(buf)
    assert.is_true(cfg.enabled)
    assert.are.equal("buffer", source)
    -- a new writable path loosens: only once the content is trusted
    assert.are_not.same({ dir .. "/data" }, sandbox.get_policy(buf).rw_paths)
    vim.cmd("FlemmaSandbox trust")
    local policy = sandbox.get_policy(buf)
    assert.are.same({ dir .. "/data" }, policy.rw_paths)
    assert.is_false(policy.network)
    assert.is_false(sandbox.is_enabled(nil))
    vim.cmd("FlemmaSandbox untrust")

    vim.cmd("FlemmaSandbox disable")
    assert.is_false(sandbox.is_enabled(buf))
    sandbox.reset_enabled()
    assert.is_true(sandbox.is_enabled(buf))
  end)

  it("applies what tightens at once; what loosens only after :FlemmaSandbox trust of that exact text", function()
    sandbox.setup({ policy = { network = "ask", deny_domains = { "metadata.test" }, limits = { processes = 100 } } })
    local lines = {
      "```lua",
      "flemma.opt.sandbox = { policy = { network = 'host', limits = { processes = 50 }, deny_write = { '!.envrc' } } }",
      "flemma.opt.sandbox.policy.allow_domains = { 'api.anthropic.com', 'evil.test' }",
      "flemma.opt.sandbox.policy.deny_domains = {}",
      "flemma.opt.approval = { bash = 'allow', write_file = 'deny' }",
      "```",
      "@You: hi",
    }
    local buf = n.open_chat(dir .. "/t.chat", lines)
    local cfg = sandbox.resolve_config(buf)
    assert.are.equal("ask", cfg.policy.network)
    assert.is_false(vim.tbl_contains(cfg.policy.allow_domains, "evil.test"))
    assert.are.same({ "metadata.test" }, cfg.policy.deny_domains)
    assert.are.equal(50, cfg.policy.limits.processes)
    assert.is_true(vim.tbl_contains(protect_effective(cfg.policy.deny_write), ".envrc"))
    assert.are.equal("ask", cfg.approval.bash)
    assert.are.equal("deny", cfg.approval.write_file)
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(buf), "\n")
    local ignored = "frontmatter NOT trusted, ignored: approval%.bash = allow; policy%.allow_domains adds evil%.test; "
      .. "policy%.deny_domains drops metadata%.test; policy%.deny_write removes %.envrc; policy%.network = host"
    assert.matches(ignored, status)
    assert.matches(":FlemmaSandbox trust applies it", status)

    vim.cmd("FlemmaSandbox trust")
    cfg = sandbox.resolve_config(buf)
    assert.are.equal("host", cfg.policy.network)
    assert.is_true(vim.tbl_contains(cfg.policy.allow_domains, "evil.test"))
    assert.are.equal("allow", cfg.approval.bash)
    assert.is_false(vim.tbl_contains(protect_effective(cfg.policy.deny_write), ".envrc"))
    assert.matches("frontmatter trusted", table.concat(require("flemma_sandbox.nvim.status").lines(buf), "\n"))

    -- a change to the text (here by a command in the sandbox, on disk) drops the trust
    vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "flemma.opt.sandbox = { policy = { network = 'host' } }" })
    vim.cmd("doautocmd TextChanged")
    assert.are.equal("ask", sandbox.resolve_config(buf).policy.network)
    -- and the trust record lives where no sandbox can write
    assert.is_false(
      (sandbox.is_path_writable(require("flemma_sandbox.base.surroundings").state_dir("trust") .. "/x", buf))
    )
    vim.cmd("FlemmaSandbox untrust")
  end)

  it("each tool result of a chat whose loosening frontmatter is not trusted says so, until it is", function()
    sandbox.setup({ backend = "bwrap", policy = { network = false }, approval = { bash = "allow" } })
    local buf = n.open_chat(dir .. "/untrusted.chat", {
      "```lua",
      "flemma.opt.sandbox = { policy = { network = 'host' } }",
      "```",
      "@You: hi",
    })
    local function bash(command)
      local result
      require("flemma_sandbox.chat").run_tool(buf, "bash", { command = command }, {}, function(r)
        result = r
      end)
      assert.truthy(vim.wait(20000, function()
        return result ~= nil
      end, 10))
      return result
    end
    local r = bash("echo hi")
    assert.are.equal("hi", r.stdout)
    assert.are.same({
      "[sandbox] this chat's frontmatter is not applied where it loosens the sandbox (policy.network = host): "
        .. "the user has not trusted it (:FlemmaSandbox trust)",
    }, r.notes)
    assert.matches(":FlemmaSandbox trust%)$", (require("flemma_sandbox.chat").render(r)))
    vim.api.nvim_set_current_buf(buf)
    vim.cmd("FlemmaSandbox trust")
    -- trusted, the frontmatter turns the network on: the chat's sandbox
    -- starts again and the note says why
    r = bash("echo hi")
    assert.are.same({
      "[sandbox] policy.network: false -> host (set by this chat's frontmatter): this chat's sandbox was started "
        .. "again, what ran in it was stopped",
    }, r.notes)
    r = bash("echo hi")
    assert.is_nil(r.notes)
    vim.cmd("FlemmaSandbox untrust")
  end)

  it("a smaller disk reserve loosens (a larger one tightens), unlike every other limit", function()
    sandbox.setup({ policy = { limits = { disk_reserve_mb = 2048, inotify_instances = 16 } } })
    local lines = {
      "```lua",
      "flemma.opt.sandbox = { policy = { limits = { disk_reserve_mb = 1, inotify_instances = 1000 } } }",
      "```",
    }
    local cfg = sandbox.resolve_config(n.open_chat(dir .. "/reserve-low.chat", lines))
    assert.are.equal(2048, cfg.policy.limits.disk_reserve_mb)
    assert.are.equal(16, cfg.policy.limits.inotify_instances)
    lines[2] = "flemma.opt.sandbox = { policy = { limits = { disk_reserve_mb = 4096, inotify_instances = 2 } } }"
    cfg = sandbox.resolve_config(n.open_chat(dir .. "/reserve-high.chat", lines))
    assert.are.equal(4096, cfg.policy.limits.disk_reserve_mb)
    assert.are.equal(2, cfg.policy.limits.inotify_instances)
  end)

  it("a frontmatter may turn tool calls off, but turning them on over setup() needs trust", function()
    local function chat(name, value)
      return n.open_chat(dir .. "/" .. name, {
        "```lua",
        "flemma.opt.sandbox = { tools = { enabled = " .. tostring(value) .. " } }",
        "```",
      })
    end
    assert.matches("tools%.enabled = false", sandbox.tools_refusal(chat("off.chat", false)))
    sandbox.setup({ tools = { enabled = false } })
    local buf = chat("on.chat", true)
    assert.matches("tools%.enabled = false", sandbox.tools_refusal(buf), "untrusted: setup() holds")
    vim.api.nvim_set_current_buf(buf)
    vim.cmd("FlemmaSandbox trust")
    assert.is_nil(sandbox.tools_refusal(buf), "trusted: the frontmatter's true holds")
    vim.cmd("FlemmaSandbox untrust")
  end)

  it("never runs a program path from a buffer, trusted or not", function()
    local lines = {
      "```lua",
      "flemma.opt.sandbox = { backends = { bwrap = { path = '/tmp/evil' } }, tools = { shell = '/tmp/evil' } }",
      "```",
    }
    local buf = n.open_chat(dir .. "/u.chat", lines)
    vim.cmd("FlemmaSandbox trust")
    local cfg = sandbox.resolve_config(buf)
    assert.are.equal("bwrap", cfg.backends.bwrap.path)
    assert.are.equal("bash", cfg.tools.shell)
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(buf), "\n")
    assert.matches("frontmatter ignored: backends%.bwrap%.path: a program path from a buffer is never run", status)
    vim.cmd("FlemmaSandbox untrust")
  end)

  it("re-reads after a change to the frontmatter, and only then", function()
    local buf = n.open_chat(dir .. "/b.chat", { "```lua", "flemma.opt.sandbox = true", "```", "@You: hi" })
    assert.is_true(sandbox.is_enabled(buf))
    local count = frontmatter.state(buf).evaluations

    vim.api.nvim_buf_set_lines(buf, 3, 4, false, { "@You: edited the message" })
    vim.cmd("doautocmd TextChanged")
    assert.are.equal(count, frontmatter.state(buf).evaluations)

    vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "flemma.opt.sandbox = false" })
    vim.cmd("doautocmd TextChanged")
    assert.are.equal(count + 1, frontmatter.state(buf).evaluations)
    assert.is_false(sandbox.is_enabled(buf))
  end)

  it("reports a bad frontmatter with its line once, and keeps the global config", function()
    local buf = n.open_chat(dir .. "/c.chat", {
      "```lua",
      "flemma.opt.sandbox = true",
      "os.remove('x')",
      "```",
    })
    assert.is_false(sandbox.is_enabled(buf))
    assert.are.equal(1, #notes)
    assert.are.equal(vim.log.levels.WARN, notes[1].level)
    assert.matches("c%.chat: line 3: .*os.*using the global config", notes[1].msg)
    vim.cmd("doautocmd TextChanged")
    vim.cmd("doautocmd BufEnter")
    assert.are.equal(1, #notes)
  end)

  it("reports a sandbox value of the wrong type, naming the key", function()
    local buf =
      n.open_chat(dir .. "/d.chat", { "```lua", "flemma.opt.sandbox = { policy = { network = 'off' } }", "```" })
    assert.matches(
      'flemma.opt.sandbox.policy.network: expected true, false, "allowlist", "host" or "ask", got string',
      frontmatter.state(buf).error,
      1,
      true
    )
    assert.is_nil(require("flemma_sandbox.config").get_buffer(buf))
  end)

  it("reads one frontmatter for trust, config and the chat: 300 lines long, and an unclosed one not at all", function()
    sandbox.setup({ policy = { network = "ask" } })
    -- a frontmatter past what any reader used to look at (200 and 2000
    -- lines): its loosening at the end is what trust sees and what applies
    local lines = { "```lua" }
    for i = 1, 300 do
      lines[#lines + 1] = "-- filler " .. i
    end
    vim.list_extend(lines, { "flemma.opt.sandbox = { policy = { network = 'host' } }", "```", "@You:", "hi" })
    local buf = n.open_chat(dir .. "/long.chat", lines)
    assert.are.equal("ask", sandbox.resolve_config(buf).policy.network, "untrusted: not applied")
    assert.matches("policy%.network = host", table.concat(require("flemma_sandbox.nvim.status").lines(buf), "\n"))
    vim.cmd("FlemmaSandbox trust")
    assert.are.equal("host", sandbox.resolve_config(buf).policy.network, "trusted: applied")
    local fence = require("flemma_sandbox.base.frontmatter_fence")
    assert.are.equal(#lines - 2, fence.of_buffer(buf).last)
    local doc = require("flemma_sandbox.chat.format").parse(vim.api.nvim_buf_get_lines(buf, 0, -1, false))
    assert.are.equal(#lines - 1, doc.messages[1].line, "the chat starts after the same closing fence")
    vim.cmd("FlemmaSandbox untrust")
    -- never closed: no frontmatter for any reader (Flemma's rule), and said
    buf = n.open_chat(dir .. "/open.chat", { "```lua", "flemma.opt.sandbox = false", "@You: hi" })
    assert.is_nil(fence.of_buffer(buf))
    assert.is_true(sandbox.is_enabled(buf))
    assert.matches("never closed", tostring(frontmatter.state(buf).error))
  end)

  it("ignores buffers that are not .chat files and chats without frontmatter", function()
    local buf = n.open_chat(dir .. "/notes.txt", { "```lua", "flemma.opt.sandbox = true", "```" })
    assert.is_false(sandbox.is_enabled(buf))
    buf = n.open_chat(dir .. "/plain.chat", { "@You: no frontmatter" })
    assert.is_false(sandbox.is_enabled(buf))
    assert.are.same({}, notes)
  end)
end)
