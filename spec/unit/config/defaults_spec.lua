--- config/defaults.lua: the defaults of every config key are a config the
--- validator takes, name only variables the policy knows, and hold the
--- values the documentation promises (approval, tools, sandboxes).
local defaults = require("flemma_sandbox.config.defaults")
local validate = require("flemma_sandbox.config.validate")
local core = require("flemma_sandbox.core")

describe("config.defaults", function()
  it("passes the validator", function()
    assert.are.same({ true, nil }, { validate.validate(defaults, "sandbox") })
  end)

  it("is found by the validator when a key is misspelled on top of it", function()
    local copy = require("flemma_sandbox.base.util").deepcopy(defaults)
    copy.policy.rw_path = {}
    local ok, err = validate.validate(copy, "sandbox")
    assert.is_false(ok)
    assert.matches("sandbox%.policy%.rw_path", err)
  end)

  it("asks before the tools that write or run, and allows the ones that read", function()
    assert.are.same({
      bash = "ask",
      read = "allow",
      write = "ask",
      edit = "ask",
      find = "allow",
      grep = "allow",
      ls = "allow",
      git = "ask",
    }, defaults.approval)
  end)

  it("is hardened: seccomp on, no privileges, no home writable, network through the allowlist", function()
    assert.is_true(defaults.policy.seccomp)
    assert.is_false(defaults.policy.allow_privileged)
    assert.is_false(defaults.policy.allow_home_rw)
    assert.are.equal("allowlist", defaults.policy.network)
    assert.are.same({}, defaults.policy.env_allow)
    assert.are.same({}, defaults.policy.allow_sockets)
  end)

  it("expands its writable paths with the variables the policy sets", function()
    local vars = { CWD = "/p", FLEMMA_BUFFER_PATH = "/p/chat", FLEMMA_PLAYGROUND = "/play" }
    local out = {}
    for _, entry in ipairs(defaults.policy.rw_paths) do
      out[#out + 1] = assert(core.expand(entry, vars))
    end
    assert.are.same({ "/p", "/p/chat", "/tmp", "/play" }, out)
  end)

  it("has limits that are positive whole numbers or false", function()
    for name, value in pairs(defaults.policy.limits) do
      assert.is_true(value == false or (type(value) == "number" and value > 0 and value % 1 == 0), name)
    end
  end)

  it("keeps timeouts and caps consistent", function()
    local t = defaults.tools
    assert.is_true(t.timeout_ms <= t.max_timeout_ms)
    assert.is_true(t.output_file_max_bytes <= t.cache_max_bytes)
    assert.is_true(t.enabled)
    local s = defaults.sandboxes
    assert.are.equal("direct", s.workspace)
    assert.is_false(s.name)
    assert.is_true(s.max_running >= 1 and s.idle_ttl_s >= 1)
  end)

  it("owns its lists: the policy defaults are copies, not the shared tables", function()
    local shared = require("flemma_sandbox.policy.default_lists")
    assert.are_not.equal(shared.DENY_READ, defaults.policy.deny_read)
    assert.are.same(shared.DENY_READ, defaults.policy.deny_read)
    assert.are_not.equal(shared.DENY_WRITE, defaults.policy.deny_write)
    assert.are_not.equal(shared.SECRET_FILES, defaults.policy.secret_files)
  end)
end)
