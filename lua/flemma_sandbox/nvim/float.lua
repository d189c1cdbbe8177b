--- A small read-only floating window with text, for status and questions.
local M = {}

---@param lines string[]
---@param row? integer screen row; default: centred
---@return integer buf, integer win
function M.open(lines, row)
  local buf = vim.api.nvim_create_buf(false, true)
  -- the list part only: a caller's fields (status's details_from) are no lines
  local text = {}
  for i, l in ipairs(lines) do
    text[i] = l
  end
  lines = text
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local width = 30
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l) + 2)
  end
  width = math.min(width, vim.o.columns - 4)
  -- a line wider than the window wraps: it takes more than one row
  local rows = 0
  for _, l in ipairs(lines) do
    rows = rows + math.max(1, math.ceil(vim.fn.strdisplaywidth(l) / width))
  end
  local height = math.min(rows, vim.o.lines - 4)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = row or math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    style = "minimal",
    border = "rounded",
  })
  return buf, win
end

return M
