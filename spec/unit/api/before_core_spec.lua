--- before_core.lua: while the C core is not built, setup() is kept and
--- replayed on the real module, in order, once it loads; every other
--- function says why it cannot work yet; afterwards everything forwards.
describe("before_core", function()
  local before, original

  before_each(function()
    -- a fresh copy each time: the module keeps what it was given (the
    -- loaded one, if any, is put back after)
    original = package.loaded["flemma_sandbox.api.before_core"]
    package.loaded["flemma_sandbox.api.before_core"] = nil
    before = require("flemma_sandbox.api.before_core")
  end)

  after_each(function()
    package.loaded["flemma_sandbox.api.before_core"] = original
  end)

  it("says it is the stand-in", function()
    assert.is_true(before.before_core)
  end)

  it("raises for any other function, naming why the core did not load, at the caller's line", function()
    before.explain("module 'flemma_sandbox.core' not found")
    local ok, err = pcall(function()
      before.wrap_command({ "ls" })
    end)
    assert.is_false(ok)
    local where = "before_core_spec%.lua:%d+: "
    assert.matches(
      where .. "flemma%-sandbox: the C core is not built yet %(module 'flemma_sandbox.core' not found%)",
      err
    )
  end)

  it("says 'not found' when nothing explained it", function()
    local _, err = pcall(before.get_policy)
    assert.matches("the C core is not built yet %(not found%)", err)
  end)

  it("keeps setup() calls and replays them in order on the real module, with {} for none", function()
    local seen = {}
    before.setup({ a = 1 })
    before.setup()
    before.setup({ b = 2 })
    assert.are.same({}, seen)
    local errors = before.forward_to({
      setup = function(opts)
        seen[#seen + 1] = opts
      end,
    })
    assert.are.same({ { a = 1 }, {}, { b = 2 } }, seen)
    assert.are.same({}, errors)
  end)

  it("returns one error per failed setup() and still replays the others", function()
    local seen = {}
    before.setup({ bad = true })
    before.setup({ good = true })
    local errors = before.forward_to({
      setup = function(opts)
        if opts.bad then
          error("policy.rw_paths: expected a list", 0)
        end
        seen[#seen + 1] = opts
      end,
    })
    assert.are.same({ "policy.rw_paths: expected a list" }, errors)
    assert.are.same({ { good = true } }, seen)
  end)

  it("forwards everything once the core loaded, setup() too, and replays nothing twice", function()
    local calls = 0
    local real = {
      setup = function()
        calls = calls + 1
        return "set"
      end,
      get_policy = function(bufnr)
        return "policy of " .. bufnr
      end,
      VERSION = "1.2",
    }
    before.setup({})
    before.forward_to(real)
    assert.are.equal(1, calls)
    assert.are.equal("set", before.setup({}))
    assert.are.equal(2, calls)
    assert.are.equal("policy of 3", before.get_policy(3))
    assert.are.equal("1.2", before.VERSION)
    assert.is_nil(before.not_there)
    assert.are.same({}, before.forward_to(real))
    assert.are.equal(2, calls)
  end)
end)
