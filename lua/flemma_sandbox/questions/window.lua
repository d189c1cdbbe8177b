--- The window that shows an approval question. It never takes focus: it
--- opens beside whatever the user is doing, and keys typed elsewhere never
--- reach it. The user answers with :FlemmaSandbox approve | approve-always
--- | deny (or their <Plug> mappings), or goes to the window
--- (:FlemmaSandbox approval, or CTRL-W w) and presses a (approve once),
--- A (always, where offered), d (deny), or <CR> on a choice. Those keys
--- are the window's own: typed anywhere else they are text.
--- What it shows is exactly what runs (visible_text.lua): invisible and
--- reordering characters as <U+XXXX>, long runs of spaces counted, and a
--- command too long for the screen cut in the middle, never at its end.
local place = require("flemma_sandbox.questions.place")
local visible_text = require("flemma_sandbox.base.visible_text")

local M = {}

--- Keys that would change text, or fail for want of a search: mapped to
--- nothing in the window, so no key typed there raises an error (E21
--- 'modifiable' is off, E35 no previous regular expression).
local INERT = vim.split(
  "i I a A o O s S c C cc x X d D dd p P r R u U J gJ . ~ < > = <C-r> <C-a> <C-x> <Del> gi gI n N",
  " ",
  { plain = true }
)

---@class flemma_sandbox.QuestionView
---@field buf integer
---@field win integer
---@field choices table<integer, string> 1-based line -> answer

--- The choices offered, by line label.
local function choices(can_remember)
  local out = { { "  > approve once", "once" } }
  if can_remember then
    out[#out + 1] = { "  > approve always (this session)", "always" }
  end
  out[#out + 1] = { "  > deny", "deny" }
  return out
end

--- Screen rows a line takes in a window `width` cells wide, wrapped.
local function rows_of(line, width)
  return math.max(1, math.ceil(vim.fn.strdisplaywidth(line) / width))
end

--- line cut into pieces of at most width display cells.
---@param line string
---@param width integer
---@return string[]
local function wrap(line, width)
  local out, n, at = {}, vim.fn.strchars(line), 0
  while at < n or #out == 0 do
    local take = math.min(width, n - at)
    -- wide characters: fewer of them fill the width
    while take > 1 and vim.fn.strdisplaywidth(vim.fn.strcharpart(line, at, take)) > width do
      take = take - 1
    end
    out[#out + 1] = vim.fn.strcharpart(line, at, math.max(take, 1))
    at = at + math.max(take, 1)
    if n == 0 then
      break
    end
  end
  return out
end

--- Rows the lines take in a window `width` wide.
local function rows_in(lines, width)
  local n = 0
  for _, l in ipairs(lines) do
    n = n + rows_of(l, width)
  end
  return n
end

--- The question's own lines, one block per given line (a command, its
--- folder, its network ...), cut to max_rows of a window `width` wide:
--- the biggest blocks first, each to its start and its end around the
--- count of hidden lines (never fewer than 3 rows), so that the short
--- lines beside a long command, and the command's end, stay on screen.
---@param blocks string[][]
---@param max_rows integer
---@param width integer
---@return string[]
local function fit_blocks(blocks, max_rows, width)
  local sizes, total, order = {}, 0, {}
  for i, b in ipairs(blocks) do
    sizes[i] = rows_in(b, width)
    total = total + sizes[i]
    order[i] = i
  end
  table.sort(order, function(a, b)
    return sizes[a] > sizes[b]
  end)
  for _, i in ipairs(order) do
    if total <= max_rows or sizes[i] <= 3 then -- fits, or nothing left to cut
      break
    end
    local keep = math.max(3, sizes[i] - (total - max_rows))
    -- cut in rows, so that even one long line keeps its end on screen
    local wrapped = {}
    for _, l in ipairs(blocks[i]) do
      vim.list_extend(wrapped, wrap(l, width))
    end
    blocks[i] = visible_text.fit(wrapped, keep)
    total = total - sizes[i] + #blocks[i]
  end
  local out = {}
  for _, b in ipairs(blocks) do
    vim.list_extend(out, b)
  end
  return out
end

--- The lines of a question: every given line split at its newlines and
--- shown by visible_text; with max_rows, the question's own lines are cut
--- to fit that many rows of a window `width` wide (fit_blocks), so the
--- choices below stay on screen. `compact` (for a screen with little
--- room) leaves out the blank lines, the call's id and the line that
--- names the commands.
---@param question flemma_sandbox.Question
---@param position string|nil e.g. "question 1 of 3"
---@param max_rows? integer
---@param width? integer
---@param compact? boolean
---@return string[] lines, table<integer, string> choices by line, integer around lines not the question's own
function M.lines(question, position, max_rows, width, compact)
  local head = "flemma-sandbox: " .. visible_text.line(tostring(question.title))
  local out = { head }
  local about = {}
  if question.id and not compact then
    about[#about + 1] = "call " .. question.id
  end
  if position then
    about[#about + 1] = position
  end
  if #about > 0 then
    out[#out + 1] = table.concat(about, " | ")
  end
  if not compact then
    out[#out + 1] = ""
  end
  local blocks, marked = {}, false
  for _, line in ipairs(question.lines or {}) do
    local parts, m = visible_text.lines(tostring(line))
    marked = marked or m
    blocks[#blocks + 1] = parts
  end
  if marked then
    blocks[#blocks + 1] = { "(<U+XXXX>, <0xNN> and <N spaces> stand for what the text holds there)" }
  end
  local body = fit_blocks(blocks, max_rows or math.huge, width or vim.o.columns)
  local body_count = #body
  vim.list_extend(out, body)
  if not compact then
    out[#out + 1] = ""
    out[#out + 1] = "Answer with :FlemmaSandbox approve"
      .. (question.can_remember and " | approve-always" or "")
      .. " | deny,"
  end
  out[#out + 1] = (compact and "answer here" or "or here")
    .. " (:FlemmaSandbox approval): a approve once"
    .. (question.can_remember and ", A always" or "")
    .. ", d deny, <CR> on a choice:"
  local by_line = {}
  for _, choice in ipairs(choices(question.can_remember)) do
    out[#out + 1] = choice[1]
    by_line[#out] = choice[2]
  end
  return out, by_line, #out - body_count
end

--- The window's size for lines on this screen: as wide as the longest line
--- allows (at most the screen less the border), as tall as the wrapped
--- lines (at most max_height, or the screen less the border and the
--- command line).
---@param lines string[]
---@param max_height? integer
---@return integer width, integer height
function M.size(lines, max_height)
  local width = 40
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.max(1, math.min(width, vim.o.columns - 2))
  local height = 0
  for _, l in ipairs(lines) do
    height = height + rows_of(l, width)
  end
  max_height = math.min(max_height or math.huge, vim.o.lines - vim.o.cmdheight - 3)
  return width, math.max(1, math.min(height, max_height))
end

--- Opens the question without entering it.
---@param question flemma_sandbox.Question
---@param position string|nil
---@param on_choice fun(answer: string) called for <CR> on a choice
---@return flemma_sandbox.QuestionView
function M.open(question, position, on_choice)
  local whole = M.lines(question, position)
  local fit_width, fit_height = M.size(whole)
  -- beside the call it asks about, never over it (questions/place.lua)
  local row, rows = place.place(fit_height + 2, place.call_rows(question.bufnr, question.id))
  -- the least the question can show: every block cut to its start and end
  local least, _, around = M.lines(question, position, 1, fit_width)
  local compact = select(2, M.size(least)) + 2 > rows
  if compact then
    _, _, around = M.lines(question, position, 1, fit_width, true)
  end
  -- the rows the window has, less the border and the lines around the question's own
  local room = rows - 2 - around
  local lines, by_line = M.lines(question, position, math.max(1, room), fit_width, compact)
  local width, height = M.size(lines)
  if height + 2 > rows then
    -- not even that fits beside the call: the window keeps the choices
    -- and the command's end on screen, over the call's rows if it must
    row = math.max(0, math.min(row, vim.o.lines - vim.o.cmdheight - height - 2))
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "flemma_sandbox_question"
  local win = vim.api.nvim_open_win(buf, false, {
    relative = "editor",
    width = width,
    height = height,
    row = row,
    col = math.max(0, vim.o.columns - width - 2),
    style = "minimal",
    border = "rounded",
    focusable = true,
    zindex = 60,
  })
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = false
  local opts = { buffer = buf, nowait = true, silent = true }
  for _, key in ipairs(INERT) do
    vim.keymap.set("n", key, "<Nop>", opts)
  end
  vim.keymap.set("n", "<CR>", function()
    local answer = by_line[vim.api.nvim_win_get_cursor(0)[1]]
    if answer then
      on_choice(answer)
    else
      vim.notify("flemma-sandbox: put the cursor on a choice (approve once, ..., deny), then press <CR>")
    end
  end, opts)
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, "<Cmd>wincmd p<CR>", opts)
  end
  -- the window's own answer keys (after INERT, which maps a, A and d to nothing)
  local keys = { a = "once", d = "deny" }
  if question.can_remember then
    keys.A = "always"
  end
  for key, answer in pairs(keys) do
    vim.keymap.set("n", key, function()
      on_choice(answer)
    end, opts)
  end
  return { buf = buf, win = win, choices = by_line }
end

--- Moves the cursor into the window, onto its first choice.
---@param view flemma_sandbox.QuestionView
function M.focus(view)
  if not vim.api.nvim_win_is_valid(view.win) then
    return
  end
  vim.api.nvim_set_current_win(view.win)
  local first
  for line in pairs(view.choices) do
    first = math.min(first or line, line)
  end
  pcall(vim.api.nvim_win_set_cursor, view.win, { first or 1, 0 })
end

---@param view flemma_sandbox.QuestionView
function M.close(view)
  if vim.api.nvim_get_current_win() == view.win then
    pcall(vim.cmd, "wincmd p") -- answered from inside: back where the user was
  end
  if vim.api.nvim_win_is_valid(view.win) then
    vim.api.nvim_win_close(view.win, true)
  end
end

return M
