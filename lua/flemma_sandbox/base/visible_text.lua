--- Text as a question shows it: exactly what will run, with nothing that a
--- terminal draws as nothing, draws elsewhere or reorders. Every control,
--- format (bidi, zero-width, tag), separator other than the space,
--- variation selector and private-use character becomes a visible
--- "<U+XXXX>", a byte that is not UTF-8 "<0xNN>", a run of spaces longer
--- than a few "<N spaces>", and a line too long to show whole keeps its
--- start and its end around "<N more characters>". Pure Lua (no Neovim),
--- so the rules are tested under LuaJIT too.
local M = {}

--- Runs of spaces up to this long are shown as they are.
M.SPACE_RUN = 4

--- Lines longer than this (in characters, after the rules above) keep
--- their first and last M.KEEP characters.
M.LINE_MAX = 5000
M.KEEP = 2000

--- Code point ranges shown as <U+XXXX>, inclusive.
local HIDDEN = {
  { 0x00, 0x1F }, -- C0 controls (tab and CR too: they move what follows)
  { 0x7F, 0x9F }, -- DEL, C1 controls
  { 0xA0, 0xA0 }, -- no-break space
  { 0xAD, 0xAD }, -- soft hyphen
  { 0x034F, 0x034F }, -- combining grapheme joiner
  { 0x061C, 0x061C }, -- Arabic letter mark
  { 0x115F, 0x1160 }, -- Hangul fillers
  { 0x1680, 0x1680 }, -- Ogham space mark
  { 0x17B4, 0x17B5 },
  { 0x180B, 0x180F }, -- Mongolian selectors and vowel separator
  { 0x2000, 0x200F }, -- spaces of other widths, zero-width ones, LRM, RLM
  { 0x2028, 0x202F }, -- line and paragraph separators, bidi embeddings, narrow space
  { 0x205F, 0x206F }, -- medium space, word joiner, invisible operators, bidi isolates
  { 0x3000, 0x3000 }, -- ideographic space
  { 0x3164, 0x3164 }, -- Hangul filler
  { 0xE000, 0xF8FF }, -- private use
  { 0xFE00, 0xFE0F }, -- variation selectors
  { 0xFEFF, 0xFEFF }, -- byte order mark
  { 0xFFA0, 0xFFA0 }, -- halfwidth Hangul filler
  { 0xFFF0, 0xFFFB }, -- interlinear annotation
  { 0x110BD, 0x110BD },
  { 0x1D173, 0x1D17A }, -- musical formatting
  { 0xE0000, 0xE0FFF }, -- tags, variation selectors supplement
  { 0xF0000, 0x10FFFF }, -- private use planes
}

---@param cp integer
---@return boolean
function M.is_hidden(cp)
  for _, r in ipairs(HIDDEN) do
    if cp >= r[1] and cp <= r[2] then
      return true
    end
  end
  return false
end

--- The code point at byte i of s and its length in bytes, or nil when the
--- bytes there are not well-formed UTF-8 (overlong forms and surrogates
--- included).
---@param s string
---@param i integer
---@return integer|nil cp, integer len
local function decode(s, i)
  local b = s:byte(i)
  local len, cp, min
  if b < 0x80 then
    return b, 1
  elseif b >= 0xC2 and b <= 0xDF then
    len, cp, min = 2, b - 0xC0, 0x80
  elseif b >= 0xE0 and b <= 0xEF then
    len, cp, min = 3, b - 0xE0, 0x800
  elseif b >= 0xF0 and b <= 0xF4 then
    len, cp, min = 4, b - 0xF0, 0x10000
  else
    return nil, 1
  end
  for k = 1, len - 1 do
    local c = s:byte(i + k)
    if not c or c < 0x80 or c > 0xBF then
      return nil, 1
    end
    cp = cp * 64 + (c - 0x80)
  end
  if cp < min or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then
    return nil, 1
  end
  return cp, len
end

--- One line (no newline in it) as shown, and whether anything was marked.
---@param line string
---@return string shown, boolean marked
function M.line(line)
  local out, i, n, marked = {}, 1, #line, false
  while i <= n do
    local cp, len = decode(line, i)
    if cp == 0x20 then
      local j = i
      while line:byte(j + 1) == 0x20 do
        j = j + 1
      end
      local run = j - i + 1
      if run > M.SPACE_RUN then
        out[#out + 1] = string.format("<%d spaces>", run)
        marked = true
      else
        out[#out + 1] = line:sub(i, j)
      end
      i = j + 1
    else
      if not cp then
        out[#out + 1] = string.format("<0x%02X>", line:byte(i))
        marked = true
      elseif M.is_hidden(cp) then
        out[#out + 1] = string.format("<U+%04X>", cp)
        marked = true
      else
        out[#out + 1] = line:sub(i, i + len - 1)
      end
      i = i + len
    end
  end
  local shown = table.concat(out)
  if #out > M.LINE_MAX then
    local head = table.concat(out, "", 1, M.KEEP)
    local tail = table.concat(out, "", #out - M.KEEP + 1, #out)
    shown = string.format("%s<%d more characters>%s", head, #out - 2 * M.KEEP, tail)
    marked = true
  end
  return shown, marked
end

--- Every line of text (split at "\n") as shown.
---@param text string
---@return string[] lines, boolean marked
function M.lines(text)
  local out, marked = {}, false
  local start = 1
  while true do
    local nl = text:find("\n", start, true)
    local shown, m = M.line(text:sub(start, nl and nl - 1 or #text))
    out[#out + 1] = shown
    marked = marked or m
    if not nl then
      break
    end
    start = nl + 1
  end
  return out, marked
end

--- lines cut to at most `max_rows` screen rows: the first ones and the
--- last ones around a line that says how many are not shown, so that the
--- end of a command is never hidden.
---@param lines string[]
---@param max_rows integer
---@param rows? fun(line: string): integer rows a line takes (default 1)
---@return string[]
function M.fit(lines, max_rows, rows)
  rows = rows or function()
    return 1
  end
  local total = 0
  for _, l in ipairs(lines) do
    total = total + rows(l)
  end
  if total <= max_rows then
    return lines
  end
  local budget = math.max(2, max_rows - 1) -- one row for the marker
  local head, tail, used = 0, 0, 0
  -- from both ends in turn, while the next line still fits
  while head + tail < #lines do
    local take_tail = tail < head
    local k = take_tail and (#lines - tail) or (head + 1)
    local r = rows(lines[k])
    if used + r > budget then
      break
    end
    used = used + r
    if take_tail then
      tail = tail + 1
    else
      head = head + 1
    end
  end
  local out = {}
  for k = 1, head do
    out[#out + 1] = lines[k]
  end
  out[#out + 1] = string.format("<%d more lines>", #lines - head - tail)
  for k = #lines - tail + 1, #lines do
    out[#out + 1] = lines[k]
  end
  return out
end

--- A host name as the network question shows it, and a warning when its
--- form could pass for another name: an internationalized label
--- ("xn--", as clients send it), or bytes outside ASCII.
---@param name string
---@return string shown, string|nil warning
function M.host(name)
  local shown = M.line(name)
  if name:find("[\128-\255]") then
    return shown, "the name holds characters outside ASCII: it may imitate another one"
  end
  for label in name:gmatch("[^.]+") do
    if label:lower():sub(1, 4) == "xn--" then
      return shown, "an internationalized name (" .. label .. "): it may imitate another one"
    end
  end
  return shown, nil
end

return M
