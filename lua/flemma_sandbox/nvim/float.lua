--- A small read-only floating window with text, for status and questions.
local M = {}

--- Rows a line takes in a window `width` cells wide that wraps between
--- words ('linebreak'), continuation rows indented as the line
--- ('breakindent'). Breaks are counted at spaces only, so the count is
--- never short (Neovim may break at more characters).
---@param line string
---@param width integer
---@return integer
function M.rows(line, width)
  local indent = vim.fn.strdisplaywidth(line:match("^%s*"))
  local rest = width - indent
  if rest < 20 then
    rest = width -- Neovim drops an indent that leaves too little room
  end
  local rows, room, col = 1, width, 0
  for word, space in line:gmatch("(%S+)(%s*)") do
    local w = vim.fn.strdisplaywidth(word)
    if col > 0 and col + w > room then
      rows, room, col = rows + 1, rest, 0
    end
    while w > room do -- a word wider than a row is cut
      rows, room, w = rows + 1, rest, w - room
    end
    col = col + w + vim.fn.strdisplaywidth(space)
  end
  return rows
end

--- Sets a window to wrap between words, as M.rows counts.
---@param win integer
function M.wrap_words(win)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  if vim.fn.exists("+breakindent") == 1 then
    vim.wo[win].breakindent = true
  end
end

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
  -- a line wider than the window wraps between words: more than one row
  local rows = 0
  for _, l in ipairs(lines) do
    rows = rows + M.rows(l, width)
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
  M.wrap_words(win)
  return buf, win
end

return M
