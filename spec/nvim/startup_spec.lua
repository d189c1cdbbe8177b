--- Neovim's start-up with flemma-sandbox and setup() in init.lua: nothing
--- starts a sandbox, probes bwrap, walks a tree or loads the policy until
--- the first chat; then the backend's test sandbox and the folder's scan
--- index run in the background. (`make bench` prints what start-up costs.)
local h = require("support.helpers")
local startup = require("support.startup")

describe("start-up, standalone", function()
  local t
  before_each(function()
    t = h.tmpdir()
  end)
  after_each(function()
    h.rmdir(t)
  end)

  it("runs no bwrap and no scan and loads no policy before the first chat; both run at the first chat", function()
    local root = vim.fn.getcwd()
    local got = startup.run(t, {
      "vim.opt.rtp:prepend(" .. string.format("%q", root) .. ")",
      "require('flemma_sandbox').setup({ backend = 'required' })",
    })
    assert.matches("filetype=chat\n", got.result)
    assert.are.equal("", got.at_start, "bwrap ran at start-up")
    assert.matches("indexes_at_start=0\n", got.result)
    local loaded = got.result:match("loaded=([^\n]*)")
    assert.truthy(loaded, got.result)
    for _, heavy in ipairs({ "flemma_sandbox.policy", "flemma_sandbox.backends.bwrap", "flemma_sandbox.chat" }) do
      assert.is_nil(
        (" " .. loaded .. " "):find(" " .. heavy .. " ", 1, true),
        heavy .. " loaded at start-up: " .. loaded
      )
    end
    -- the first chat: the test sandbox ran (once), and the index was built
    assert.matches("%-%-unshare%-all %-%-die%-with%-parent %-%- true", got.after_chat)
    assert.matches("indexes_after_chat=[1-9]", got.result)
  end)
end)
