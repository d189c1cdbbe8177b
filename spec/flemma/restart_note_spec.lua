-- Under the real Flemma (FLEMMA_DIR), a frontmatter change of a chat
-- starts its live sandbox again, and the next bash result's `[sandbox]`
-- note names the setting with its old and new value (flemma/notes.lua),
-- marked as the frontmatter's (Flemma says the value comes from it).
-- Controls: a call with the same frontmatter joins without a note; a
-- change of require("flemma_sandbox").setup() is not marked.
local flemma_chat = require("support.flemma_chat")

local execute, result_of = flemma_chat.execute, flemma_chat.result_of

describe("under Flemma, a chat's sandbox started again", function()
  local p
  flemma_chat.each_project("true", function(world)
    p = world
  end)

  it("names the frontmatter's setting with its old and new value in the result", function()
    flemma_chat.setup_flemma("direct")
    local chat = p.dir .. "/chats/net.chat"
    local out = result_of(execute(chat, "bash", { label = "t", command = "echo one" }))
    assert.matches("one", out)
    -- control: the same policy joins, nothing said
    out = result_of(execute(chat, "bash", { label = "t", command = "echo two" }))
    assert.matches("two", out)
    assert.is_nil(out:find("started again", 1, true), out)
    local off = "flemma.opt.sandbox = { policy = { network = false } }"
    out = result_of(execute(chat, "bash", { label = "t", command = "echo three" }, off))
    assert.matches("three", out)
    assert.matches(
      "%[sandbox%] policy%.network: %S+ %-> false %(set by this chat's frontmatter%): "
        .. "this chat's sandbox was started again",
      out
    )
    -- control: what setup() changes is not the frontmatter's
    require("flemma_sandbox").setup({ policy = { limits = { open_files = 333 } } })
    out = result_of(execute(chat, "bash", { label = "t", command = "echo four" }, off))
    assert.matches("four", out)
    assert.matches("%[sandbox%] policy%.limits%.open_files: %S+ %-> 333: this chat's sandbox was started again", out)
    assert.is_nil(out:find("frontmatter", 1, true), out)
  end)
end)
