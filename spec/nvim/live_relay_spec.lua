--- A warm call's attach relays the call (csrc/exec/live_relay.c): it
--- waits in poll for the call's output and the supervisor's word. Once the
--- call closed its output (`exec >/dev/null`, or the moment it exits,
--- before its status comes), the pipes only say "hung up", at once and on
--- every poll: the attach must stop asking them, or it spins a core for
--- as long as the call runs on. Counted by the attach's read calls
--- (/proc/PID/io syscr: each turn of the loop reads the signal fd), not by
--- time; the control is a call that writes, whose reads do count.
local n = require("support.nvim")
local job = require("flemma_sandbox.run.job")
local sandbox = require("flemma_sandbox")

--- A process whose command line holds marker and whose comm is comm (a
--- program's name cut to 15 bytes), waited for; nil when none came.
---@param marker string
---@param comm string
---@return integer?
local function pid_named(marker, comm)
  local found
  vim.wait(10000, function()
    for _, pid in ipairs(n.pids_with(marker)) do
      local f = io.open("/proc/" .. pid .. "/comm", "r")
      local name = f and f:read("*l")
      if f then
        f:close()
      end
      if name == comm:sub(1, 15) then
        found = pid
        return true
      end
    end
    return false
  end, 10)
  return found
end

--- The read calls pid made so far (/proc/PID/io's syscr).
---@param pid integer
---@return integer
local function reads(pid)
  local f = assert(io.open("/proc/" .. pid .. "/io", "r"))
  local text = f:read("*a")
  f:close()
  return assert(tonumber(text:match("syscr: (%d+)")), text)
end

describe("a warm call's attach", function()
  local dir
  n.live_world(function(w)
    dir = w.dir
  end)

  --- Starts script (with the marker's sleep in it) in the chat's sandbox
  --- and counts the attach's reads over a second once the sleep runs;
  --- then waits for the call: the count and the result.
  local function reads_while(buf, script, marker)
    local result
    assert(job.run({ "bash", "-c", script }, {
      bufnr = buf,
      wrap = sandbox.wrapper(buf),
      on_exit = function(r)
        result = r
      end,
    }))
    local pid = pid_named(marker, "flemma-sandbox-attach")
    assert.truthy(pid, "the call's attach runs")
    assert.truthy(pid_named(marker, "sleep"), "the call's command runs")
    local before = reads(pid)
    n.pause(1000)
    local counted = reads(pid) - before
    assert.truthy(
      vim.wait(20000, function()
        return result ~= nil
      end, 10),
      "the call ended"
    )
    return counted, result
  end

  it("waits without spinning once the call closed its output; control: a call that writes is read", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    assert.are.equal(0, n.run_job({ "true" }, { bufnr = a }).exit_code) -- warm
    local marker = n.marker()
    local counted, r = reads_while(a, "exec >/dev/null 2>&1; sleep 2." .. marker, marker)
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.is_true(counted < 100, "the attach read " .. counted .. " times in a second with nothing to read")
    -- control: output every 20 ms is read as it comes (the count sees reads)
    marker = n.marker()
    counted, r = reads_while(a, "for i in $(seq 100); do echo tick; sleep 0.02" .. marker .. "; done", marker)
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.truthy(r.stdout:find("tick\n", 1, true), r.stdout)
    assert.is_true(counted > 0, "the attach read the call's output")
  end)
end)
