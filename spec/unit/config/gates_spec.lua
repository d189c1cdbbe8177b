--- config/gates.lua: FLEMMA_SANDBOX_TOOLS=off (or 0, false, no, in any
--- case) and tools.enabled = false turn every tool call off, and the
--- refusal names the variable with its value, or the key.
local gates = require("flemma_sandbox.config.gates")
local surroundings = require("flemma_sandbox.base.surroundings")

local function with_env(value)
  surroundings.use({
    getenv = function(name)
      return name == "FLEMMA_SANDBOX_TOOLS" and value or nil
    end,
  })
end

describe("config.gates", function()
  after_each(function()
    surroundings.use(nil)
  end)

  it("names its variable", function()
    assert.are.equal("FLEMMA_SANDBOX_TOOLS", gates.ENV)
  end)

  it("is off for off, 0, false and no, in any case", function()
    for _, v in ipairs({ "off", "OFF", "Off", "0", "false", "FALSE", "no", "No" }) do
      with_env(v)
      assert.is_true(gates.env_off(), v)
    end
  end)

  it("is on when unset, empty or any other value", function()
    for _, v in ipairs({ false, "", "on", "1", "true", "yes", " off", "off ", "offline" }) do
      with_env(v or nil)
      assert.is_false(gates.env_off(), tostring(v))
    end
  end)

  it("refuses naming the variable and its value as set", function()
    with_env("Off")
    assert.are.equal(
      "tool calls are off: FLEMMA_SANDBOX_TOOLS=Off in Neovim's environment",
      gates.tools_refusal({ tools = { enabled = true } })
    )
  end)

  it("refuses naming the key when tools.enabled is false", function()
    with_env(nil)
    assert.are.equal("tool calls are off: tools.enabled = false", gates.tools_refusal({ tools = { enabled = false } }))
  end)

  it("names the variable first when both are off", function()
    with_env("no")
    assert.matches("FLEMMA_SANDBOX_TOOLS=no", gates.tools_refusal({ tools = { enabled = false } }))
  end)

  it("does not refuse without a config, without a tools table, or with enabled unset", function()
    with_env(nil)
    assert.is_nil(gates.tools_refusal(nil))
    assert.is_nil(gates.tools_refusal({}))
    assert.is_nil(gates.tools_refusal({ tools = {} }))
    assert.is_nil(gates.tools_refusal({ tools = { enabled = true } }))
  end)
end)
