--- process.lua under plain LuaJIT (the command line, busted: no Neovim):
--- run, lines and quietly go through /bin/sh and give the output and the
--- exit status; spawn, which needs Neovim's loop, says so.
local process = require("flemma_sandbox.base.process")

describe("process without Neovim", function()
  it("runs and waits: the output with stderr or without, the status, input", function()
    local out, code = process.run({ "sh", "-c", "echo out; echo err >&2; exit 4" })
    assert.are.equal(4, code)
    assert.are.equal("out\nerr\n", out)
    assert.are.same({ "out\n", 0 }, { process.run({ "sh", "-c", "echo out; echo err >&2" }, { stderr = "null" }) })
    assert.are.same({ "it's given", 0 }, { process.run({ "cat" }, { input = "it's given" }) })
    assert.are.same({ "a\0b", 0 }, { process.run({ "printf", "a\\0b" }) })
    assert.are.same({ "a b'c", 0 }, { process.run({ "printf", "%s", "a b'c" }) })
  end)

  it("gives lines, an empty list for no output", function()
    assert.are.same({ { "a", "", "b" }, 0 }, { process.lines({ "printf", "a\\n\\nb\\n" }) })
    assert.are.same({ {}, 0 }, { process.lines({ "true" }) })
  end)

  it("says whether a command exited 0, its output thrown away", function()
    assert.is_true(process.quietly({ "sh", "-c", "echo noise; echo noise >&2" }))
    assert.is_false(process.quietly({ "false" }))
    assert.is_false(process.quietly({ "/nonexistent/flemma-sandbox-no-such" }))
    assert.are.equal(127, select(2, process.run({ "/nonexistent/flemma-sandbox-no-such" })))
  end)

  it("starts nothing in the background without Neovim's loop", function()
    local handle, err = process.spawn({ "true" }, {}, function() end)
    assert.is_nil(handle)
    assert.matches("no event loop", err)
    assert.is_nil(process.uv())
  end)
end)
