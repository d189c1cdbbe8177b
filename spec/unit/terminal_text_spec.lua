--- The command line's diff and apply to a terminal: a copied file's
--- controls are shown, never run; text, tabs, newlines and UTF-8 stay.
local tt = require("flemma_sandbox.cli.terminal_text")

describe("cli.terminal_text.escape", function()
  it("leaves text, tabs, newlines and UTF-8 as they are", function()
    local text = "a\tb\n é ✜ 𝄞 -- +x\n"
    assert.are.equal(text, tt.escape(text))
  end)

  it("shows C0 controls and DEL in caret notation: no OSC 52, no query, no CR overwrite", function()
    assert.are.equal("x^[]52;c;aGk=^Gy", tt.escape("x\27]52;c;aGk=\7y"))
    assert.are.equal("^[[6n^[[c^[P$qm^[\\", tt.escape("\27[6n\27[c\27P$qm\27\\"))
    assert.are.equal("safe^Mevil^@^?", tt.escape("safe\revil\0\127"))
  end)

  it("shows 8-bit controls, written in UTF-8 or as bare bytes, and bytes that are not UTF-8", function()
    assert.are.equal("<U+009B>6n<U+009D>52;", tt.escape("\194\1556n\194\15752;"))
    assert.are.equal("<9B>6n <9D> <FF><E2>(", tt.escape("\1556n \157 \255\226("))
  end)

  it("escapes nothing but the bytes it names in what it returns", function()
    for _, s in ipairs({ "\27]52;c;x\7", "\194\155", "\155", "\r", "a\0b" }) do
      assert.is_nil(tt.escape(s):find("[%z\1-\8\11-\31\127]"))
      assert.is_nil(tt.escape(s):find("\194[\128-\159]"))
    end
  end)
end)
