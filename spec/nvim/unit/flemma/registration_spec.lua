--- flemma/registration.lua (run in Neovim, Flemma's config and sandbox
--- modules stood in for: the real late start is spec/flemma/lazyless_spec's):
--- whether Flemma's setup() had run when our backend first registered
--- (then Flemma dropped sandbox.backends.flemma_sandbox), Flemma's own
--- message about it from the message history, and what :checkhealth gets.
describe("flemma.registration", function()
  local reg, saved_config, saved_sandbox, set_up, original

  before_each(function()
    -- a fresh copy: the module keeps what it saw at the first registration
    -- (the one the plugin loaded is put back after)
    original = package.loaded["flemma_sandbox.flemma.registration"]
    package.loaded["flemma_sandbox.flemma.registration"] = nil
    reg = require("flemma_sandbox.flemma.registration")
    saved_config, saved_sandbox = package.loaded["flemma.config"], package.loaded["flemma.sandbox"]
    set_up = false
    package.loaded["flemma.config"] = {
      materialize = function()
        if not set_up then
          error("flemma: setup() has not run")
        end
        return {}
      end,
    }
    package.loaded["flemma.sandbox"] = {
      get = function(name)
        return name == "flemma_sandbox" and { config_schema = {} } or (name == "bare" and {} or nil)
      end,
    }
  end)

  after_each(function()
    package.loaded["flemma.config"], package.loaded["flemma.sandbox"] = saved_config, saved_sandbox
    package.loaded["flemma_sandbox.flemma.registration"] = original
  end)

  it("knows whether Flemma's setup() has run", function()
    assert.is_false(reg.flemma_set_up())
    set_up = true
    assert.is_true(reg.flemma_set_up())
    package.loaded["flemma.config"] = nil
    local real = package.preload["flemma.config"]
    package.preload["flemma.config"] = function()
      error("no Flemma")
    end
    local got = reg.flemma_set_up()
    package.preload["flemma.config"] = real
    assert.is_false(got)
  end)

  it("registered early: not late, nothing dropped, registered with its schema", function()
    reg.before_first()
    set_up = true
    reg.before_first() -- the first registration is the one that counts
    assert.are.same({ registered = true, late = false }, reg.state("flemma_sandbox"))
    assert.is_false(reg.state("bare").registered, "no schema: Flemma cannot resolve its keys")
    assert.is_false(reg.state("other").registered)
  end)

  describe("with a message history", function()
    local real_exec2, history

    before_each(function()
      real_exec2 = vim.api.nvim_exec2
      history = ""
      -- the history as nvim_exec2("messages") gives it (Neovim 0.9+)
      vim.api.nvim_exec2 = function(cmd, opts)
        assert.are.equal("messages", cmd)
        assert.are.same({ output = true }, opts)
        return { output = history }
      end
    end)

    after_each(function()
      vim.api.nvim_exec2 = real_exec2
    end)

    it("registered late: says so, and finds Flemma's message naming the key", function()
      set_up = true
      reg.before_first()
      assert.is_true(reg.state("flemma_sandbox").late)
      assert.is_nil(reg.dropped_message())
      history = "first\nflemma: unknown config keys: sandbox.backends.other\n"
        .. "flemma: unknown config keys: sandbox.backends.flemma_sandbox (value dropped)\nlast"
      assert.are.equal(
        "flemma: unknown config keys: sandbox.backends.flemma_sandbox (value dropped)",
        reg.dropped_message()
      )
      assert.are.equal(reg.dropped_message(), reg.state("flemma_sandbox").dropped)
    end)

    it("never reads the history when it was not late", function()
      reg.before_first()
      history = "flemma: unknown config keys: sandbox.backends.flemma_sandbox"
      assert.is_nil(reg.dropped_message())
    end)
  end)

  it("reads no history where Neovim has no nvim_exec2 (before 0.9)", function()
    local real_exec2 = vim.api.nvim_exec2
    vim.api.nvim_exec2 = nil
    set_up = true
    reg.before_first()
    local got = reg.dropped_message()
    vim.api.nvim_exec2 = real_exec2
    assert.is_nil(got)
  end)
end)
