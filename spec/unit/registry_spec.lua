local registry = require("flemma_sandbox.backends")

local function backend(priority, ok, calls)
  return {
    priority = priority,
    available = function()
      if calls then
        calls.n = calls.n + 1
      end
      return ok, ok and nil or "nope"
    end,
    wrap = function(_, _, cmd)
      return cmd
    end,
  }
end

describe("registry", function()
  before_each(function()
    registry.clear()
  end)
  after_each(function()
    registry.clear()
  end)

  it("registers, replaces by name, unregisters", function()
    registry.register("a", backend(10, true))
    registry.register("a", backend(20, true))
    assert.are.equal(1, registry.count())
    assert.are.equal(20, registry.get("a").priority)
    assert.is_true(registry.has("a"))
    assert.is_true(registry.unregister("a"))
    assert.is_false(registry.unregister("a"))
    assert.is_nil(registry.get("a"))
  end)

  it("defaults the priority to 50 and sorts get_all by priority, highest first", function()
    registry.register("low", backend(1, true))
    registry.register("mid", { available = backend(0, true).available, wrap = backend(0, true).wrap })
    registry.register("high", backend(100, true))
    local names = {}
    for _, e in ipairs(registry.get_all()) do
      names[#names + 1] = e.name .. ":" .. e.priority
    end
    assert.are.same({ "high:100", "mid:50", "low:1" }, names)
  end)

  it("returns copies from get_all", function()
    registry.register("a", backend(10, true))
    registry.get_all()[1].priority = 999
    assert.are.equal(10, registry.get("a").priority)
  end)

  it("raises on a bad definition", function()
    assert.has_error(function()
      registry.register("x", { available = true })
    end)
    assert.has_error(function()
      registry.register("", backend(1, true))
    end)
  end)

  it("detects the highest available backend and says why others failed", function()
    registry.register("broken", backend(200, false))
    registry.register("fine", backend(10, true))
    assert.are.equal("fine", (registry.detect({})))
    registry.unregister("fine")
    local name, diagnostic = registry.detect({})
    assert.is_nil(name)
    assert.matches("broken: nope", diagnostic, 1, true)
  end)

  it("caches detection until the registry or the backends config changes", function()
    local calls = { n = 0 }
    registry.register("a", backend(10, true, calls))
    local cfg = { a = { path = "x" } }
    registry.detect_cached(cfg)
    registry.detect_cached(cfg)
    assert.are.equal(1, calls.n)
    registry.detect_cached({ a = { path = "x" } })
    assert.are.equal(1, calls.n)
    registry.detect_cached({ a = { path = "y" } })
    assert.are.equal(2, calls.n)
    registry.register("b", backend(1, false))
    registry.detect_cached({ a = { path = "y" } })
    assert.are.equal(3, calls.n)
    registry.invalidate()
    registry.detect_cached({ a = { path = "y" } })
    assert.are.equal(4, calls.n)
  end)
end)
