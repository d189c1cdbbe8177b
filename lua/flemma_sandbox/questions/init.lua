--- Approval of tool calls: per tool "allow", "ask" or "deny" (setup() or
--- flemma.opt.approval), answers remembered for the session where that is
--- safe, and questions asked one at a time in a window that never takes
--- focus (questions/window.lua): nothing typed elsewhere answers one.
local sandbox = require("flemma_sandbox")
local window = require("flemma_sandbox.questions.window")

local M = {}

---@type table<string, boolean> remembered "always" answers, by key
local remembered = {}

---@alias flemma_sandbox.Answer "once"|"always"|"deny"|"cancelled"

---@class flemma_sandbox.Question
---@field title string
---@field lines string[] what is being asked about (command, folder, network); may hold newlines
---@field can_remember boolean|nil offer "always"
---@field remember_key string|nil an "always" answer is kept under this key
---@field id string|nil the tool call's id
---@field bufnr integer|nil the chat buffer that holds the call (the window keeps clear of it)
---@field owner string|nil cancel(owner) withdraws the question
---@field tool string|nil

---@class flemma_sandbox.QueuedQuestion
---@field question flemma_sandbox.Question
---@field cb fun(answer: flemma_sandbox.Answer)

---@type flemma_sandbox.QueuedQuestion[]
local queue = {}
---@type { item: flemma_sandbox.QueuedQuestion, close: fun(), answered: boolean }|nil
local current

--- Answers the shown question (once) and shows the next one.
local function settle(answer)
  local shown = current
  if not shown or shown.answered then
    return
  end
  shown.answered = true
  current = nil
  shown.close()
  local item = shown.item
  local key = item.question.remember_key
  if answer == "always" and key then
    remembered[key] = true
    -- identical questions already waiting get the same answer
    for i = #queue, 1, -1 do
      if queue[i].question.remember_key == key then
        local same = table.remove(queue, i)
        vim.schedule(function()
          same.cb("always")
        end)
      end
    end
  end
  item.cb(answer)
  vim.schedule(M.show_next)
end

--- Shows a question; returns at once. The answer arrives through cb.
--- Specs replace this function with a scripted user; it must call
--- respond(answer) once and return a function that withdraws the question.
---@param question flemma_sandbox.Question
---@param respond fun(answer: flemma_sandbox.Answer)
---@param position string|nil e.g. "question 1 of 3"
---@return fun() close
function M.prompt(question, respond, position)
  local view = window.open(question, position, respond)
  M.view = view
  local closing = false
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = view.buf,
    once = true,
    callback = function()
      if not closing then
        -- closed by the user without an answer: no
        vim.schedule(function()
          respond("deny")
        end)
      end
    end,
  })
  -- the answers first: a narrow screen cuts the call's name, not them
  require("flemma_sandbox.base.notice").say(
    string.format(
      ":FlemmaSandbox approve%s | deny (%s%s)",
      question.can_remember and " | approve-always" or "",
      question.tool or "a call",
      question.id and (" " .. question.id) or ""
    )
  )
  return function()
    closing = true
    M.view = nil
    window.close(view)
  end
end

function M.show_next()
  if current or #queue == 0 then
    return
  end
  local item = table.remove(queue, 1)
  local q = item.question
  if q.remember_key and remembered[q.remember_key] then
    item.cb("always")
    return M.show_next()
  end
  q.can_remember = q.can_remember or q.remember_key ~= nil
  local shown = { item = item, answered = false, close = function() end }
  current = shown
  local position = #queue > 0 and string.format("%d more waiting", #queue) or nil
  local ok, close = pcall(M.prompt, q, function(answer)
    if current == shown then
      settle(answer)
    end
  end, position)
  if not ok then
    -- a window that cannot open must not block the queue: the call is refused
    current = nil
    vim.notify("flemma-sandbox: cannot show the question: " .. tostring(close), vim.log.levels.ERROR)
    item.cb("deny")
    return M.show_next()
  end
  if current == shown and not shown.answered then
    shown.close = close or function() end
  end
end

--- Asks, one question at a time, in the order asked.
---@param question flemma_sandbox.Question
---@param cb fun(answer: flemma_sandbox.Answer)
function M.ask(question, cb)
  queue[#queue + 1] = { question = question, cb = cb }
  M.show_next()
end

--- Answers the question on screen ("once", "always" where offered, or
--- "deny"), as :FlemmaSandbox approve | approve-always | deny do.
---@param answer "once"|"always"|"deny"
---@return boolean answered, string|nil why not
function M.answer(answer)
  if not current then
    return false, "no question is waiting"
  end
  if answer == "always" and not current.item.question.can_remember then
    return false, "this question cannot be answered with always; approve it once or deny it"
  end
  settle(answer)
  return true
end

--- Moves the cursor into the question's window.
---@return boolean
function M.focus()
  if not (current and M.view) then
    return false
  end
  window.focus(M.view)
  return true
end

--- Withdraws the questions of an owner (a cancelled call): they are
--- answered "cancelled" and the shown one closes.
---@param owner string
---@return integer count
function M.cancel(owner)
  local n = 0
  for i = #queue, 1, -1 do
    if queue[i].question.owner == owner then
      local item = table.remove(queue, i)
      item.cb("cancelled")
      n = n + 1
    end
  end
  if current and current.item.question.owner == owner then
    settle("cancelled")
    n = n + 1
  end
  return n
end

--- The question on screen and how many wait behind it.
---@return flemma_sandbox.Question|nil, integer
function M.pending()
  return current and current.item.question, #queue
end

--- The configured level for a tool in a buffer (a name this plugin used
--- before it took Flemma's, read_file or write_file, still counts).
---@param tool string
---@param bufnr integer|nil
---@return "allow"|"ask"|"deny"
function M.level(tool, bufnr)
  local approval = sandbox.resolve_config(bufnr).approval or {}
  local legacy = ({ read = "read_file", write = "write_file" })[tool]
  return (legacy and approval[legacy]) or approval[tool] or "ask"
end

--- Decides whether a call may run at `level`. cb(true) or cb(false, reason).
---@param question flemma_sandbox.Question
---@param level "allow"|"ask"|"deny"
---@param on_phase fun(phase: string) told "waiting" when the user is asked
---@param cb fun(allowed: boolean, reason: string|nil)
function M.decide(question, level, on_phase, cb)
  if level == "deny" then
    return cb(false, "the approval setting for " .. tostring(question.tool) .. " is deny")
  elseif level == "allow" then
    return cb(true)
  end
  if question.remember_key and remembered[question.remember_key] then
    return cb(true)
  end
  on_phase("waiting")
  M.ask(question, function(answer)
    if answer == "once" or answer == "always" then
      cb(true)
    else
      cb(false, answer == "cancelled" and "cancelled by the user" or "the user declined")
    end
  end)
end

--- Forgets the session's "always" answers and drops every question (for specs).
function M.reset()
  remembered = {}
  queue = {}
  if current then
    current.answered = true
    current.close()
  end
  current = nil
end

return M
