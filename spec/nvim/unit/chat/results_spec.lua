--- chat/results.lua (run in Neovim): which tool uses of a chat run, how a
--- result reads (output, stderr, exit code, notes, errors), and writing it
--- where Flemma would, never over a result the user wrote meanwhile.
local results = require("flemma_sandbox.chat.results")
local n = require("support.nvim")

--- A chat with one tool use `id`, and what follows it.
local function chat(id, after)
  local lines = {
    "@You:",
    "go",
    "",
    "@Assistant:",
    "**Tool Use:** `bash` (`" .. id .. "`)",
    "",
    "```json",
    '{"command":"echo hi"}',
    "```",
  }
  vim.list_extend(lines, after or {})
  return lines
end

--- The plan of use `id` in lines.
local function plan_of(lines, id)
  local uses = results.parse(lines)
  for _, use in ipairs(uses) do
    if use.id == id then
      return use.action, use.why, use
    end
  end
end

describe("chat.results", function()
  describe("plan", function()
    it("asks for a use without a result, and for an empty pending placeholder", function()
      assert.are.equal("ask", (plan_of(chat("t1"), "t1")))
      local pending = chat("t1", { "", "@You:", "**Tool Result:** `t1` (pending)", "", "```", "```" })
      assert.are.equal("ask", (plan_of(pending, "t1")))
    end)

    it("runs an empty approved placeholder as approved", function()
      local lines = chat("t1", { "", "@You:", "**Tool Result:** `t1` (approved)", "", "```", "```" })
      assert.are.equal("approved", (plan_of(lines, "t1")))
    end)

    it("never runs a use with a result, or with text the user wrote, saying why", function()
      local cases = {
        { "", "it has a result", "done" },
        { " (error)", "it has a result", "boom" },
        { " (approved)", "its approved placeholder holds text the user wrote", "mine" },
        { " (pending)", "the user wrote its result", "pasted" },
        { " (rejected)", "it is rejected", "" },
      }
      for _, case in ipairs(cases) do
        local lines = chat("t1", { "", "@You:", "**Tool Result:** `t1`" .. case[1], "", "```", case[3], "```" })
        local action, why, use = plan_of(lines, "t1")
        assert.is_nil(action, case[1])
        assert.are.equal(case[2], why)
        assert.is_true(use.has_result)
      end
    end)

    it("gives each use its 0-based row", function()
      local _, _, use = plan_of(chat("t1"), "t1")
      assert.are.equal(4, use.row)
    end)
  end)

  describe("render", function()
    it("reads stdout, stderr and a failing exit code", function()
      assert.are.same(
        { "out\n[stderr]\nerr\n[exit code 3]", true },
        { results.render({ stdout = "out\n\n", stderr = "err\n", exit_code = 3 }) }
      )
    end)

    it("says (no output) for nothing, and a time-out is a failure", function()
      local body, failed = results.render({ stdout = "  \n", exit_code = 0 })
      assert.are.equal("(no output)", body)
      assert.is_falsy(failed)
      assert.are.same({ "(no output)", true }, { results.render({ timed_out = true }) })
    end)

    it("puts the notes last", function()
      local body, failed = results.render({ stdout = "x", notes = { "[sandbox] a", "[sandbox] b" } })
      assert.are.equal("x\n[sandbox] a\n[sandbox] b", body)
      assert.is_falsy(failed)
      assert.are.same({ "text\nnote", false }, { results.render({ content = "text", notes = { "note" } }) })
    end)

    it("reports an error without its trailing blanks, content as it is, success as ok", function()
      assert.are.same({ "no such file", true }, { results.render({ error = "no such file \n\n" }) })
      assert.are.same({ "a\n\n", false }, { results.render({ content = "a\n\n" }) })
      assert.are.same({ "ok", false }, { results.render({ success = true }) })
    end)
  end)

  describe("write_result", function()
    local bufnr, notes, restore

    before_each(function()
      bufnr = vim.api.nvim_create_buf(false, true)
      notes, restore = n.capture_notify()
    end)

    after_each(function()
      restore()
      vim.api.nvim_buf_delete(bufnr, { force = true })
    end)

    it("writes the result in a new @You: message, once", function()
      vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, chat("t1"))
      vim.bo[bufnr].modifiable = false
      assert.is_true(results.write_result(bufnr, "t1", { stdout = "hi\n", exit_code = 0 }))
      local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
      local text = table.concat(lines, "\n")
      assert.matches("\n@You:\n\n%*%*Tool Result:%*%* `t1`\n\n```\nhi\n```", text)
      assert.is_false(vim.bo[bufnr].modifiable, "modifiable as it was")
      assert.is_false(results.write_result(bufnr, "t1", { stdout = "again" }))
      assert.matches("t1 got a result meanwhile; this one was dropped", notes[1].msg)
      assert.are.same(lines, vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
    end)

    it("marks an error and fills a pending placeholder in place", function()
      vim.api.nvim_buf_set_lines(
        bufnr,
        0,
        -1,
        false,
        chat("t1", { "", "@You:", "**Tool Result:** `t1` (pending)", "", "```", "```", "", "thanks" })
      )
      assert.is_true(results.write_result(bufnr, "t1", { error = "refused: tool calls are off" }))
      local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
      assert.matches("%*%*Tool Result:%*%* `t1` %(error%)\n\n```\nrefused: tool calls are off\n```\n\nthanks$", text)
      assert.is_nil(text:find("(pending)", 1, true))
    end)

    it("drops a result whose use is gone, saying so, and does nothing for a closed buffer", function()
      vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, chat("t1"))
      assert.is_false(results.write_result(bufnr, "t9", { stdout = "x" }))
      assert.matches("the tool use t9 is gone; its result was dropped", notes[1].msg)
      assert.is_false(results.write_result(99999, "t1", { stdout = "x" }))
    end)

    it("folds a long result in a window with manual folds, from its opening fence to its closing one", function()
      vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, chat("t1"))
      vim.cmd("split")
      local win = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(win, bufnr)
      vim.wo[win].foldmethod = "manual"
      local out = {}
      for i = 1, results.fold_min_lines + 5 do
        out[i] = "line " .. i
      end
      assert.is_true(results.write_result(bufnr, "t1", { stdout = table.concat(out, "\n") }))
      local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
      local fence
      for i, line in ipairs(lines) do
        if line == "```" and lines[i + 1] == "line 1" then
          fence = i
        end
      end
      assert.is_truthy(fence)
      -- nvim_win_call returns one value
      local first = vim.api.nvim_win_call(win, function()
        return vim.fn.foldclosed(fence + 1)
      end)
      local last = vim.api.nvim_win_call(win, function()
        return vim.fn.foldclosedend(fence + 1)
      end)
      assert.are.equal(fence, first)
      assert.are.equal(#lines, last)
      vim.cmd("close")
    end)

    it("does not fold a short result", function()
      vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, chat("t1"))
      vim.cmd("split")
      local win = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(win, bufnr)
      vim.wo[win].foldmethod = "manual"
      results.write_result(bufnr, "t1", { stdout = "short" })
      local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
      local closed = vim.api.nvim_win_call(win, function()
        return vim.fn.foldclosed(#lines)
      end)
      assert.are.equal(-1, closed)
      vim.cmd("close")
    end)
  end)
end)
