--- Bounded capture of one output stream: keeps the first and the last part,
--- counts what fell out in between, and never cuts a UTF-8 sequence in half.
--- Memory stays at a few times the limit whatever the command prints.
local M = {}

---@class flemma_sandbox.Capture
---@field limit integer characters kept in all (head + tail)
---@field head string[]
---@field head_len integer
---@field tail string[]
---@field tail_len integer
---@field total integer bytes seen
local Capture = {}
Capture.__index = Capture

---@param limit integer
---@return flemma_sandbox.Capture
function M.new(limit)
  return setmetatable({ limit = limit, head = {}, head_len = 0, tail = {}, tail_len = 0, total = 0 }, Capture)
end

---@param chunk string
function Capture:add(chunk)
  local n = #chunk
  if n == 0 then
    return
  end
  self.total = self.total + n
  local head_room = math.ceil(self.limit / 2) - self.head_len
  if head_room > 0 then
    local part = chunk:sub(1, head_room)
    self.head[#self.head + 1] = part
    self.head_len = self.head_len + #part
    chunk = chunk:sub(head_room + 1)
    if chunk == "" then
      return
    end
  end
  self.tail[#self.tail + 1] = chunk
  self.tail_len = self.tail_len + #chunk
  -- trim now and then, not on every chunk: amortized linear
  local keep = math.floor(self.limit / 2) + 4
  if self.tail_len > 2 * keep + 65536 then
    local joined = table.concat(self.tail)
    self.tail = { joined:sub(-keep) }
    self.tail_len = #self.tail[1]
  end
end

--- Index of the first byte of the UTF-8 sequence that holds byte i.
local function char_start(s, i)
  local steps = 0
  while i > 1 and steps < 3 do
    local b = s:byte(i)
    if b < 0x80 or b >= 0xC0 then
      return i
    end
    i = i - 1
    steps = steps + 1
  end
  return i
end

--- Length of the UTF-8 sequence a lead byte starts (1 for anything else).
local function seq_len(b)
  if b >= 0xF0 and b < 0xF8 then
    return 4
  elseif b >= 0xE0 then
    return 3
  elseif b >= 0xC0 then
    return 2
  end
  return 1
end

--- Drops a sequence cut at the end of s.
local function trim_end(s)
  if s == "" then
    return s
  end
  local start = char_start(s, #s)
  local b = s:byte(start)
  if b >= 0xC0 and start + seq_len(b) - 1 > #s then
    return s:sub(1, start - 1)
  end
  return s
end

--- Drops continuation bytes at the start of s (the rest of a cut sequence).
local function trim_start(s)
  local i = 1
  while i <= #s and i <= 3 do
    local b = s:byte(i)
    if b < 0x80 or b >= 0xC0 then
      break
    end
    i = i + 1
  end
  return s:sub(i)
end

--- The kept text, with a marker line where output was left out.
---@return string text, boolean truncated, integer dropped bytes left out
function Capture:result()
  local head = table.concat(self.head)
  if self.total <= self.limit then
    return head .. table.concat(self.tail), false, 0
  end
  head = trim_end(head)
  local tail = trim_start(table.concat(self.tail):sub(-math.floor(self.limit / 2)))
  local dropped = self.total - #head - #tail
  local sep_before = head:sub(-1) == "\n" and "" or "\n"
  local marker = string.format("%s[... %d bytes left out ...]\n", sep_before, dropped)
  return head .. marker .. tail, true, dropped
end

return M
