--- Tool calls in .chat buffers when Flemma is not installed: finds the tool
--- uses Flemma would see (chat/format.lua), runs those without a finished
--- result with the buffer's policy, and writes each result where Flemma
--- would, in call order, replacing its placeholder.
local frontmatter = require("flemma_sandbox.chat.frontmatter")
local results = require("flemma_sandbox.chat.results")
local tools = require("flemma_sandbox.tools")

local uv = require("flemma_sandbox.base.process").uv()

local M = {}

local json = vim.json or require("cjson")
local ns = vim.api.nvim_create_namespace("flemma_sandbox_chat")

-- the chat's uses and results (chat/results.lua), under the names callers use
M.parse = results.parse
M.plan = results.plan
M.render = results.render
M.fold = results.fold
local write_result = results.write_result

---@class flemma_sandbox.ChatCallState
---@field id string
---@field mark integer extmark on the **Tool Use:** line
---@field cancel fun()|nil stops its job
---@field cancelled boolean
---@field phase "queued"|"waiting"|"running"
---@field started integer|nil uv.now() when it began running

---@type table<integer, table<string, flemma_sandbox.ChatCallState>>
local calls = {}
---@type table<integer, flemma_sandbox.ChatToolUse[]> calls waiting for a free slot
local queues = {}
local ticker

--- Shows each call's phase beside it: queued, waiting for approval, running Ns.
local function draw(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  for _, state in pairs(calls[bufnr] or {}) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, ns, state.mark, {})
    if pos and pos[1] then
      local text = state.phase == "waiting" and "  waiting for approval"
        or state.phase == "queued" and "  queued"
        or string.format("  running %ds", math.floor((uv.now() - (state.started or uv.now())) / 1000))
      vim.api.nvim_buf_set_extmark(bufnr, ns, pos[1], 0, {
        id = state.mark,
        virt_text = { { text, "Comment" } },
        virt_text_pos = "eol",
      })
    end
  end
end

--- One timer redraws every buffer with calls, once a second, while any run.
local function tick()
  if ticker then
    return
  end
  ticker = uv.new_timer()
  ticker:start(
    1000,
    1000,
    vim.schedule_wrap(function()
      local any = false
      for bufnr, states in pairs(calls) do
        if next(states) then
          any = true
          draw(bufnr)
        end
      end
      if not any and ticker then
        ticker:stop()
        ticker:close()
        ticker = nil
      end
    end)
  )
end

--- The owner key of a call's approval questions.
local function owner_of(bufnr, id)
  return "chat:" .. bufnr .. ":" .. id
end

--- Runs a tool for a chat buffer: its frontmatter read again first (the
--- policy follows the text as it is now), and when what the frontmatter
--- loosens is not trusted, the result says so (the model would otherwise
--- take the global policy for the chat's own).
---@param bufnr integer
---@param name string
---@param input table
---@param opts table tools.run's options (bufnr is set here)
---@param done fun(result: table)
function M.run_tool(bufnr, name, input, opts, done)
  frontmatter.sync(bufnr)
  local fm = frontmatter.state(bufnr) or {}
  if fm.loose and #fm.loose > 0 and not fm.trusted then
    local finish = done
    done = function(result)
      result.notes = result.notes or {}
      table.insert(
        result.notes,
        "[sandbox] this chat's frontmatter is not applied where it loosens the sandbox ("
          .. table.concat(fm.loose, "; ")
          .. "): the user has not trusted it (:FlemmaSandbox trust)"
      )
      finish(result)
    end
  end
  opts.bufnr = bufnr
  opts.set_by_frontmatter = function(setting)
    return frontmatter.sets(bufnr, setting)
  end
  tools.run(name, input, opts, done)
end

--- Runs one use; `done` is called after its result was written (or not).
local function execute_call(bufnr, use, state, done)
  state.phase = "running"
  state.started = uv.now()
  draw(bufnr)
  local function finish(result, write)
    calls[bufnr][use.id] = nil
    pcall(vim.api.nvim_buf_del_extmark, bufnr, ns, state.mark)
    if write ~= false then
      if state.cancelled and not result.error then
        result.notes = result.notes or {}
        table.insert(result.notes, "[sandbox] cancelled by the user")
      end
      write_result(bufnr, use.id, result)
    end
    if done then
      done()
    end
  end
  local ok, input = pcall(json.decode, use.input_text or "")
  if not ok or type(input) ~= "table" then
    local msg = "flemma-sandbox: tool use %s: its input is not a JSON object; not run (Flemma skips it too)"
    vim.notify(string.format(msg, use.id), vim.log.levels.WARN)
    return finish({}, false)
  end
  M.run_tool(bufnr, use.name, input, {
    call_id = use.id,
    owner = owner_of(bufnr, use.id),
    approved = use.action == "approved",
    on_phase = function(phase)
      state.phase = phase
      if phase == "running" then
        state.started = uv.now()
      end
      draw(bufnr)
    end,
    on_job = function(handle)
      state.cancel = handle and handle.cancel or nil
      if handle and state.cancelled then
        handle.cancel()
      end
    end,
  }, function(result)
    vim.schedule(function()
      -- a call cancelled before it ran leaves no result: it can run later
      finish(result, not (state.cancelled and result.not_run))
    end)
  end)
end

--- Registers a use as one of the buffer's calls (shown as queued).
local function track(bufnr, use)
  calls[bufnr] = calls[bufnr] or {}
  local state = {
    id = use.id,
    mark = vim.api.nvim_buf_set_extmark(bufnr, ns, use.row, 0, {}),
    cancelled = false,
    phase = "queued",
  }
  calls[bufnr][use.id] = state
  tick()
  return state
end

--- Runs the use under (or above) the cursor.
---@param bufnr integer
---@param row integer 0-based cursor row
---@return boolean started, string|nil err
function M.execute_at(bufnr, row)
  local best
  for _, use in ipairs(M.parse(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))) do
    if use.row <= row then
      best = use
    end
  end
  if not best or row > best.last then
    return false, "no tool use under the cursor"
  end
  if calls[bufnr] and calls[bufnr][best.id] then
    return false, "tool use " .. best.id .. " is already running"
  end
  if not best.action then
    return false, "tool use " .. best.id .. " does not run: " .. best.why
  end
  execute_call(bufnr, best, track(bufnr, best))
  return true
end

--- Runs every use that has no finished result, at most `max_parallel` at
--- once; results are written in call order whatever order they end in.
---@param bufnr integer
---@param max_parallel integer
---@return integer count started or queued, integer skipped placeholders that do not run
function M.execute_all(bufnr, max_parallel)
  local queue, skipped = {}, 0
  local uses, doc = M.parse(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
  for _, s in ipairs(doc.skipped) do
    local msg = "flemma-sandbox: line %d, tool use %s: %s; not run (Flemma skips it too)"
    vim.notify(string.format(msg, s.line, s.id, s.why), vim.log.levels.WARN)
  end
  for _, use in ipairs(uses) do
    local busy = calls[bufnr] and calls[bufnr][use.id]
    if use.action and not busy then
      use.state = track(bufnr, use)
      queue[#queue + 1] = use
    else
      -- a placeholder the user answered or filled in; a finished result
      -- (an "(error)" one included, which this plugin writes) is not counted
      local status = not use.action and doc.results[use.id] and doc.results[use.id].status
      if status and status ~= "error" then
        skipped = skipped + 1
      end
    end
  end
  draw(bufnr)
  queues[bufnr] = queue
  local active = 0
  local function pump()
    while active < max_parallel and #queue > 0 do
      local use = table.remove(queue, 1)
      active = active + 1
      execute_call(bufnr, use, use.state, function()
        active = active - 1
        pump()
      end)
    end
  end
  local total = #queue
  pump()
  return total, skipped
end

--- Stops everything for a buffer: queued calls are dropped, questions
--- closed, running jobs stopped.
---@param bufnr integer
---@return integer count
function M.cancel(bufnr)
  local approval = require("flemma_sandbox.questions")
  local n = 0
  local queue = queues[bufnr] or {}
  for _, use in ipairs(queue) do
    calls[bufnr][use.id] = nil
    pcall(vim.api.nvim_buf_del_extmark, bufnr, ns, use.state.mark)
    n = n + 1
  end
  -- emptied in place: execute_all's pump holds this very table
  for i = #queue, 1, -1 do
    queue[i] = nil
  end
  for id, state in pairs(calls[bufnr] or {}) do
    state.cancelled = true
    approval.cancel(owner_of(bufnr, id))
    if state.cancel then
      state.cancel()
    end
    n = n + 1
  end
  return n
end

--- Calls of a buffer that are queued, waiting for approval or running, by id.
---@param bufnr integer
---@return string[]
function M.running(bufnr)
  return vim.tbl_keys(calls[bufnr] or {})
end

--- The phase of a call ("queued", "waiting", "running"), or nil.
---@param bufnr integer
---@param id string
---@return string|nil
function M.phase(bufnr, id)
  local state = calls[bufnr] and calls[bufnr][id]
  return state and state.phase
end

return M
