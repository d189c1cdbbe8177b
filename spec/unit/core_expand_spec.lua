local core = require("flemma_sandbox.core")

local vars = {
  HOME = "/home/u",
  CWD = "/work/p",
  FLEMMA_BUFFER_PATH = "/work/chats",
  FLEMMA_PLAYGROUND = "/home/u/.local/share/flemma-sandbox/playground",
  XDG = "/xdg",
  EMPTY = "",
}

describe("core.expand", function()
  local cases = {
    { "/plain/path", "/plain/path" },
    { "$HOME/x", "/home/u/x" },
    { "${HOME}x", "/home/ux" },
    { "$XDG/$HOME", "/xdg//home/u" },
    { "${NOPE:-/d}", "/d" },
    { "${XDG:-/d}/c", "/xdg/c" },
    { "${EMPTY:-/d}", "/d" },
    { "${NOPE:-~/.cache}", "/home/u/.cache" },
    { "${NOPE:-${ALSO_NOPE:-/z}}/a", "/z/a" },
    { "${NOPE:-}", "" },
    { "~", "/home/u" },
    { "~/a", "/home/u/a" },
    { "/a~b", "/a~b" },
    { "$CWD", "/work/p" },
    { "$FLEMMA_BUFFER_PATH/sub", "/work/chats/sub" },
    { "urn:flemma:cwd", "/work/p" },
    { "urn:flemma:cwd/sub/$XDG", "/work/p/sub//xdg" },
    { "urn:flemma:buffer:path", "/work/chats" },
    { "urn:flemma:playground", "/home/u/.local/share/flemma-sandbox/playground" },
    { "a$", "a$" },
    { "$1/x", "$1/x" },
    { "$-", "$-" },
    { "", "" },
  }
  for _, c in ipairs(cases) do
    it(string.format("%q -> %q", c[1], c[2]), function()
      assert.are.equal(c[2], core.expand(c[1], vars))
    end)
  end

  local unset = {
    { "$NOPE/foo", "NOPE" },
    { "${NOPE}/foo", "NOPE" },
    { "$EMPTY/foo", "EMPTY" },
    { "/a/${NOPE:-$ALSO}/b", "ALSO" },
    { "urn:flemma:nope", "urn:flemma:nope" },
    { "urn:flemma:cwdx/a", "urn:flemma:cwdx" },
  }
  for _, c in ipairs(unset) do
    it(string.format("%q reports %s instead of an empty string", c[1], c[2]), function()
      local out, err, name = core.expand(c[1], vars)
      assert.is_nil(out)
      assert.are.equal(c[2], name)
      assert.matches("is not set", err)
    end)
  end

  it("reports ~ when HOME is unset", function()
    local out, _, name = core.expand("~/x", {})
    assert.is_nil(out)
    assert.are.equal("HOME", name)
  end)

  local syntax = {
    { "${", "unterminated" },
    { "${HOME", "unterminated" },
    { "${}", "bad variable name" },
    { "${1A}", "bad variable name" },
    { "${HOME:+x}", "unsupported expansion" },
    { "${HOME/a/b}", "unsupported expansion" },
    { "~bob/x", "~user is not supported" },
    { string.rep("${N:-", 20) .. "/x" .. string.rep("}", 20), "nested too deeply" },
  }
  for _, c in ipairs(syntax) do
    it(string.format("%q is a syntax error", c[1]), function()
      local out, err, name = core.expand(c[1], vars)
      assert.is_nil(out)
      assert.is_nil(name)
      assert.matches(c[2], err, 1, true)
    end)
  end

  it("asks a vars table with an __index function (the environment)", function()
    local asked = {}
    local env = setmetatable({}, {
      __index = function(_, k)
        asked[#asked + 1] = k
        return k == "TMPDIR" and "/var/tmp" or nil
      end,
    })
    assert.are.equal("/var/tmp/x", core.expand("${TMPDIR:-/tmp}/x", env))
    assert.are.same({ "TMPDIR" }, asked)
  end)

  it("expands a very long input", function()
    local out = core.expand(string.rep("$XDG", 20000), vars)
    assert.are.equal(#"/xdg" * 20000, #out)
  end)

  it("raises for wrong argument types, naming them", function()
    assert.has_error(function()
      core.expand(nil, vars)
    end, "bad argument #1 to 'expand' (text: string expected, got nil)")
    assert.has_error(function()
      core.expand("$HOME", nil)
    end, "bad argument #2 to 'expand' (vars: table expected, got nil)")
    assert.has_error(function()
      core.expand("$N", { N = 5 })
    end, "bad argument #2 to 'expand' (vars.N: string expected, got number)")
  end)

  it("passes an error raised by vars' __index through without leaking", function()
    local env = setmetatable({}, {
      __index = function()
        error("boom")
      end,
    })
    assert.has_error(function()
      core.expand("$A$B", env)
    end)
  end)
end)
