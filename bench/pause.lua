--- make bench: the longest pause of Neovim's main thread while something
--- runs in its loop (the longest gap of a 1 ms timer), for the benches'
--- main-thread goals.
local uv = vim.uv or vim.loop

local M = {}

local function now_ms()
  return uv.hrtime() / 1e6
end

--- Calls start(done) and waits, at most a minute, for done(result).
--- Returns the result, the longest pause (start's own time counts), the
--- time start took to hand back control, and the time until done, in ms.
---@param start fun(done: fun(result: any))
---@return any result, number longest, number start_ms, number total_ms
function M.measure(start)
  local timer = uv.new_timer()
  local last, longest = now_ms(), 0
  timer:start(1, 1, function()
    local t = now_ms()
    longest = math.max(longest, t - last)
    last = t
  end)
  local result
  local t0 = now_ms()
  start(function(r)
    result = r
  end)
  local start_ms = now_ms() - t0
  last = now_ms()
  vim.wait(60000, function()
    return result ~= nil
  end, 1)
  local total = now_ms() - t0
  timer:stop()
  timer:close()
  return result, math.max(longest, start_ms), start_ms, total
end

return M
