--- notice.lua (run in Neovim): what one action says comes as one line:
--- notices of the same turn of the event loop are joined with "; " in
--- the order said (the `last` ones after), with the highest level, and cut
--- to what the command line shows.
local notice = require("flemma_sandbox.base.notice")
local n = require("support.nvim")

describe("notice", function()
  local notes, restore

  before_each(function()
    notes, restore = n.capture_notify()
  end)

  after_each(function()
    restore()
  end)

  describe("line", function()
    it("joins the parts after the prefix", function()
      assert.are.equal("flemma-sandbox: a; b; c", notice.line({ "a", "b", "c" }, 80))
    end)

    it("keeps a line that fits exactly", function()
      local text = notice.line({ "12345" }, 21)
      assert.are.equal("flemma-sandbox: 12345", text)
    end)

    it("cuts a longer line to the room, ending in ...", function()
      local text = notice.line({ "123456" }, 21)
      assert.are.equal("flemma-sandbox: 12...", text)
      assert.are.equal(21, vim.fn.strdisplaywidth(text))
    end)

    it("counts display cells, not bytes, and never cuts inside a character", function()
      local text = notice.line({ "ééééééééé" }, 20)
      assert.is_true(vim.fn.strdisplaywidth(text) <= 20)
      assert.is_truthy(vim.fn.strchars(text) > 0)
      assert.is_nil(text:find("\195%.%.%.")) -- no half of "é" before the dots
      assert.matches("%.%.%.$", text)
    end)

    it("keeps one character even with no room", function()
      assert.are.equal("f...", notice.line({ "anything" }, 0))
    end)
  end)

  describe("say", function()
    it("sends the notices of one turn as one line at its end, in order, at the highest level", function()
      notice.say("first")
      notice.say("second", vim.log.levels.WARN)
      notice.say("third", vim.log.levels.INFO)
      assert.are.same({}, notes)
      n.flush_notices()
      assert.are.equal(1, #notes)
      assert.matches("^flemma%-sandbox: first; second; third", notes[1].msg)
      assert.are.equal(vim.log.levels.WARN, notes[1].level)
    end)

    it("puts the `last` ones after the others", function()
      notice.say("a setting's warning", vim.log.levels.WARN, true)
      notice.say("the user's action")
      n.flush_notices()
      assert.matches("^flemma%-sandbox: the user's action; a setting's warning", notes[1].msg)
    end)

    it("sends another line for the next turn", function()
      notice.say("one")
      n.flush_notices()
      notice.say("two")
      n.flush_notices()
      assert.are.equal(2, #notes)
      assert.matches("two$", notes[2].msg)
      assert.are.equal(vim.log.levels.INFO, notes[2].level)
    end)

    it("cuts the line to one row of the command line", function()
      notice.say(string.rep("x", vim.o.columns * 2))
      n.flush_notices()
      assert.is_true(vim.fn.strdisplaywidth(notes[1].msg) < vim.o.columns)
      assert.matches("%.%.%.$", notes[1].msg)
    end)
  end)
end)
