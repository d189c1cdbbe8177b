--- The question window keeps clear of the tool call it asks about: above
--- or below the call's rows on screen, whichever has room.
local place = require("flemma_sandbox.questions.place")
local window = require("flemma_sandbox.questions.window")

describe("the question window's place", function()
  local buf, view
  before_each(function()
    vim.cmd("silent! only")
    buf = vim.api.nvim_create_buf(true, false)
    vim.api.nvim_set_current_buf(buf)
    local lines = {}
    for i = 1, 200 do
      lines[i] = "filler " .. i
    end
    -- the call at lines 41 to 45
    lines[41] = "**Tool Use:** `bash` (`toolu_place`)"
    lines[42] = "```json"
    lines[43] = '{"command":"rm -rf build"}'
    lines[44] = "```"
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  end)
  after_each(function()
    if view then
      window.close(view)
      view = nil
    end
    vim.cmd("silent! bwipeout! " .. buf)
  end)

  --- Opens a question about the call with the call's line at screen row `at`.
  local function open_with_call_at(at, bufnr)
    vim.api.nvim_win_set_cursor(0, { 41, 0 })
    vim.cmd("normal! zt")
    -- scroll so that line 41 is at screen row `at` (1-based)
    vim.fn.winrestview({ topline = 41 - (at - 1) })
    vim.cmd("redraw")
    local body = {}
    for i = 1, 6 do
      body[i] = "question line " .. i
    end
    view = window.open(
      { title = "Allow this bash call?", lines = body, id = "toolu_place", bufnr = bufnr },
      nil,
      function() end
    )
    local cfg = vim.api.nvim_win_get_config(view.win)
    local row = type(cfg.row) == "table" and cfg.row[false] or cfg.row
    -- screen rows (1-based) the window takes, border included
    return row + 1, row + cfg.height + 2
  end

  it("finds the call's rows on screen", function()
    vim.fn.winrestview({ topline = 31, lnum = 41, col = 0 })
    vim.cmd("redraw")
    local rows = place.call_rows(buf, "toolu_place")
    assert.are.same({ top = 11, bottom = 14, head = 11 }, rows)
    assert.is_nil(place.call_rows(buf, "toolu_other"))
  end)

  it("goes below a call near the top and above a call near the bottom", function()
    local first, last = open_with_call_at(3, buf)
    assert.is_true(first > 6, "window at rows " .. first .. "-" .. last .. " covers the call at 3-6")
    window.close(view)
    first, last = open_with_call_at(15, buf)
    assert.is_true(last < 15, "window at rows " .. first .. "-" .. last .. " covers the call at 15-18")
  end)

  it("control: not told which buffer holds the call, it opens at the top and covers it", function()
    local first, last = open_with_call_at(3, nil)
    assert.are.equal(1, first)
    assert.is_true(last >= 3, "rows " .. first .. "-" .. last)
  end)
end)
