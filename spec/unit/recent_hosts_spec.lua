local util = require("flemma_sandbox.base.util")

local function hosts(items)
  local out = {}
  for i, item in ipairs(items) do
    out[i] = item.host
  end
  return out
end

describe("util.recent_hosts", function()
  it("keeps the last items, one per host, newest first", function()
    local list = util.recent_hosts(3)
    list.put({ host = "a", n = 1 })
    list.put({ host = "b", n = 2 })
    list.put({ host = "a", n = 3 }) -- a again: the older one goes
    assert.are.same({ { host = "a", n = 3 }, { host = "b", n = 2 } }, list.newest_first())
    list.put({ host = "c", n = 4 })
    list.put({ host = "d", n = 5 }) -- past the limit: the oldest (b) goes
    assert.are.same({ "d", "c", "a" }, hosts(list.newest_first()))
    list.clear()
    assert.are.same({}, list.newest_first())
  end)
end)
