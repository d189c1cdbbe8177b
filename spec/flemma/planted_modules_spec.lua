--- Under Flemma too, a file a sandboxed command planted in the project
--- never runs at the next Neovim start there (issue 38, item 1): not ours
--- (a core.so and a helper beside it), not one at a Flemma module's name.
local h = require("support.helpers")
local planted = require("support.planted")
local startup = require("support.startup")

local flemma_dir = assert(os.getenv("FLEMMA_DIR"), "FLEMMA_DIR")
local ROOT = vim.fn.getcwd()

describe("planted modules under Flemma", function()
  local t
  before_each(function()
    t = h.tmpdir()
    h.sh("mkdir -p " .. h.shell_quote(t .. "/project"))
    planted.plant(ROOT, t .. "/project", t .. "/marks")
  end)
  after_each(function()
    h.rmdir(t)
  end)

  ---@param first string[] init.lua's lines before the plugins
  local function init_lines(first)
    return vim.list_extend(vim.deepcopy(first), {
      "vim.opt.rtp:prepend(" .. string.format("%q", flemma_dir) .. ")",
      "vim.opt.rtp:prepend(" .. string.format("%q", ROOT) .. ")",
      "vim.cmd('runtime plugin/flemma_sandbox.lua')",
      "require('flemma').setup({ lsp = { enabled = false } })",
      "EXTRA = function()",
      "  vim.cmd('silent! checkhealth flemma_sandbox')",
      "  local buf = vim.api.nvim_get_current_buf()",
      "  local argv = require('flemma.sandbox').wrap_command({ 'sh', '-c', 'echo ran' }, buf)",
      "  return 'output=' .. (argv and vim.fn.system(argv) or 'not wrapped')",
      "end",
    })
  end

  it("start-up, the first chat, the health check and a wrapped call run nothing planted", function()
    local got = startup.run(t, init_lines({}))
    assert.matches("filetype=chat\n", got.result)
    assert.matches("output=ran", got.result)
    assert.are.equal("", planted.marks(t .. "/marks"))
  end)

  it("control: with the guard off, the first chat runs a program planted beside a planted core.so", function()
    local got = startup.run(t, init_lines({ planted.unguarded(ROOT) }))
    assert.matches("filetype=chat\n", got.result)
    assert.matches("flemma-sandbox-", planted.marks(t .. "/marks"), 1, true)
  end)
end)
