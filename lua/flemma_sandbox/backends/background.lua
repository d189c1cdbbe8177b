--- What the first chat buffer starts in the background (the backend's
--- test sandbox, bwrap's --help, the helper's --info, the folder's scan
--- index and the policy resolved from it), and the calls that wait for
--- it: a call made while any runs goes on when the last ends, in the main
--- loop, instead of doing the same work again on the editor's thread
--- (backends/bwrap_probe.lua, backends/helper.lua and the policy cache
--- then have their answers kept). The standalone tools' calls wait
--- (api/calls.lua's when_ready); under Flemma a call goes on at once, as
--- before: the prestart's policy is Flemma's, made before the chat's
--- folders exist, and a call that waited for it would find its sandbox's
--- key changed by them.
local M = {}

--- How long a call waits at most: past it, it goes on and the check it
--- needs runs at once, as it would with none in the background; what
--- still runs then is never waited for again.
M.WAIT_MS = 10000

---@type integer checks running now
local running = 0
---@type fun()[] what goes on when none runs
local waiting = {}

--- A check starts in the background.
function M.began()
  running = running + 1
end

--- Each waiting call goes on, each in a later turn of the main loop of its
--- own (a timer: what vim.schedule queues runs in the same turn), not in
--- the stretch that kept the check's answer.
local function release()
  local now = waiting
  waiting = {}
  for _, go_on in ipairs(now) do
    vim.defer_fn(go_on, 0)
  end
end

--- A check started with began() ended (its answer kept first). A
--- waiting call goes on in a later turn of the main loop.
function M.ended()
  running = math.max(0, running - 1)
  if running == 0 then
    release()
  end
end

--- Whether a check runs in the background now.
---@return boolean
function M.busy()
  return running > 0
end

--- go_on queued on list, to run once: when whoever owns the list runs
--- what it holds, or after cap_ms in the main loop, whichever comes first
--- (a wait with a cap, never on the editor's thread; also the chat's
--- prestart's, live.after_prestart).
---@param list fun()[]
---@param go_on fun()
---@param cap_ms integer
---@param on_cap? fun() called first when the cap comes before the list's owner
function M.queue_once(list, go_on, cap_ms, on_cap)
  local done = false
  local function once()
    if not done then
      done = true
      go_on()
    end
  end
  list[#list + 1] = once
  vim.defer_fn(function()
    if not done and on_cap then
      on_cap()
    end
    once()
  end, cap_ms)
end

--- go_on() at once when no check runs, else when the last one ends (or
--- after M.WAIT_MS), in the main loop: never a wait on the editor's thread.
---@param go_on fun()
function M.after(go_on)
  if running == 0 then
    return go_on()
  end
  M.queue_once(waiting, go_on, M.WAIT_MS, function()
    -- what ran past the cap (a hung bwrap, a stalled mount) is not waited
    -- for again: every call goes on now and does the checks it needs
    running = 0
    release()
  end)
end

return M
