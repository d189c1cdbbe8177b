local config = require("flemma_sandbox.config")

describe("config.validate", function()
  local bad = {
    { { enabled = "yes" }, "sandbox.enabled: expected boolean, got string" },
    { { backend = 3 }, "sandbox.backend" },
    { { backend = "" }, "sandbox.backend" },
    { { polcy = {} }, "sandbox.polcy: unknown key" },
    {
      { policy = { network = "no" } },
      'sandbox.policy.network: expected true, false, "allowlist", "host" or "ask", got string',
    },
    { { policy = { allow_privileged = 1 } }, "sandbox.policy.allow_privileged: expected boolean, got number" },
    { { policy = { rw_paths = "/tmp" } }, "sandbox.policy.rw_paths: expected a list of strings, got string" },
    { { policy = { rw_paths = { "/tmp", 4 } } }, "sandbox.policy.rw_paths[2]: expected string, got number" },
    { { policy = { rw_paths = { "" } } }, "sandbox.policy.rw_paths[1]: must not be empty" },
    { { policy = { deny_read = { x = 1 } } }, "sandbox.policy.deny_read: expected a list of strings" },
    { { policy = { rw = {} } }, "sandbox.policy.rw: unknown key" },
    { { backends = { bwrap = { path = 5 } } }, "sandbox.backends.bwrap.path" },
    { { backends = { bwrap = { extra_args = { 1 } } } }, "sandbox.backends.bwrap.extra_args[1]" },
    { { backends = { bwrap = { pth = "x" } } }, "sandbox.backends.bwrap.pth: unknown key" },
    { { backends = { other = "x" } }, "sandbox.backends.other: expected table, got string" },
    { "x", "sandbox: expected table, got string" },
    { { sandboxes = { name = "." } }, "sandbox.sandboxes.name: expected false or a name" },
    { { sandboxes = { name = ".." } }, "sandbox.sandboxes.name: expected false or a name" },
    { { sandboxes = { name = "-x" } }, "sandbox.sandboxes.name: expected false or a name" },
    { { approval = { bash = "maybe" } }, 'sandbox.approval.bash: expected "allow", "ask" or "deny", got maybe' },
    { { tools = { timeout_ms = -1 } }, "sandbox.tools.timeout_ms: expected a positive whole number, got -1" },
    { { tools = { shell = "" } }, "sandbox.tools.shell: expected non-empty string" },
    { { tools = { timeout = 5 } }, "sandbox.tools.timeout: unknown key" },
    {
      { policy = { allow_domains = { "example.com", "a b" } } },
      'sandbox.policy.allow_domains[2]: "a b" is not a host name, "*.name", IP address or range',
    },
    {
      { policy = { deny_domains = { "*.*.example.com" } } },
      'sandbox.policy.deny_domains[1]: "*.*.example.com" is not a host name',
    },
    { { policy = { allow_domains = "example.com" } }, "sandbox.policy.allow_domains: expected a list of strings" },
    {
      {
        policy = {
          deny_domains = (function()
            local many = {}
            for i = 1, 256 do
              many[i] = "h" .. i .. ".example.com"
            end
            return many
          end)(),
        },
      },
      "sandbox.policy.allow_domains and deny_domains: at most 255 entries together, got 256",
    },
  }
  for _, c in ipairs(bad) do
    it("names the key: " .. c[2], function()
      local ok, err = config.validate(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end)
  end

  it("accepts the defaults, an empty table and other backends' config", function()
    assert.is_true((config.validate(config.defaults)))
    assert.is_true((config.validate({})))
    assert.is_true((config.validate({ backends = { mine = { anything = 1 } } })))
    assert.is_true((config.validate({ policy = { network = "ask" }, approval = { bash = "allow" } })))
    for _, mode in ipairs({ true, false, "allowlist", "host" }) do
      assert.is_true((config.validate({ policy = { network = mode } })), tostring(mode))
    end
    local entries = { "a.example.com", "*.example.com", "192.0.2.7", "10.0.0.0/8", "2001:db8::/32", "::1" }
    assert.is_true((config.validate({ policy = { allow_domains = entries, deny_domains = entries } })))
  end)
end)

describe("config layers", function()
  after_each(function()
    config.set_setup(nil)
    config.set_runtime(nil)
    config.set_buffer(1, nil)
    config.set_buffer(2, nil)
  end)

  it("starts from the documented defaults", function()
    local cfg, source = config.resolve(nil)
    assert.is_true(cfg.enabled)
    assert.are.equal("auto", cfg.backend)
    assert.are.same({ "$CWD", "$FLEMMA_BUFFER_PATH", "/tmp", "$FLEMMA_PLAYGROUND" }, cfg.policy.rw_paths)
    assert.are.equal("allowlist", cfg.policy.network)
    assert.are.equal("api.anthropic.com", cfg.policy.allow_domains[1])
    assert.are.same({}, cfg.policy.deny_domains)
    assert.is_false(cfg.policy.allow_privileged)
    assert.are.equal("bwrap", cfg.backends.bwrap.path)
    assert.are.equal("setup", source)
  end)

  it("replaces lists instead of merging them by index", function()
    config.set_setup({ policy = { rw_paths = { "/only" } } })
    local cfg = config.resolve(nil)
    assert.are.same({ "/only" }, cfg.policy.rw_paths)
    assert.are.equal("allowlist", cfg.policy.network)
  end)

  it("keeps defaults under an empty policy table", function()
    config.set_setup({ policy = {} })
    assert.are.same(config.defaults.policy, config.resolve(nil).policy)
  end)

  it("raises on a bad setup() with the key in the message", function()
    assert.has_error(function()
      config.set_setup({ policy = { network = "off" } })
    end, 'flemma-sandbox: sandbox.policy.network: expected true, false, "allowlist", "host" or "ask", got string')
  end)

  it("applies runtime override > buffer > setup", function()
    config.set_setup({ enabled = false })
    assert.is_true(config.set_buffer(1, { enabled = true, policy = { network = false } }))
    local cfg, source = config.resolve(1)
    assert.is_true(cfg.enabled)
    assert.is_false(cfg.policy.network)
    assert.are.equal("buffer", source)
    assert.is_false(config.resolve(2).enabled)

    config.set_runtime(false)
    cfg, source = config.resolve(1)
    assert.is_false(cfg.enabled)
    assert.are.equal("runtime", source)
    assert.is_false(cfg.policy.network)

    config.set_runtime(nil)
    assert.is_true(config.resolve(1).enabled)
  end)

  it("accepts a number, { bufnr = N } and Flemma's { sandbox = ... } as opts", function()
    config.set_buffer(2, false)
    assert.is_false(config.resolve(2).enabled)
    assert.is_false(config.resolve({ bufnr = 2 }).enabled)
    assert.is_true(config.resolve({ sandbox = true }).enabled)
    assert.is_false(config.resolve({ sandbox = { enabled = false } }).enabled)
  end)

  it("rejects a bad buffer layer and keeps the old one", function()
    config.set_buffer(1, { enabled = false })
    local ok, err = config.set_buffer(1, { policy = { network = 1 } })
    assert.is_false(ok)
    assert.matches("flemma.opt.sandbox.policy.network", err, 1, true)
    assert.is_false(config.resolve(1).enabled)
  end)

  it("does not let callers change the layers through returned tables", function()
    local cfg = config.resolve(nil)
    cfg.policy.rw_paths[1] = "/evil"
    assert.are.equal("$CWD", config.resolve(nil).policy.rw_paths[1])
  end)
end)
