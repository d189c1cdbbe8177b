--- Flemma's chat format, read and written by its rules, so a .chat moves
--- between Flemma and flemma-sandbox unchanged:
---   * an optional frontmatter fence on the first line ("```lua" ... "```");
---   * messages open with a role line alone ("@You:", "@Assistant:", ...);
---     a role line inside a fence (3+ backticks) does not end a message;
---   * tool uses only in @Assistant: messages, outside <thinking> blocks:
---     "**Tool Use:** `name` (`id`)", blank lines, a fence with the JSON;
---   * tool results only in @You: messages: "**Tool Result:** `id`", an
---     optional "(status ...)" suffix, blank lines, a fence with the text.
---     A status of pending, approved, rejected, denied or aborted marks a
---     placeholder; none (or "error") a finished result.
--- Lines are a 1-based list; every line number here is 1-based.
local frontmatter_fence = require("flemma_sandbox.base.frontmatter_fence")

local M = {}

local ROLE = "^@([%w]+):%s*$"
local TOOL_USE = "^%*%*Tool Use:%*%*%s*`([^`]+)`%s*%(`([^)]+)`%)"
local TOOL_RESULT = "^%*%*Tool Result:%*%*%s*`([^`]+)`(.*)$"
local SUFFIX = "^%s*%((.*)%)%s*$"

--- Statuses a result header may carry, and the spellings Flemma accepts.
local STATUS = {
  pending = "pending",
  approved = "approved",
  rejected = "rejected",
  denied = "denied",
  aborted = "aborted",
  error = "error",
  reject = "rejected",
  deny = "denied",
}

---@class flemma_sandbox.ChatMessage
---@field role string
---@field line integer the role line
---@field last integer the line before the next message (blank lines included)

---@class flemma_sandbox.ChatToolUse
---@field name string
---@field id string
---@field line integer the **Tool Use:** line
---@field last integer the closing fence of its input
---@field input_text string
---@field language string|nil the fence's language tag
---@field message integer index of its message

---@class flemma_sandbox.ChatToolResult
---@field id string
---@field line integer the **Tool Result:** line
---@field last integer its closing fence
---@field status string|nil nil for a finished result; "error", or a placeholder status
---@field content string the text inside its fence
---@field message integer

---@class flemma_sandbox.ChatDocument
---@field messages flemma_sandbox.ChatMessage[]
---@field uses flemma_sandbox.ChatToolUse[] in buffer order
---@field results table<string, flemma_sandbox.ChatToolResult> the first result for each id
---@field skipped { id: string, line: integer, why: string }[] tool uses Flemma would not see

--- The status a header suffix names: `status=X` first, else the first word
--- that is a status.
---@param rest string what follows the id on the header line
---@return string|nil
function M.status_of(rest)
  local inner = rest and rest:match(SUFFIX)
  if not inner then
    return nil
  end
  local positional
  for word in inner:gmatch("[^%s,]+") do
    local key, value = word:match("^([%w_]+)=[\"']?([^\"']*)[\"']?$")
    if key == "status" and STATUS[value] then
      return STATUS[value]
    elseif not key and not positional and STATUS[word] then
      positional = STATUS[word]
    end
  end
  return positional
end

--- A fenced block opening at line i (any run of backticks): its content and
--- the line of its closing fence (at most `last`), or nil.
---@return string|nil content, integer|nil close, string|nil language
function M.fenced_block(lines, i, last)
  local fence, lang = (lines[i] or ""):match("^(`+)([%w:._%-]*)")
  if not fence then
    return nil
  end
  for j = i + 1, last or #lines do
    local close = lines[j]:match("^(`+)%s*$")
    if close and #close >= #fence then
      return table.concat(lines, "\n", i + 1, j - 1), j, lang ~= "" and lang or nil
    end
  end
end

local function skip_blank(lines, i, last)
  while i <= last and lines[i]:match("^%s*$") do
    i = i + 1
  end
  return i
end

--- The fenced block after a header at line i (blank lines between), as
--- Flemma reads it: its content, closing line and language, and the line to
--- go on from; without one, why not (after an unclosed fence Flemma skips
--- to the end of the message).
---@return string|nil content, integer|nil close, string|nil language, integer next, string|nil why
local function block_after(lines, i, last)
  local at = skip_blank(lines, i + 1, last)
  local content, close, lang = M.fenced_block(lines, at, last)
  if close then
    return content, close, lang, close + 1
  elseif at <= last and lines[at]:match("^`+") then
    return nil, nil, nil, last + 1, "its fence is not closed"
  end
  return nil, nil, nil, at, "it has no fenced block"
end

--- The line that ends the message opened at `first` (the line before the
--- next role line outside a fence).
local function message_end(lines, first)
  local fence_len = 0
  local i = first + 1
  while i <= #lines do
    local line = lines[i]
    if fence_len > 0 then
      local close = line:match("^(`+)%s*$")
      if close and #close >= fence_len then
        fence_len = 0
      end
    else
      if line:match(ROLE) then
        break
      end
      local open = line:match("^(`+)")
      if open and #open >= 3 and not line:sub(#open + 1):find("`", 1, true) then
        fence_len = #open
      end
    end
    i = i + 1
  end
  return i - 1
end

--- Tool uses of an @Assistant: message (lines first+1 .. last).
local function read_uses(doc, lines, first, last, index)
  local i = first + 1
  while i <= last do
    local line = lines[i]
    local name, id = line:match(TOOL_USE)
    if line:match('^<thinking%s+%w+:signature="[^"]*"%s*/>$') then
      i = i + 1
    elseif
      line == "<thinking>"
      or line:match("^<thinking%s+redacted>$")
      or line:match('^<thinking%s+%w+:signature="[^"]*"%s*>$')
    then
      i = i + 1
      while i <= last and lines[i] ~= "</thinking>" do
        i = i + 1
      end
      i = i + 1
    elseif name then
      local content, close, lang, next_i, why = block_after(lines, i, last)
      if close and (lang == nil or lang == "json") then
        doc.uses[#doc.uses + 1] = {
          name = name,
          id = id,
          line = i,
          last = close,
          input_text = content,
          language = lang,
          message = index,
        }
      else
        doc.skipped[#doc.skipped + 1] = { id = id, line = i, why = why or "its input is not a json fence" }
      end
      i = next_i
    else
      i = i + 1
    end
  end
end

--- Tool results of an @You: message.
local function read_results(doc, lines, first, last, index)
  local i = first + 1
  while i <= last do
    local id, rest = lines[i]:match(TOOL_RESULT)
    if id then
      local content, close, _, next_i = block_after(lines, i, last)
      if close and not doc.results[id] then
        doc.results[id] =
          { id = id, line = i, last = close, status = M.status_of(rest), content = content, message = index }
      end
      i = next_i
    else
      i = i + 1
    end
  end
end

--- Reads a chat's messages, tool uses and tool results.
---@param lines string[]
---@return flemma_sandbox.ChatDocument
function M.parse(lines)
  local doc = { messages = {}, uses = {}, results = {}, skipped = {} }
  local block = frontmatter_fence.find(lines)
  local i = block and block.last + 1 or 1
  while i <= #lines do
    local role = lines[i]:match(ROLE)
    if role then
      local last = message_end(lines, i)
      local index = #doc.messages + 1
      doc.messages[index] = { role = role, line = i, last = last }
      if role == "Assistant" then
        read_uses(doc, lines, i, last, index)
      elseif role == "You" then
        read_results(doc, lines, i, last, index)
      end
      i = last + 1
    else
      i = i + 1
    end
  end
  return doc
end

--- The fence for a text: one backtick longer than its longest run, at least 3.
---@param text string
---@return string
function M.fence_for(text)
  local longest = 0
  for run in text:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  return string.rep("`", math.max(3, longest + 1))
end

--- The header and fenced body of a finished result.
---@param id string
---@param body string
---@param is_error boolean
---@return string[]
function M.result_block(id, body, is_error)
  local fence = M.fence_for(body)
  local out = { "**Tool Result:** `" .. id .. "`" .. (is_error and " (error)" or ""), "", fence }
  vim.list_extend(out, vim.split(body, "\n", { plain = true }))
  out[#out + 1] = fence
  return out
end

--- Where a result for `use` goes and what to write, as Flemma places it:
--- a placeholder for the id is replaced; otherwise the block goes into the
--- @You: message after the use's message, in the order of the uses (after
--- the result of the nearest earlier use, or before the first result), or
--- into a new @You: message.
---@param doc flemma_sandbox.ChatDocument
---@param lines string[]
---@param use flemma_sandbox.ChatToolUse
---@param block string[] from result_block
---@return integer first, integer last_excl 0-based range to replace, string[] new lines
function M.placement(doc, lines, use, block)
  local existing = doc.results[use.id]
  if existing then
    return existing.line - 1, existing.last, block
  end
  local order, rank = {}, 0
  for _, u in ipairs(doc.uses) do
    if u.message == use.message then
      rank = rank + 1
      order[u.id] = rank
    end
  end
  local mine = order[use.id]
  local you = doc.messages[use.message + 1]
  local message_end_line = doc.messages[use.message].last
  if not (you and you.role == "You") then
    local out = { "", "@You:", "" }
    vim.list_extend(out, block)
    return message_end_line, message_end_line, out
  end
  local here = {}
  for _, r in pairs(doc.results) do
    if r.message == use.message + 1 then
      here[#here + 1] = r
    end
  end
  table.sort(here, function(a, b)
    return a.line < b.line
  end)
  if #here > 0 then
    local before, before_rank = nil, -1
    for _, r in ipairs(here) do
      local r_rank = order[r.id] or 0
      if r_rank < mine and r_rank > before_rank then
        before, before_rank = r, r_rank
      end
    end
    if before then
      local out = { "" }
      vim.list_extend(out, block)
      return before.last, before.last, out
    end
    local out = vim.list_extend({}, block)
    out[#out + 1] = ""
    return here[1].line - 1, here[1].line - 1, out
  end
  local next_line = lines[you.line + 1]
  local out = { "" }
  vim.list_extend(out, block)
  if next_line and next_line:match("%S") then
    out[#out + 1] = ""
  end
  return you.line, you.line, out
end

return M
