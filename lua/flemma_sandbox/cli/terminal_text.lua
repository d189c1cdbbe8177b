--- Text from a sandbox's copy as the command line prints it to a
--- terminal: its control characters shown, not run, as `less` shows them
--- without -R, so a file cannot write to the user's clipboard (OSC 52),
--- move the cursor over what was printed or make the terminal answer as
--- if the user typed. A C0 control but tab and newline (and DEL) becomes
--- caret notation ("^[" for ESC, "^M" for CR, "^?" for DEL), an 8-bit
--- control written in UTF-8 becomes "<U+009B>", a byte that is not UTF-8
--- "<9B>". Into a pipe or a file the bytes go as they are. Pure Lua.
local M = {}

--- A byte that is not printed as it is (tab and newline are).
local SPECIAL = "[%z\1-\8\11-\31\127-\255]"

--- The length of the UTF-8 character at i of s, or nil when it is not one.
---@param s string
---@param i integer
---@return integer|nil
local function utf8_length(s, i)
  local b = s:byte(i)
  local n = b >= 0xF0 and b <= 0xF4 and 4 or b >= 0xE0 and b <= 0xEF and 3 or b >= 0xC2 and b <= 0xDF and 2 or nil
  if not n then
    return nil
  end
  for k = i + 1, i + n - 1 do
    local c = s:byte(k)
    if not c or c < 0x80 or c > 0xBF then
      return nil
    end
  end
  return n
end

--- text with every control shown (see the module's comment).
---@param text string
---@return string
function M.escape(text)
  if not text:find(SPECIAL) then
    return text
  end
  local out, i = {}, 1
  while i <= #text do
    local at = text:find(SPECIAL, i)
    if not at then
      out[#out + 1] = text:sub(i)
      break
    end
    out[#out + 1] = text:sub(i, at - 1)
    local b = text:byte(at)
    local n = b >= 0x80 and utf8_length(text, at) or nil
    if b < 0x20 then
      out[#out + 1] = "^" .. string.char(b + 64)
      n = 1
    elseif b == 0x7F then
      out[#out + 1] = "^?"
      n = 1
    elseif not n then
      out[#out + 1] = string.format("<%02X>", b)
      n = 1
    elseif b == 0xC2 and text:byte(at + 1) <= 0x9F then
      out[#out + 1] = string.format("<U+%04X>", text:byte(at + 1))
    else
      out[#out + 1] = text:sub(at, at + n - 1)
    end
    i = at + n
  end
  return table.concat(out)
end

--- What to write to descriptor fd: text escaped when fd is a terminal.
---@param fd integer
---@param text string
---@return string
function M.for_fd(fd, text)
  local uv = require("flemma_sandbox.base.process").uv()
  if uv and uv.guess_handle(fd) == "tty" then
    return M.escape(text)
  end
  return text
end

return M
