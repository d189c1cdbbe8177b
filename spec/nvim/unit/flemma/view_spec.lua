--- flemma/view.lua (run in Neovim, Flemma's sandbox module stood in for:
--- the real Flemma's path is spec/flemma's): what Flemma does with a
--- buffer's commands (on or off, which backend, whether it is ours), and
--- when it is ours the hardening flemma-sandbox adds, resolved from
--- Flemma's policy and its config for flemma_sandbox.
local view = require("flemma_sandbox.flemma.view")

describe("flemma.view", function()
  local saved, fake

  before_each(function()
    saved = package.loaded["flemma.sandbox"]
    fake = {
      config = { enabled = true, backend = "auto", backends = {} },
      detected = { "flemma_sandbox", nil },
      policy = { rw_paths = { "/var/tmp" }, network = false, allow_privileged = false },
    }
    package.loaded["flemma.sandbox"] = {
      resolve_config = function()
        if type(fake.config) == "string" then
          error(fake.config, 0)
        end
        return fake.config
      end,
      detect_available_backend = function()
        return fake.detected[1], fake.detected[2]
      end,
      get_policy = function()
        if type(fake.policy) == "string" then
          error(fake.policy, 0)
        end
        return fake.policy
      end,
    }
  end)

  after_each(function()
    package.loaded["flemma.sandbox"] = saved
  end)

  it("says Flemma is not set up when its config cannot be read", function()
    fake.config = "setup() was not called"
    assert.are.same(
      { enabled = false, mode = "?", ours = false, error = "Flemma is not set up: setup() was not called" },
      view.view(1)
    )
  end)

  it("takes the backend Flemma detects in auto and required mode", function()
    for _, mode in ipairs({ "auto", "required" }) do
      fake.config.backend = mode
      local v = view.view(1)
      assert.are.equal(mode, v.mode)
      assert.are.equal("flemma_sandbox", v.backend)
      assert.is_true(v.ours)
      assert.is_true(v.enabled)
    end
  end)

  it("passes on why no backend was detected", function()
    fake.detected = { nil, "no backend works here" }
    local v = view.view(1)
    assert.is_nil(v.backend)
    assert.is_false(v.ours)
    assert.are.equal("no backend works here", v.error)
  end)

  it("is not ours for another backend Flemma names, and resolves nothing then", function()
    fake.config = { enabled = false, backend = "bwrap" }
    local v = view.view(1)
    assert.are.same({ enabled = false, mode = "bwrap", backend = "bwrap", ours = false }, v)
  end)

  it("resolves the hardening from Flemma's policy and its config for flemma_sandbox when ours", function()
    fake.config.backends = { flemma_sandbox = { deny_domains = { "evil.test" } } }
    fake.policy = { rw_paths = { "/var/tmp" }, network = true, allow_privileged = false }
    local v = view.view(1)
    assert.is_true(v.ours)
    assert.is_nil(v.error)
    assert.are.equal(fake.policy, v.flemma_policy)
    assert.are.same({ "/var/tmp" }, v.resolved.rw_paths)
    assert.are.equal("allowlist", v.resolved.network_mode)
    assert.are.same({ "evil.test" }, v.config.policy.deny_domains)
  end)

  it("names the key of a bad config for flemma_sandbox", function()
    fake.config.backends = { flemma_sandbox = { network = "everywhere" } }
    local v = view.view(1)
    assert.is_nil(v.resolved)
    assert.matches("^sandbox%.backends%.flemma_sandbox%.network: expected", v.error)
  end)

  it("passes on why Flemma's policy could not be had", function()
    fake.policy = "no policy for this buffer"
    local v = view.view(1)
    assert.is_true(v.ours)
    assert.are.equal("no policy for this buffer", v.error)
    assert.is_nil(v.resolved)
  end)
end)
