--- Where the question window goes: at the top right, unless the tool call
--- it asks about is on screen there; then above or below the call, in the
--- larger free part of the screen, and never over the call's first line.
local M = {}

--- Rows a question window needs at least (border, title, a line, choices).
M.MIN_ROWS = 8

--- The screen rows (1-based, first and last) of the tool use `id` in the
--- windows of this tab that show bufnr, or nil when none shows it: its
--- "**Tool Use:**" line down to the end of its input block.
---@param bufnr integer
---@param id string
---@return { top: integer, bottom: integer, head: integer }|nil
function M.call_rows(bufnr, id)
  if not (bufnr and id and vim.api.nvim_buf_is_valid(bufnr)) then
    return nil
  end
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local first
  for i, line in ipairs(lines) do
    if line:find("**Tool Use:**", 1, true) and line:find("`" .. id .. "`", 1, true) then
      first = i
      break
    end
  end
  if not first then
    return nil
  end
  -- the input's fence: the first fence line after the header, and the
  -- next line that is exactly that fence closes it
  local last, fence = first, nil
  for i = first + 1, #lines do
    local ticks = lines[i]:match("^(```+)")
    if not fence and ticks then
      fence = ticks
    elseif fence and lines[i] == fence then
      last = i
      break
    end
  end
  local rows
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == bufnr and vim.api.nvim_win_get_config(win).relative == "" then
      local head = vim.fn.screenpos(win, first, 1).row
      local tail = 0
      -- the last shown line of the call: its last screen row
      for lnum = last, first, -1 do
        tail = vim.fn.screenpos(win, lnum, math.max(1, #lines[lnum])).row
        if tail > 0 then
          break
        end
      end
      local info = vim.fn.getwininfo(win)[1]
      local top = head > 0 and head or info.winrow
      if tail > 0 then
        rows = rows or { top = top, bottom = tail, head = head }
        rows.top, rows.bottom = math.min(rows.top, top), math.max(rows.bottom, tail)
      end
    end
  end
  return rows
end

--- The window's row (0-based, for nvim_open_win) and the rows it may take
--- (border included), given the rows the call takes on screen.
---@param need integer rows the window wants, border included
---@param call { top: integer, bottom: integer, head: integer }|nil
---@return integer row, integer rows
function M.place(need, call)
  local screen = vim.o.lines - vim.o.cmdheight
  if not call then
    return 0, screen - 1
  end
  local above = call.top - 1 -- rows 1 .. top-1
  local below = screen - call.bottom -- rows bottom+1 .. screen
  if need <= above then
    return 0, above
  end
  if need <= below then
    return call.bottom, below
  end
  if math.max(above, below) >= M.MIN_ROWS then
    if above >= below then
      return 0, above
    end
    return call.bottom, below
  end
  -- the call fills the screen: keep its first line (which call) in view
  if call.head > 0 and call.head - 1 >= screen - call.head then
    return 0, math.max(M.MIN_ROWS, call.head - 1)
  end
  local from = call.head > 0 and call.head or 0
  return from, math.max(M.MIN_ROWS, screen - from)
end

return M
