-- Standalone mode against the real Flemma (FLEMMA_DIR): our reading of a
-- chat is Flemma's parser's, and the results we write land byte for byte
-- where Flemma's own injector puts them, so a chat moves between the two
-- unchanged.
local fixture = require("support.chat_fixture")
local format = require("flemma_sandbox.chat.format")

--- Flemma's view of a chat: tool uses (in order) and tool results.
local function flemma_view(lines)
  local doc = require("flemma.parser").parse_lines(lines)
  local uses, results = {}, {}
  for _, msg in ipairs(doc.messages) do
    for _, seg in ipairs(msg.segments) do
      if seg.kind == "tool_use" then
        uses[#uses + 1] = seg.id
      elseif seg.kind == "tool_result" then
        results[#results + 1] = { id = seg.tool_use_id, status = seg.status or "none", content = seg.content }
      end
    end
  end
  return uses, results
end

local function our_view(lines)
  local doc = format.parse(lines)
  local uses, results = {}, {}
  for _, use in ipairs(doc.uses) do
    uses[#uses + 1] = use.id
  end
  local by_line = {}
  for _, r in pairs(doc.results) do
    by_line[#by_line + 1] = r
  end
  table.sort(by_line, function(a, b)
    return a.line < b.line
  end)
  for _, r in ipairs(by_line) do
    results[#results + 1] = { id = r.id, status = r.status or "none", content = r.content }
  end
  return uses, results
end

local function scratch(lines)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  return buf
end

describe("Flemma's chat format, against Flemma's own parser and injector", function()
  before_each(function()
    require("flemma").setup({ lsp = { enabled = false } })
  end)

  it("finds the same tool uses and results as Flemma", function()
    local lines = fixture.lines()
    local f_uses, f_results = flemma_view(lines)
    local o_uses, o_results = our_view(lines)
    assert.are.same(f_uses, o_uses)
    assert.are.same(f_results, o_results)
    assert.are.equal(#fixture.USES, #o_uses)
  end)

  it("writes results where Flemma's injector writes them, in call order, whatever order they end in", function()
    local runs = {}
    for _, u in ipairs(fixture.USES) do
      if u.runs then
        table.insert(runs, 1, u.id) -- the last call ends first
      end
    end
    local injector = require("flemma.tools.injector")
    local theirs = scratch(fixture.lines())
    local ours = scratch(fixture.lines())
    for _, id in ipairs(runs) do
      local output = "output of " .. id .. "\n```\nwith a fence"
      assert(injector.inject_result(theirs, id, { success = true, output = output }))
      local lines = vim.api.nvim_buf_get_lines(ours, 0, -1, false)
      local doc = format.parse(lines)
      local use
      for _, u in ipairs(doc.uses) do
        if u.id == id then
          use = u
        end
      end
      local first, last, new = format.placement(doc, lines, use, format.result_block(id, output, false))
      vim.api.nvim_buf_set_lines(ours, first, last, false, new)
    end
    assert.are.same(vim.api.nvim_buf_get_lines(theirs, 0, -1, false), vim.api.nvim_buf_get_lines(ours, 0, -1, false))
    -- and a failure is marked as Flemma marks it
    local failed = scratch({ "@Assistant:", "**Tool Use:** `bash` (`e1`)", "```json", "{}", "```" })
    local ours_failed = scratch(vim.api.nvim_buf_get_lines(failed, 0, -1, false))
    assert(injector.inject_result(failed, "e1", { success = false, error = "boom" }))
    local lines = vim.api.nvim_buf_get_lines(ours_failed, 0, -1, false)
    local doc = format.parse(lines)
    local first, last, new = format.placement(doc, lines, doc.uses[1], format.result_block("e1", "boom", true))
    vim.api.nvim_buf_set_lines(ours_failed, first, last, false, new)
    assert.are.same(
      vim.api.nvim_buf_get_lines(failed, 0, -1, false),
      vim.api.nvim_buf_get_lines(ours_failed, 0, -1, false)
    )
  end)
end)
