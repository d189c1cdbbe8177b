--- background.lua (run in Neovim): a call waits for what runs in the
--- background in the main loop: at once when nothing runs, else once the
--- last of it ended, in a later turn of the loop, or after WAIT_MS.
local background = require("flemma_sandbox.backends.background")

describe("background", function()
  local wait_ms
  before_each(function()
    wait_ms = background.WAIT_MS
  end)
  after_each(function()
    background.WAIT_MS = wait_ms
  end)

  it("goes on at once when nothing runs", function()
    assert.is_false(background.busy())
    local went = false
    background.after(function()
      went = true
    end)
    assert.is_true(went)
  end)

  it("goes on once the last check ended, not in the stretch that ended it", function()
    background.began()
    background.began()
    local went = 0
    background.after(function()
      went = went + 1
    end)
    background.ended()
    vim.wait(50, function()
      return went > 0
    end, 1)
    assert.are.equal(0, went, "one check still runs")
    background.ended()
    assert.are.equal(0, went, "in a later turn of the main loop")
    assert.is_false(background.busy())
    assert.is_true(vim.wait(5000, function()
      return went > 0
    end, 1))
    vim.wait(50)
    assert.are.equal(1, went, "once")
  end)

  it("goes on after WAIT_MS when a check never ends, and once only", function()
    background.WAIT_MS = 20
    background.began()
    local went = 0
    background.after(function()
      went = went + 1
    end)
    assert.is_true(vim.wait(5000, function()
      return went > 0
    end, 1))
    background.ended()
    vim.wait(50)
    assert.are.equal(1, went)
    assert.is_false(background.busy())
  end)

  it("waits for a check that never ends once: later calls go on at once", function()
    background.WAIT_MS = 20
    background.began()
    local first, second = 0, 0
    background.after(function()
      first = first + 1
    end)
    background.after(function()
      second = second + 1
    end)
    assert.is_true(vim.wait(5000, function()
      return first > 0 and second > 0
    end, 1))
    -- control of the cap's effect: the hung check is still not ended
    local third = 0
    background.after(function()
      third = third + 1
    end)
    assert.are.equal(1, third, "at once, not another WAIT_MS")
    background.ended() -- the hung one, at last
    vim.wait(50)
    assert.are.same({ 1, 1, 1 }, { first, second, third })
    assert.is_false(background.busy())
  end)
end)
