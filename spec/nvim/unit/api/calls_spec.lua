--- calls.lua (run in Neovim): a chat's tool calls are numbered in the
--- chat's folder (so numbers go on after a restart), a buffer that is no
--- chat gets none; a call's end delivers its result before its timeline
--- entry is written. The chat's folder is the spec's own (get_policy
--- stood in for); the checkpoints' path is checkpoints_spec's.
local calls = require("flemma_sandbox.api.calls")
local fs = require("flemma_sandbox")
local timeline = require("flemma_sandbox.api.timeline")
local h = require("support.helpers")

describe("calls", function()
  local dir, real_get_policy

  --- Starts a call of bufnr and returns it (a call that takes no checkpoint ends at once).
  local function start(bufnr, tool)
    local got
    calls.start(bufnr, tool or "read", "read: notes.md", false, function(call, errors)
      assert.are.same({}, errors)
      got = call
    end)
    assert.is_truthy(got, "done was called")
    return got
  end

  before_each(function()
    dir = h.tmpdir()
    real_get_policy = fs.get_policy
    fs.get_policy = function(bufnr)
      if bufnr == 1001 then
        return { chat = { dir = dir .. "/chat" } }
      elseif bufnr == 1002 then
        error("not a buffer")
      end
      return {}
    end
  end)

  after_each(function()
    fs.get_policy = real_get_policy
    h.rmdir(dir)
  end)

  it("numbers a chat's calls from 1 in its folder, made at the first call, private", function()
    local first = start(1001)
    assert.are.equal(1, first.n)
    assert.are.equal(dir .. "/chat", first.chat_dir)
    assert.are.equal("read", first.tool)
    assert.are.equal("read: notes.md", first.label)
    assert.is_false(first.checkpointed)
    assert.are.equal(2, start(1001).n)
    assert.are.equal(
      "3\n",
      (function()
        start(1001)
        return h.read(dir .. "/chat/calls-last")
      end)()
    )
    assert.are.equal("40700", string.format("%o", vim.loop.fs_stat(dir .. "/chat").mode))
  end)

  it("goes on from the number kept in the folder (after a restart)", function()
    vim.fn.mkdir(dir .. "/chat", "p")
    h.write(dir .. "/chat/calls-last", "41\n")
    assert.are.equal(42, start(1001).n)
  end)

  it("starts again at 1 when the kept number is unreadable", function()
    vim.fn.mkdir(dir .. "/chat", "p")
    h.write(dir .. "/chat/calls-last", "garbage\n")
    assert.are.equal(1, start(1001).n)
  end)

  it("gives no number to a buffer that is no chat, or whose policy fails", function()
    local call = start(7)
    assert.is_nil(call.n)
    assert.is_nil(call.chat_dir)
    assert.is_nil(start(1002).n)
  end)

  it("has no number when the chat's folder cannot be made", function()
    h.write(dir .. "/chat", "a file in its place")
    assert.is_nil(start(1001).n)
  end)

  describe("ended", function()
    it("delivers at once without a call", function()
      local delivered = false
      calls.ended(nil, nil, nil, function()
        delivered = true
      end)
      assert.is_true(delivered)
      calls.ended(nil, nil, nil) -- no delivered: nothing to call
    end)

    it("delivers the result, then writes the call's timeline entry", function()
      local call = start(1001)
      local order = {}
      local real = timeline.call_ended
      timeline.call_ended = function(c, result)
        order[#order + 1] = "timeline"
        assert.are.equal(call, c)
        assert.are.same({ content = "ok" }, result)
        real(c, result)
      end
      calls.ended(call, { content = "ok" }, nil, function()
        order[#order + 1] = "delivered"
      end)
      timeline.call_ended = real
      assert.are.same({ "delivered", "timeline" }, order)
      local entries = timeline.read(dir .. "/chat")
      assert.are.equal(1, #entries)
      assert.are.equal(1, entries[1].n)
    end)
  end)
end)
