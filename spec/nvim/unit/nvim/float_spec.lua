--- nvim/float.lua (run in Neovim): the rows a line takes in a window that
--- wraps between words are counted, never fewer than Neovim shows (here
--- measured in a real window with the same options); the float holds the
--- lines, read-only, sized to them and within the editor.
local float = require("flemma_sandbox.nvim.float")

--- The rows Neovim shows `line` on in a window `width` cells wide set up
--- as float.wrap_words sets one.
local function shown_rows(line, width)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { line, "" })
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = 20,
    row = 0,
    col = 0,
    style = "minimal",
  })
  float.wrap_words(win)
  -- the second line's first screen row, less the first line's
  vim.api.nvim_win_set_cursor(win, { 2, 0 })
  local rows = vim.fn.winline() - 1
  vim.api.nvim_win_close(win, true)
  vim.api.nvim_buf_delete(buf, { force = true })
  return rows
end

describe("nvim.float", function()
  local saved_columns, saved_lines

  before_each(function()
    saved_columns, saved_lines = vim.o.columns, vim.o.lines
    vim.o.columns, vim.o.lines = 120, 40
  end)

  after_each(function()
    vim.o.columns, vim.o.lines = saved_columns, saved_lines
  end)

  describe("rows", function()
    it("counts one row for a line that fits, and for an empty one", function()
      assert.are.equal(1, float.rows("a short line", 40))
      assert.are.equal(1, float.rows("", 40))
      assert.are.equal(1, float.rows(string.rep("x", 40), 40))
    end)

    it("counts the rows Neovim shows for lines of words, never fewer", function()
      local lines = {
        "the policy a run of this chat gets, and where each of its keys comes from in the config",
        "  an indented line that is long enough to wrap twice in a narrow window of thirty cells",
        "supercalifragilisticexpialidocious-and-then-some-more-text-without-any-space-in-it at all",
        "wide: 日本語のテキストは二つのセルを使います 日本語のテキストは二つのセルを使います",
        "    deep indent: " .. string.rep("word ", 30),
      }
      for _, width in ipairs({ 30, 41, 60 }) do
        for _, line in ipairs(lines) do
          local shown = shown_rows(line, width)
          local counted = float.rows(line, width)
          assert.is_true(
            counted >= shown,
            string.format("%d cells: %q counted %d, shown %d", width, line, counted, shown)
          )
          assert.is_true(
            counted <= shown + 1,
            string.format("%d cells: %q counted %d, shown %d", width, line, counted, shown)
          )
        end
      end
    end)

    it("cuts a word wider than a row over as many rows as it takes", function()
      assert.are.equal(3, float.rows(string.rep("x", 70), 30))
      assert.are.equal(shown_rows(string.rep("x", 70), 30), float.rows(string.rep("x", 70), 30))
    end)
  end)

  describe("open", function()
    local buf, win

    after_each(function()
      if win and vim.api.nvim_win_is_valid(win) then
        vim.api.nvim_win_close(win, true)
      end
    end)

    it("shows the lines read-only in a float sized to them, wiped when hidden", function()
      buf, win = float.open({ "first", "a second, longer line of text" })
      assert.are.same({ "first", "a second, longer line of text" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
      assert.is_false(vim.bo[buf].modifiable)
      assert.are.equal("wipe", vim.bo[buf].bufhidden)
      local cfg = vim.api.nvim_win_get_config(win)
      assert.are.equal("editor", cfg.relative)
      assert.are.equal(31, cfg.width) -- the longest line and 2
      assert.are.equal(2, cfg.height)
      assert.are.equal(win, vim.api.nvim_get_current_win())
      assert.is_true(vim.wo[win].wrap and vim.wo[win].linebreak)
    end)

    it("is 30 wide at least, within the editor, its height the wrapped rows", function()
      buf, win = float.open({ "x" })
      assert.are.equal(30, vim.api.nvim_win_get_config(win).width)
      vim.api.nvim_win_close(win, true)
      local long = string.rep("word ", 60)
      buf, win = float.open({ long }, 3)
      local cfg = vim.api.nvim_win_get_config(win)
      assert.are.equal(vim.o.columns - 4, cfg.width)
      assert.are.equal(float.rows(long, cfg.width), cfg.height)
      local row = type(cfg.row) == "table" and cfg.row[false] or cfg.row
      assert.are.equal(3, row)
    end)

    it("is never taller than the editor", function()
      local many = {}
      for i = 1, 100 do
        many[i] = "line " .. i
      end
      buf, win = float.open(many)
      assert.are.equal(vim.o.lines - 4, vim.api.nvim_win_get_config(win).height)
    end)

    it("shows the list part of the lines only", function()
      local lines = { "one", "two", details_from = 2 }
      buf, win = float.open(lines)
      assert.are.same({ "one", "two" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
      assert.are.equal(2, lines.details_from, "the caller's table is left as it was")
    end)
  end)
end)
