local h = require("support.helpers")
local sandbox = require("flemma_sandbox")
local config = require("flemma_sandbox.config")

local doc = assert(h.read("doc/flemma-sandbox.txt"))

describe("doc/flemma-sandbox.txt", function()
  it("has a tag for every public API function", function()
    for name, value in pairs(sandbox) do
      if type(value) == "function" then
        assert.truthy(doc:find("*flemma_sandbox." .. name .. "()*", 1, true), "no tag for " .. name .. "()")
      end
    end
  end)

  it("has a tag for every subcommand and for job.run()", function()
    for _, name in ipairs({ "enable", "disable", "status" }) do
      assert.truthy(doc:find("*:FlemmaSandbox-" .. name .. "*", 1, true), "no tag for " .. name)
    end
    assert.truthy(doc:find("*flemma_sandbox.run.job.run()*", 1, true))
    assert.truthy(doc:find("*flemma-sandbox-frontmatter*", 1, true))
    assert.truthy(doc:find("*flemma-sandbox-health*", 1, true))
    assert.truthy(doc:find("*flemma-sandbox-flemma*", 1, true))
  end)

  it("documents every policy key and its default", function()
    for key in pairs(config.defaults.policy) do
      assert.truthy(doc:find("policy." .. key .. " ~", 1, true), "policy." .. key .. " undocumented")
    end
    assert.truthy(doc:find('`{ "$CWD", "$FLEMMA_BUFFER_PATH", "/tmp", "$FLEMMA_PLAYGROUND" }`', 1, true))
  end)

  it("uses only code block markers Neovim 0.7 renders (> not >lua)", function()
    assert.is_nil(doc:find(" >%a+\n"), "a >LANG marker shows as text on 0.7")
  end)

  it("builds help tags without errors and keeps lines within 78 columns", function()
    local dir = h.tmpdir()
    h.sh("cp doc/flemma-sandbox.txt " .. h.shell_quote(dir))
    local r = h.run({ "nvim", "--headless", "-u", "NONE", "-c", "helptags " .. dir, "-c", "qa!" })
    local tags = h.read(dir .. "/tags")
    h.rmdir(dir)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stderr)
    assert.truthy(tags and tags:find("flemma_sandbox.wrap_command()", 1, true))
    local n = 0
    for line in doc:gmatch("[^\n]*") do
      n = n + 1
      assert.is_true(#line <= 78, "line " .. n .. " is longer than 78 columns")
    end
  end)
end)
