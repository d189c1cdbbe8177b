--- Tool calls in .chat buffers: finds `**Tool Use:**` blocks, runs them
--- with the buffer's policy, and writes `**Tool Result:**` blocks back under
--- an `@You:` message.
local tools = require("flemma_sandbox.tools")

-- vim.uv from Neovim 0.10; vim.loop before (deprecated on 0.12)
local uv = vim.uv or vim.loop

local M = {}

local json = vim.json or require("cjson")
local ns = vim.api.nvim_create_namespace("flemma_sandbox_chat")

---@class flemma_sandbox.ChatCall
---@field name string
---@field id string
---@field row integer 0-based row of the **Tool Use:** line
---@field last integer 0-based row of the closing fence of its input
---@field input string|nil the JSON text
---@field has_result boolean

local USE = "^%*%*Tool Use:%*%*%s+`([^`]+)`%s+%(`([^`]+)`%)%s*$"
local RESULT = "^%*%*Tool Result:%*%*%s+`([^`]+)`"
local ROLE = "^@%a+:"

--- The fence that opens at a line ("```" or longer), if any.
local function fence_of(line)
  return line:match("^(```+)")
end

--- Row of the line that closes a fence opened with `fence`, from row `from`.
local function closing(lines, from, fence)
  for i = from, #lines do
    local f = lines[i]:match("^(```+)%s*$")
    if f and #f >= #fence then
      return i
    end
  end
end

--- Tool calls and results in a list of lines (1-based list, 0-based rows out).
---@param lines string[]
---@return flemma_sandbox.ChatCall[]
function M.parse(lines)
  local calls, results = {}, {}
  local i = 1
  while i <= #lines do
    local line = lines[i]
    local name, id = line:match(USE)
    local result_id = line:match(RESULT)
    local fence = fence_of(line)
    if name then
      local call = { name = name, id = id, row = i - 1, last = i - 1 }
      local j = i + 1
      while j <= #lines and lines[j]:match("^%s*$") do
        j = j + 1
      end
      local open = lines[j] and lines[j]:match("^(```+)%s*json%s*$")
      local close = open and closing(lines, j + 1, open)
      if close then
        call.input = table.concat(lines, "\n", j + 1, close - 1)
        call.last = close - 1
        i = close
      end
      calls[#calls + 1] = call
    elseif result_id then
      results[result_id] = true
    elseif fence then
      i = closing(lines, i + 1, fence) or #lines
    end
    i = i + 1
  end
  for _, call in ipairs(calls) do
    call.has_result = results[call.id] == true
  end
  return calls
end

--- A fence longer than any run of backticks in text (at least three).
---@param text string
---@return string
function M.fence_for(text)
  local longest = 2
  for run in text:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  return string.rep("`", longest + 1)
end

--- The text of a result and whether it reports a failure.
---@param result table
---@return string body, boolean is_error
function M.render(result)
  if result.error then
    return result.error, true
  end
  if result.content then
    return result.content, false
  end
  if result.success then
    return "ok", false
  end
  local parts = {}
  if result.stdout and result.stdout ~= "" then
    parts[#parts + 1] = result.stdout
  end
  if result.stderr and result.stderr ~= "" then
    parts[#parts + 1] = "[stderr]\n" .. result.stderr
  end
  local failed = (result.exit_code or 0) ~= 0 or result.timed_out
  if (result.exit_code or 0) ~= 0 then
    parts[#parts + 1] = "[exit code " .. result.exit_code .. "]"
  end
  for _, note in ipairs(result.notes or {}) do
    parts[#parts + 1] = note
  end
  return table.concat(parts, "\n"), failed
end

--- Lines of a **Tool Result:** block.
---@param id string
---@param result table
---@return string[]
function M.result_lines(id, result)
  local body, is_error = M.render(result)
  local fence = M.fence_for(body)
  local lines = { "**Tool Result:** `" .. id .. "`" .. (is_error and " (error)" or ""), "", fence }
  for line in (body .. "\n"):gmatch("(.-)\n") do
    lines[#lines + 1] = line
  end
  lines[#lines + 1] = fence
  lines[#lines + 1] = ""
  return lines
end

--- Where a result for the call at `row` goes: in the @You: message after
--- the call's message, after results already there. Returns the row and
--- whether an "@You:" header must be written first.
local function insertion_point(lines, row)
  local i = row + 2
  while i <= #lines and not lines[i]:match(ROLE) do
    local fence = fence_of(lines[i])
    if fence then
      i = closing(lines, i + 1, fence) or #lines
    end
    i = i + 1
  end
  if i > #lines or not lines[i]:match("^@You:") then
    return i - 1, true
  end
  -- skip the header, blank lines and results already written
  local j = i + 1
  while j <= #lines do
    if lines[j]:match(RESULT) then
      local k = j + 1
      while k <= #lines and lines[k]:match("^%s*$") do
        k = k + 1
      end
      local fence = lines[k] and fence_of(lines[k])
      j = (fence and closing(lines, k + 1, fence) or k) + 1
    elseif lines[j]:match("^%s*$") then
      j = j + 1
    else
      break
    end
  end
  return j - 1, false
end

--- Writes a result for the call whose **Tool Use:** line carries `mark`.
local function write_result(bufnr, mark, call, result)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, ns, mark, {})
  vim.api.nvim_buf_del_extmark(bufnr, ns, mark)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local row = pos and pos[1]
  local _, id_at_row = (lines[(row or -1) + 1] or ""):match(USE)
  if id_at_row ~= call.id then
    row = nil -- the line moved or changed: find the call by its id
    for _, c in ipairs(M.parse(lines)) do
      if c.id == call.id then
        row = c.row
      end
    end
  end
  if not row then
    vim.notify("flemma-sandbox: the tool use " .. call.id .. " is gone; its result was dropped", vim.log.levels.WARN)
    return
  end
  local at, header = insertion_point(lines, row)
  local block = M.result_lines(call.id, result)
  if header then
    table.insert(block, 1, "@You:")
    if at > 0 and not (lines[at] or ""):match("^%s*$") then
      table.insert(block, 1, "")
    end
  end
  vim.api.nvim_buf_set_lines(bufnr, at, at, false, block)
  M.fold(bufnr, at + (header and 1 or 0), #block)
end

--- Folds a long result in the windows that show the buffer with manual folds.
function M.fold(bufnr, first, count)
  if count < M.fold_min_lines then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    if vim.wo[win].foldmethod == "manual" then
      vim.api.nvim_win_call(win, function()
        vim.cmd(string.format("%d,%dfold", first + 1, first + count - 1))
      end)
    end
  end
end

M.fold_min_lines = 30

---@type table<integer, table<string, { cancel: fun()|nil, cancelled: boolean }>>
local running = {}
---@type table<integer, flemma_sandbox.ChatCall[]> calls waiting for a free slot
local queues = {}

--- Shows "running Ns" beside the call until it ends.
local function show_running(bufnr, mark, row)
  local started = uv.now()
  local timer = uv.new_timer()
  local function draw()
    if not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, ns, mark, {})
    if pos and pos[1] then
      local secs = math.floor((uv.now() - started) / 1000)
      vim.api.nvim_buf_set_extmark(bufnr, ns, pos[1], 0, {
        id = mark,
        virt_text = { { string.format("  running %ds", secs), "Comment" } },
        virt_text_pos = "eol",
      })
    end
  end
  vim.api.nvim_buf_set_extmark(bufnr, ns, row, 0, { id = mark })
  draw()
  timer:start(1000, 1000, vim.schedule_wrap(draw))
  return function()
    timer:stop()
    timer:close()
  end
end

--- Runs one call; `done` is called after its result was written.
local function execute_call(bufnr, call, done)
  running[bufnr] = running[bufnr] or {}
  local state = { cancelled = false }
  running[bufnr][call.id] = state
  local mark = call.mark or vim.api.nvim_buf_set_extmark(bufnr, ns, call.row, 0, {})
  local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, ns, mark, {})
  local stop_timer = show_running(bufnr, mark, pos[1] or call.row)
  local function finish(result)
    stop_timer()
    running[bufnr][call.id] = nil
    if state.cancelled and not result.error then
      result.notes = result.notes or {}
      table.insert(result.notes, "[sandbox] cancelled by the user")
    end
    write_result(bufnr, mark, call, result)
    if done then
      done()
    end
  end
  local ok, input = pcall(json.decode, call.input or "")
  if not ok or type(input) ~= "table" then
    return finish({ error = "the tool input is not a JSON object: " .. tostring(call.input and input or "missing") })
  end
  tools.run(call.name, input, {
    bufnr = bufnr,
    on_job = function(handle)
      state.cancel = handle and handle.cancel or nil
      if handle and state.cancelled then
        handle.cancel()
      end
    end,
  }, vim.schedule_wrap(finish))
end

--- Runs the call under (or above) the cursor.
---@param bufnr integer
---@param row integer 0-based cursor row
---@return boolean started, string|nil err
function M.execute_at(bufnr, row)
  local best
  for _, call in ipairs(M.parse(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))) do
    if call.row <= row then
      best = call
    end
  end
  if not best or row > best.last + 1 then
    return false, "no tool use under the cursor"
  end
  if running[bufnr] and running[bufnr][best.id] then
    return false, "tool use " .. best.id .. " is already running"
  end
  execute_call(bufnr, best)
  return true
end

--- Runs every call without a result, at most `max_parallel` at once.
---@param bufnr integer
---@param max_parallel integer
---@return integer count started or queued
function M.execute_all(bufnr, max_parallel)
  local queue = {}
  for _, call in ipairs(M.parse(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))) do
    if not call.has_result and not (running[bufnr] and running[bufnr][call.id]) then
      -- marked now: results written meanwhile move the rows of later calls
      call.mark = vim.api.nvim_buf_set_extmark(bufnr, ns, call.row, 0, {})
      queue[#queue + 1] = call
    end
  end
  queues[bufnr] = queue
  local active = 0
  local function pump()
    while active < max_parallel and #queue > 0 do
      local call = table.remove(queue, 1)
      active = active + 1
      execute_call(bufnr, call, function()
        active = active - 1
        pump()
      end)
    end
  end
  local total = #queue
  pump()
  return total
end

--- Stops everything running for a buffer.
---@param bufnr integer
---@return integer count
function M.cancel(bufnr)
  local n = #(queues[bufnr] or {})
  for _, call in ipairs(queues[bufnr] or {}) do
    pcall(vim.api.nvim_buf_del_extmark, bufnr, ns, call.mark)
  end
  queues[bufnr] = {}
  for _, state in pairs(running[bufnr] or {}) do
    state.cancelled = true
    if state.cancel then
      state.cancel()
    end
    n = n + 1
  end
  return n
end

--- Calls running for a buffer, by id.
---@param bufnr integer
---@return string[]
function M.running(bufnr)
  return vim.tbl_keys(running[bufnr] or {})
end

return M
