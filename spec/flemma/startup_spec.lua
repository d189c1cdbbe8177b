--- Neovim's start-up with Flemma and flemma-sandbox loaded first (the
--- README's lazy.nvim spec): Flemma's setup() asks every backend whether
--- it works, and flemma-sandbox answers from cheap checks; its test
--- sandbox runs in the background at the first chat. When that test
--- fails, Flemma's "auto" moves on to its own bwrap, as it would have had
--- the test run in its setup().
local h = require("support.helpers")
local startup = require("support.startup")

local flemma_dir = assert(os.getenv("FLEMMA_DIR"), "FLEMMA_DIR")

describe("start-up under Flemma", function()
  local t
  before_each(function()
    t = h.tmpdir()
  end)
  after_each(function()
    h.rmdir(t)
  end)

  local function init_lines()
    return {
      "vim.opt.rtp:prepend(" .. string.format("%q", flemma_dir) .. ")",
      "vim.opt.rtp:prepend(" .. string.format("%q", vim.fn.getcwd()) .. ")",
      -- lazy.nvim's order for a dependency: its plugin file before Flemma's setup()
      "vim.cmd('runtime plugin/flemma_sandbox.lua')",
      "require('flemma').setup({ lsp = { enabled = false } })",
      "EXTRA = function()",
      "  local argv, err = require('flemma.sandbox').wrap_command({ 'true' }, vim.api.nvim_get_current_buf())",
      "  local joined = argv and table.concat(argv, ' ') or ('error: ' .. tostring(err))",
      "  return 'ours=' .. tostring(joined:find('flemma-sandbox-host', 1, true) ~= nil) .. '\\nwrapped=' .. joined",
      "end",
    }
  end

  it("runs no bwrap at start-up; the first chat runs the test sandbox, and Flemma wraps with flemma_sandbox", function()
    local got = startup.run(t, init_lines())
    assert.matches("filetype=chat\n", got.result)
    assert.are.equal("", got.at_start, "bwrap ran at start-up")
    assert.matches("indexes_at_start=0\n", got.result)
    assert.matches("%-%-unshare%-all %-%-die%-with%-parent %-%- true", got.after_chat)
    assert.matches("ours=true\n", got.result)
  end)

  it("when the test sandbox fails at the first chat, Flemma's auto detection moves on to its own bwrap", function()
    local got = startup.run(t, init_lines(), { BWRAP_FAIL = "1" })
    assert.are.equal("", got.at_start, "bwrap ran at start-up")
    assert.matches("%-%- true", got.after_chat)
    assert.matches("ours=false\n", got.result)
    -- Flemma's own backend: its argv starts with bwrap itself
    assert.matches("\nwrapped=bwrap ", got.result)
  end)
end)
