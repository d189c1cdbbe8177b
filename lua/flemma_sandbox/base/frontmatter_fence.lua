--- Where a chat's frontmatter is: the one reader that trust, the standalone
--- config layer and the chat parser share, so the text a user trusts is
--- byte for byte the text that is applied. Flemma's rule (its parser): the
--- first line opens a fence with a language ("```lua", "```json"), the
--- first line after it that is only "```" closes it; without a closing
--- fence there is no frontmatter, and the whole buffer is the chat.
local M = {}

---@class flemma_sandbox.FrontmatterBlock
---@field language string the fence's language ("lua", ...)
---@field text string the lines between the fences, joined by "\n"
---@field last integer the line of the closing fence

--- The frontmatter of lines, or nil when they have none.
---@param lines string[]
---@return flemma_sandbox.FrontmatterBlock|nil
function M.find(lines)
  local language = lines[1] and lines[1]:match("^```(%w+)%s*$")
  if not language then
    return nil
  end
  for i = 2, #lines do
    if lines[i]:match("^```%s*$") then
      return { language = language, text = table.concat(lines, "\n", 2, i - 1), last = i }
    end
  end
  return nil
end

--- Lines read from a buffer at a time while looking for the closing fence.
M.STEP = 256

--- The frontmatter of a buffer, read in steps so that a long chat without
--- one costs a line, and one with one only its own lines.
---@param bufnr integer
---@return flemma_sandbox.FrontmatterBlock|nil
function M.of_buffer(bufnr)
  local first = vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1]
  if not first or not first:match("^```%w+%s*$") then
    return nil
  end
  local lines, total = { first }, vim.api.nvim_buf_line_count(bufnr)
  while #lines < total do
    local more = vim.api.nvim_buf_get_lines(bufnr, #lines, math.min(total, #lines + M.STEP), false)
    for _, line in ipairs(more) do
      lines[#lines + 1] = line
      if line:match("^```%s*$") then
        return M.find(lines)
      end
    end
  end
  return nil
end

return M
