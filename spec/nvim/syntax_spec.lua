--- The .chat highlighting of syntax/chat.vim when Flemma is not installed:
--- roles, tool headers, a failed result, fences; nothing when Flemma is on
--- the runtimepath (its own syntax file does it).
local h = require("support.helpers")

--- The syntax group at (line, col) of the current buffer.
local function group_at(line, col)
  return vim.fn.synIDattr(vim.fn.synID(line, col, 1), "name")
end

describe(".chat highlighting", function()
  local dir, rtp
  before_each(function()
    dir = h.tmpdir()
    rtp = vim.o.runtimepath
    vim.cmd("syntax on")
    h.write(dir .. "/a.chat", table.concat({
      "@You:",
      "hi",
      "",
      "@Assistant:",
      "**Tool Use:** `bash` (`toolu_1`)",
      "```json",
      '{"command":"ls"}',
      "```",
      "",
      "@You:",
      "**Tool Result:** `toolu_1` (error)",
      "",
      "````",
      "```",
      "[exit code 2]",
      "````",
    }, "\n") .. "\n")
  end)
  after_each(function()
    vim.cmd("silent! %bwipeout!")
    vim.o.runtimepath = rtp
    h.rmdir(dir)
  end)

  it("marks roles, tool headers, a failed result and fences; a longer fence holds a shorter one", function()
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/a.chat"))
    assert.are.equal("chat", vim.bo.filetype)
    assert.are.equal("flemmaSandboxChatRole", group_at(1, 1))
    assert.are.equal("flemmaSandboxChatToolUse", group_at(5, 1))
    assert.are.equal("flemmaSandboxChatFenceMark", group_at(6, 1))
    assert.are.equal("flemmaSandboxChatFence", group_at(7, 2))
    assert.are.equal("flemmaSandboxChatToolResult", group_at(11, 1))
    assert.are.equal("flemmaSandboxChatFailed", group_at(11, 28))
    -- inside the four-backtick fence, three backticks are text
    assert.are.equal("flemmaSandboxChatFence", group_at(14, 1))
    assert.are.equal("flemmaSandboxChatFence", group_at(15, 2))
    assert.are.equal("", group_at(2, 1))
  end)

  it("does nothing when Flemma is on the runtimepath (control: the same file, highlighted above)", function()
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/fake/lua/flemma"))
    h.write(dir .. "/fake/lua/flemma/init.lua", "return {}\n")
    vim.opt.runtimepath:append(dir .. "/fake")
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/a.chat"))
    assert.are.equal("chat", vim.bo.filetype)
    assert.are.equal("", group_at(1, 1))
    assert.are.equal("", group_at(5, 1))
  end)
end)
