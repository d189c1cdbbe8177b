--- A chat's tool calls, one by one: each gets its number in the chat
--- (kept in the chat's folder, so it goes on after a restart), a
--- checkpoint of the tree before it when it can write in direct mode, and
--- one after it when it ends (checkpoints.lua): the call's change is what
--- differs between the two, which :FlemmaSandbox undo takes back. The
--- timeline (timeline.lua) gets an entry when it ends.
local core = require("flemma_sandbox.core")

local M = {}

---@class flemma_sandbox.Call
---@field n integer|nil the call's number in its chat (nil: not a chat)
---@field tool string the tool's name
---@field label string what the call does (its command, or tool and path)
---@field started integer when it started (os.time())
---@field bufnr integer|nil
---@field chat_dir string|nil the chat's folder
---@field checkpointed boolean whether a checkpoint was taken before it
---@field stores flemma_sandbox.ShadowSpec[]|nil the stores of its checkpoints

--- The file in a chat's folder holding the number of its last call.
local COUNTER = "calls-last"

--- The next call number of a chat's folder (written before it is used).
---@param dir string
---@return integer|nil
local function next_number(dir)
  -- the chat's folder is made at its first call
  if not core.make_dirs(dir, 448) then
    return nil
  end
  local data = core.read_beneath(dir, dir .. "/" .. COUNTER)
  local n = (tonumber(data and data:match("^%d+")) or 0) + 1
  if not core.write_atomic(dir, COUNTER, tostring(n) .. "\n", 384) then
    return nil
  end
  return n
end

--- The chat folder of a buffer, or nil when it is not a chat with a file.
---@param bufnr integer|nil
---@return string|nil
local function chat_dir_of(bufnr)
  local ok, policy = pcall(require("flemma_sandbox").get_policy, bufnr)
  if ok and type(policy) == "table" and policy.chat then
    return policy.chat.dir
  end
  return nil
end

--- M.start's numbering, then go_on(call): at once, or with own_turn in a
--- turn of the main loop of its own (a timer, since what vim.schedule
--- queues runs in the same turn).
---@param bufnr integer|nil
---@param tool string
---@param label string
---@param own_turn boolean
---@param go_on fun(call: flemma_sandbox.Call)
local function numbered(bufnr, tool, label, own_turn, go_on)
  local dir = chat_dir_of(bufnr)
  ---@type flemma_sandbox.Call
  local call = {
    n = dir and next_number(dir) or nil,
    tool = tool,
    label = label,
    started = os.time(),
    bufnr = bufnr,
    chat_dir = dir,
    checkpointed = false,
  }
  if own_turn then
    vim.defer_fn(function()
      go_on(call)
    end, 0)
  else
    go_on(call)
  end
end

---@class flemma_sandbox.CallStartOpts
---@field when_ready? boolean wait in the main loop for what the first chat
--- started in the background (backends/background.lua), and run the part
--- after the number in a turn of its own: the standalone tools' calls

--- Starts a call: numbers it, and in direct mode takes the checkpoint of a
--- writing call off the editor's thread; then done(call, errors).
---@param bufnr integer|nil
---@param tool string
---@param label string
---@param checkpoint boolean whether a checkpoint is taken before it
---@param done fun(call: flemma_sandbox.Call, errors: string[])
---@param opts? flemma_sandbox.CallStartOpts
function M.start(bufnr, tool, label, checkpoint, done, opts)
  local checkpoints = require("flemma_sandbox.api.checkpoints")
  local function go_on(call)
    -- never beside the chat's prestart's own run (backends/live.lua)
    require("flemma_sandbox.backends.live").after_prestart(bufnr, function()
      if not checkpoint or not checkpoints.WRITING_TOOLS[tool] then
        return done(call, {})
      end
      checkpoints.take(bufnr, label, function(errors, specs)
        call.checkpointed, call.stores = #errors == 0, specs
        done(call, errors)
      end, call.n)
    end)
  end
  if not (opts and opts.when_ready) then
    return numbered(bufnr, tool, label, false, go_on)
  end
  -- the backend's checks and the index of the first chat, when they still
  -- run, are waited for in the main loop rather than done again on its
  -- thread
  require("flemma_sandbox.backends.background").after(function()
    numbered(bufnr, tool, label, true, go_on)
  end)
end

--- Ends a call: the checkpoint after it (when one was taken before), then
--- delivered() (the result goes out only then: what the user does after
--- seeing it is never part of the call's change), then its timeline
--- entry. result is the tool's result as the caller has it; extra carries
--- what the runs reported.
---@param call flemma_sandbox.Call|nil
---@param result table|nil
---@param extra flemma_sandbox.RunReport[]|nil
---@param delivered? fun()
function M.ended(call, result, extra, delivered)
  delivered = delivered or function() end
  if not call then
    return delivered()
  end
  local function log()
    delivered()
    local ok, timeline = pcall(require, "flemma_sandbox.api.timeline")
    if ok and type(timeline) == "table" and timeline.call_ended then
      timeline.call_ended(call, result, extra)
    end
  end
  if not (call.checkpointed and call.n) then
    return log()
  end
  require("flemma_sandbox.api.checkpoints").finish(call.stores or {}, call.n, log)
end

return M
