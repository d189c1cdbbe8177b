--- A chat's timeline: one entry per tool call, a JSON line each in the
--- chat's own folder (our state folder: no sandbox reaches it), the last
--- M.MAX calls kept. calls.lua ends each call here with what its runs
--- reported: the hosts the proxy reached and refused, what the check after
--- the run moved to the quarantine, why the helper stopped it. The files a
--- call changed are not in the entry: direct mode's checkpoints before and
--- after it hold them (checkpoints.call_changes), read when the timeline
--- is shown (nvim/log.lua, the command line's `log`).
local core = require("flemma_sandbox.core")

local M = {}

--- The file in a chat's folder.
M.FILE = "timeline.jsonl"
--- The calls kept.
M.MAX = 500
--- At most this many items per list of an entry, each cut to ITEM_CHARS.
M.MAX_ITEMS = 20
M.ITEM_CHARS = 300
--- What is read of the file at most.
M.READ_MAX = 8 * 1024 * 1024

---@class flemma_sandbox.TimelineEntry
---@field n integer|nil the call's number in its chat
---@field tool string
---@field label string its command, or its tool and path
---@field started integer when it started (os.time())
---@field ended integer when it ended
---@field exit integer|nil the command's exit code
---@field ok boolean whether it succeeded
---@field error string|nil why it failed (its first line)
---@field reached string[] "host:port" the proxy connected to
---@field refused string[] "host: why" the proxy refused
---@field unreachable string[] "host: why" allowed, not answering
---@field moved string[] what the check after the run moved to the quarantine (where it was)
---@field relinked string[] protected links made again
---@field stopped string[] why the helper stopped it ("reason: why")
---@field checkpoint boolean whether a checkpoint was taken before it (direct mode)
---@field clone boolean whether it ran in clone mode (on the chat's copy)

--- s cut to n characters (bytes) on one line.
---@param s any
---@param n integer
---@return string
local function cut(s, n)
  s = tostring(s or ""):gsub("[%c]", " ")
  if #s > n then
    return s:sub(1, n - 3) .. "..."
  end
  return s
end

--- Adds s to list unless it is there or the list is full.
---@param list string[]
---@param s string
local function add(list, s)
  s = cut(s, M.ITEM_CHARS)
  if #list < M.MAX_ITEMS and not vim.tbl_contains(list, s) then
    list[#list + 1] = s
  end
end

--- What the runs of a call reported, into entry.
---@param entry flemma_sandbox.TimelineEntry
---@param runs flemma_sandbox.RunReport[]|nil
local function add_runs(entry, runs)
  for _, run in ipairs(type(runs) == "table" and runs or {}) do
    for _, rec in ipairs(run.records or {}) do
      local t = rec.type
      if t == "reached" then
        add(entry.reached, rec.host .. (rec.port and (":" .. rec.port) or ""))
      elseif t == "blocked" then
        add(entry.refused, tostring(rec.host) .. ": " .. tostring(rec.why))
      elseif t == "unreachable" then
        add(entry.unreachable, tostring(rec.host) .. ": " .. tostring(rec.why))
      elseif t == "moved" then
        add(entry.moved, rec.from)
      elseif t == "relinked" then
        add(entry.relinked, rec.path)
      elseif t == "stopped" then
        add(entry.stopped, tostring(rec.reason) .. ": " .. tostring(rec.why))
      end
    end
    for _, q in ipairs(run.quarantined or {}) do
      add(entry.moved, q.from)
    end
  end
end

--- The entry of a call that ended with result.
---@param call flemma_sandbox.Call
---@param result table|nil the tool's result (ours, or Flemma's)
---@param runs flemma_sandbox.RunReport[]|nil what its runs reported (else result.sandbox_runs)
---@return flemma_sandbox.TimelineEntry
function M.entry(call, result, runs)
  result = type(result) == "table" and result or {}
  local exit = type(result.exit_code) == "number" and result.exit_code or nil
  local err = result.error ~= nil and result.error ~= vim.NIL and tostring(result.error) or nil
  local ok = err == nil and result.success ~= false and (exit == nil or exit == 0) and not result.timed_out
  local clone_ok, clone = pcall(function()
    return require("flemma_sandbox.api.clone_mode").is_clone(call.bufnr)
  end)
  ---@type flemma_sandbox.TimelineEntry
  local entry = {
    n = call.n,
    tool = tostring(call.tool),
    label = cut(call.label, 400),
    started = call.started,
    ended = os.time(),
    exit = exit,
    ok = ok,
    error = err and cut(err:match("[^\n]*"), 200) or nil,
    reached = {},
    refused = {},
    unreachable = {},
    moved = {},
    relinked = {},
    stopped = {},
    checkpoint = call.checkpointed == true,
    clone = clone_ok and clone == true,
  }
  if result.timed_out then
    add(entry.stopped, "time_limit: it ran out of time")
  end
  add_runs(entry, runs or result.sandbox_runs)
  return entry
end

--- The timeline file's lines (JSON), oldest first.
---@param dir string the chat's folder
---@return string[]
local function read_lines(dir)
  local text = core.read_beneath(dir, dir .. "/" .. M.FILE, M.READ_MAX)
  local out = {}
  for line in (text or ""):gmatch("[^\n]+") do
    out[#out + 1] = line
  end
  return out
end

--- The entries of a chat's folder, oldest first (a line that is not one
--- is left out).
---@param dir string
---@return flemma_sandbox.TimelineEntry[]
function M.read(dir)
  local out = {}
  for _, line in ipairs(read_lines(dir)) do
    local ok, e = pcall(vim.json.decode, line)
    if ok and type(e) == "table" and type(e.tool) == "string" then
      for _, key in ipairs({ "reached", "refused", "unreachable", "moved", "relinked", "stopped" }) do
        e[key] = type(e[key]) == "table" and e[key] or {}
      end
      if e.exit == vim.NIL then
        e.exit = nil
      end
      out[#out + 1] = e
    end
  end
  return out
end

--- Appends an entry to a chat's timeline (the last M.MAX kept); true, or
--- nil and why not.
---@param dir string
---@param entry flemma_sandbox.TimelineEntry
---@return boolean|nil ok, string|nil err
function M.append(dir, entry)
  local ok, line = pcall(vim.json.encode, entry)
  if not ok then
    return nil, tostring(line)
  end
  local lines = read_lines(dir)
  lines[#lines + 1] = line
  local from = math.max(1, #lines - M.MAX + 1)
  local text = table.concat(lines, "\n", from) .. "\n"
  return core.write_atomic(dir, M.FILE, text, 384)
end

--- A call ended: its entry in the chat's timeline (a call of a buffer
--- that is not a chat with a file has none).
---@param call flemma_sandbox.Call
---@param result table|nil
---@param extra flemma_sandbox.RunReport[]|nil what its runs reported
function M.call_ended(call, result, extra)
  if type(call) ~= "table" or not call.chat_dir then
    return
  end
  local ok, err = M.append(call.chat_dir, M.entry(call, result, extra))
  if not ok then
    require("flemma_sandbox.base.notice").say(
      "the chat's timeline was not written: " .. tostring(err),
      vim.log.levels.WARN
    )
  end
end

return M
