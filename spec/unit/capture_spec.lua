local capture = require("flemma_sandbox.run.capture")

--- true when s is well-formed UTF-8 (enough for the sequences used here)
local function valid_utf8(s)
  local i = 1
  while i <= #s do
    local b = s:byte(i)
    local n = b < 0x80 and 1 or b >= 0xF0 and 4 or b >= 0xE0 and 3 or b >= 0xC0 and 2 or 0
    if n == 0 or i + n - 1 > #s then
      return false
    end
    for k = i + 1, i + n - 1 do
      local c = s:byte(k)
      if c < 0x80 or c >= 0xC0 then
        return false
      end
    end
    i = i + n
  end
  return true
end

describe("capture", function()
  it("keeps everything up to the limit", function()
    local c = capture.new(10)
    c:add("abc")
    c:add("defghij")
    assert.are.same({ "abcdefghij", false, 0 }, { c:result() })
  end)

  it("keeps the head and the tail and says how much was left out", function()
    local c = capture.new(10)
    c:add("12345")
    c:add(string.rep("x", 1000))
    c:add("ABCDE")
    local text, truncated, dropped = c:result()
    assert.is_true(truncated)
    assert.are.equal(1000, dropped)
    assert.are.equal("12345\n[... 1000 bytes left out ...]\nABCDE", text)
  end)

  it("stays small however much is added", function()
    local c = capture.new(100)
    local chunk = string.rep("y", 65536)
    for _ = 1, 2000 do
      c:add(chunk)
    end
    assert.is_true(c.tail_len < 200000)
    local text, _, dropped = c:result()
    assert.are.equal(2000 * 65536 - 100, dropped)
    assert.is_true(#text < 200)
  end)

  it("never cuts a UTF-8 sequence in half", function()
    for _, ch in ipairs({ "é", "€", "𝄞" }) do
      for limit = 7, 13 do
        local c = capture.new(limit)
        for _ = 1, 50 do
          c:add(ch)
        end
        local text, truncated = c:result()
        assert.is_true(truncated)
        assert.is_true(valid_utf8(text), ch .. " with limit " .. limit .. " gave invalid UTF-8")
        assert.matches("left out", text)
      end
    end
  end)
end)
