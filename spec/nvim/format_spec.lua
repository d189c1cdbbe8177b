-- Flemma's chat format in standalone mode: what counts as a tool use or a
-- result (headers, roles, thinking, fences, placeholders), and where results
-- go when real calls run.
local h = require("support.helpers")
local n = require("support.nvim")
local fixture = require("support.chat_fixture")
local approval = require("flemma_sandbox.questions")
local chat = require("flemma_sandbox.chat")
local format = require("flemma_sandbox.chat.format")
local sandbox = require("flemma_sandbox")

local function wait_idle(bufnr, ms)
  assert.truthy(vim.wait(ms or 20000, function()
    return #chat.running(bufnr) == 0
  end, 20))
end

--- The result headers of a buffer, in order, as { id, status-suffix }.
local function result_headers(lines)
  local out = {}
  for _, line in ipairs(lines) do
    local id, rest = line:match("^%*%*Tool Result:%*%*%s*`([^`]+)`(.*)$")
    if id then
      out[#out + 1] = id .. rest
    end
  end
  return out
end

describe("Flemma's chat format", function()
  it("finds the tool uses Flemma finds, and no others", function()
    local doc = format.parse(fixture.lines())
    local ids = {}
    for _, use in ipairs(doc.uses) do
      ids[#ids + 1] = use.id
    end
    local want = {}
    for _, u in ipairs(fixture.USES) do
      want[#want + 1] = u.id
    end
    assert.are.same(want, ids, "not in @You:, not in <thinking>, headers without spaces count")
    assert.are.equal('{"path":"notes.md","label":"```"}', doc.uses[3].input_text, "a four-backtick fence")
    assert.are.same(
      { "System", "You", "Assistant", "You" },
      vim.tbl_map(function(m)
        return m.role
      end, doc.messages)
    )
  end)

  it("reads every placeholder status and the user's own result", function()
    local uses, doc = chat.parse(fixture.lines())
    local by_id = {}
    for _, use in ipairs(uses) do
      by_id[use.id] = use
    end
    assert.is_nil(doc.results.toolu_01)
    assert.are.equal("approved", doc.results.toolu_04.status)
    assert.are.equal("aborted", doc.results.toolu_07.status, "a header without spaces")
    assert.are.equal("pending", doc.results.toolu_09.status, "status=pending")
    assert.are.equal("what the user pasted", doc.results.toolu_09.content)
    for _, u in ipairs(fixture.USES) do
      assert.are.equal(u.runs, by_id[u.id].action ~= nil, u.id)
    end
    assert.are.equal("approved", by_id.toolu_04.action)
    assert.are.equal("ask", by_id.toolu_08.action)
  end)

  it("reads a role line inside a fence as text, and the status words Flemma accepts", function()
    local doc = format.parse({
      "@You:",
      "````",
      "@Assistant:",
      "````",
      "**Tool Result:** `x1` (deny)",
      "```",
      "```",
      "**Tool Result:** `x2` (error)",
      "```",
      "boom",
      "```",
    })
    assert.are.equal(1, #doc.messages)
    assert.are.equal("denied", doc.results.x1.status)
    assert.are.equal("error", doc.results.x2.status)
    assert.are.equal("boom", doc.results.x2.content)
    assert.are.equal("approved", format.status_of(" (status=approved)"))
    local skipped = format.parse({
      "@Assistant:",
      "**Tool Use:** `bash` (`y1`)",
      "```yaml",
      "command: ls",
      "```",
      "**Tool Use:** `bash` (`y2`)",
      "no fence",
      "**Tool Use:** `bash` (`y3`)",
      "```json",
      "{}",
    })
    assert.are.equal(0, #skipped.uses)
    assert.are.same(
      { "y1", "y2", "y3" },
      vim.tbl_map(function(x)
        return x.id
      end, skipped.skipped)
    )
    assert.are.same(
      { "its input is not a json fence", "it has no fenced block", "its fence is not closed" },
      vim.tbl_map(function(x)
        return x.why
      end, skipped.skipped)
    )
    assert.is_nil(format.status_of(" (something else)"))
  end)

  describe("standalone execution", function()
    local dir, old_cwd
    before_each(function()
      old_cwd = vim.fn.getcwd()
      dir = h.tmpdir()
      vim.cmd("cd " .. vim.fn.fnameescape(dir))
      h.write(dir .. "/notes.md", "first note\nsecond note\n")
      sandbox.reset_enabled()
      sandbox.setup({
        backend = "bwrap",
        policy = { rw_paths = { "$CWD" } },
        approval = { bash = "allow" },
        tools = { max_parallel = 5 },
      })
      approval.reset()
    end)
    after_each(function()
      vim.cmd("silent! %bwipeout!")
      vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
      sandbox.setup()
      approval.reset()
      h.rmdir(dir)
    end)

    it("runs what Flemma would run, replaces placeholders, and keeps call order", function()
      local buf = n.open_chat(dir .. "/f.chat", fixture.lines())
      vim.cmd("FlemmaSandbox tool:execute-all")
      wait_idle(buf)
      local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      assert.are.same({
        "toolu_01",
        "toolu_02",
        "toolu_03",
        "toolu_04",
        "toolu_05 (rejected)",
        "toolu_06 (denied)",
        "toolu_07(aborted)",
        "toolu_08",
        "toolu_09 (status=pending)",
      }, result_headers(lines))
      local _, doc = chat.parse(lines)
      assert.are.equal("one", doc.results.toolu_01.content)
      assert.are.equal("a\nb", doc.results.toolu_02.content, "no blank line for the trailing newline")
      assert.are.equal("first note\nsecond note", doc.results.toolu_03.content)
      assert.are.equal("four", doc.results.toolu_04.content, "the approved placeholder ran and was replaced")
      assert.are.equal("eight", doc.results.toolu_08.content)
      for _, name in ipairs({ "rejected-ran", "denied-ran", "aborted-ran", "pending-ran" }) do
        assert.is_nil(h.read(dir .. "/" .. name), name)
      end
      -- nothing in @You: or <thinking> ran or got a result
      assert.is_nil(doc.results.toolu_you)
      assert.is_nil(doc.results.toolu_thought)
      -- control: the same run again runs nothing and adds no result
      vim.cmd("FlemmaSandbox tool:execute-all")
      wait_idle(buf)
      assert.are.same(lines, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
    end)

    it("writes five parallel results in call order when they finish in reverse", function()
      local lines = { "@You:", "go", "", "@Assistant:" }
      for i = 1, 5 do
        local input = vim.json.encode({ command = string.format("sleep %.1f; echo done-%d", (5 - i) * 0.4, i) })
        vim.list_extend(lines, { "", string.format("**Tool Use:** `bash` (`call_%d`)", i), "```json", input, "```" })
      end
      local buf = n.open_chat(dir .. "/p.chat", lines)
      local finished = {}
      local write = vim.api.nvim_buf_set_lines
      vim.api.nvim_buf_set_lines = function(b, first, last, strict, new)
        for _, l in ipairs(new) do
          finished[#finished + 1] = l:match("^%*%*Tool Result:%*%* `call_(%d)`")
        end
        return write(b, first, last, strict, new)
      end
      vim.cmd("FlemmaSandbox tool:execute-all")
      local ok, err = pcall(wait_idle, buf)
      vim.api.nvim_buf_set_lines = write
      assert(ok, err)
      assert.are.same({ "5", "4", "3", "2", "1" }, finished, "they finished in reverse")
      local got = result_headers(vim.api.nvim_buf_get_lines(buf, 0, -1, false))
      assert.are.same({ "call_1", "call_2", "call_3", "call_4", "call_5" }, got)
      local _, doc = chat.parse(vim.api.nvim_buf_get_lines(buf, 0, -1, false))
      for i = 1, 5 do
        assert.are.equal("done-" .. i, doc.results["call_" .. i].content)
      end
    end)

    it("answers a Flemma bash call with label and timeout in seconds, and says where the old names went", function()
      local lines = {
        "@Assistant:",
        "**Tool Use:** `bash` (`b1`)",
        "```json",
        '{"label":"quick","command":"sleep 5; echo late","timeout":0.5}',
        "```",
        "**Tool Use:** `read_file` (`b2`)",
        "```json",
        '{"path":"notes.md"}',
        "```",
      }
      local buf = n.open_chat(dir .. "/b.chat", lines)
      vim.cmd("FlemmaSandbox tool:execute-all")
      wait_idle(buf)
      local _, doc = chat.parse(vim.api.nvim_buf_get_lines(buf, 0, -1, false))
      assert.are.equal("error", doc.results.b1.status)
      assert.matches("stopped after 500 ms", doc.results.b1.content)
      assert.not_matches("late", doc.results.b1.content)
      assert.matches("unknown tool: read_file %(its name is now read, as in Flemma%)", doc.results.b2.content)
    end)
  end)
end)
