--- Approval of tool calls: per tool "allow", "ask" or "deny" (setup() or
--- flemma.opt.approval), answers remembered for the session where that is
--- safe, and a question window that never blocks the editor.
local sandbox = require("flemma_sandbox")

local M = {}

---@type table<string, boolean> remembered "always" answers, by key
local remembered = {}

---@alias flemma_sandbox.Answer "once"|"always"|"deny"

---@class flemma_sandbox.Question
---@field title string
---@field lines string[] what is being asked about (command, folder, network)
---@field can_remember boolean offer "always"

--- Questions wait here while another one is shown.
local queue = {}
local showing = false

local function show_next()
  if showing or #queue == 0 then
    return
  end
  showing = true
  local item = table.remove(queue, 1)
  M.prompt(item.question, function(answer)
    showing = false
    item.cb(answer)
    vim.schedule(show_next)
  end)
end

--- Shows a question in a floating window: y = yes once, a = always (when
--- offered), n or <Esc> or closing the window = no. Returns at once; the
--- answer arrives through cb. Specs replace this function with a scripted
--- user.
---@param question flemma_sandbox.Question
---@param cb fun(answer: flemma_sandbox.Answer)
function M.prompt(question, cb)
  local footer = question.can_remember and "[y] yes, once   [a] always   [n] no" or "[y] yes, once   [n] no"
  local lines = { question.title, "" }
  vim.list_extend(lines, question.lines)
  vim.list_extend(lines, { "", footer })
  local buf, win = require("flemma_sandbox.nvim.float").open(lines, 2)
  local answered = false
  local function answer(value)
    if answered then
      return
    end
    answered = true
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
    cb(value)
  end
  local keys = { y = "once", n = "deny", ["<Esc>"] = "deny", q = "deny" }
  if question.can_remember then
    keys.a = "always"
  end
  for key, value in pairs(keys) do
    vim.keymap.set("n", key, function()
      answer(value)
    end, { buffer = buf, nowait = true })
  end
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      vim.schedule(function()
        answer("deny")
      end)
    end,
  })
end

--- Asks, one question at a time.
---@param question flemma_sandbox.Question
---@param cb fun(answer: flemma_sandbox.Answer)
function M.ask(question, cb)
  queue[#queue + 1] = { question = question, cb = cb }
  show_next()
end

--- The configured level for a tool in a buffer.
---@param tool string
---@param bufnr integer|nil
---@return "allow"|"ask"|"deny"
function M.level(tool, bufnr)
  local cfg = sandbox.resolve_config(bufnr)
  return (cfg.approval or {})[tool] or "ask"
end

---@class flemma_sandbox.ApprovalRequest
---@field tool string
---@field bufnr integer|nil
---@field lines string[] shown to the user
---@field remember_key string|nil an "always" answer is kept under this key

--- Decides whether a call may run. cb(true) or cb(false, reason).
---@param request flemma_sandbox.ApprovalRequest
---@param cb fun(allowed: boolean, reason: string|nil)
function M.decide(request, cb)
  local level = M.level(request.tool, request.bufnr)
  if level == "deny" then
    return cb(false, "the approval setting for " .. request.tool .. " is deny")
  elseif level == "allow" then
    return cb(true)
  end
  if request.remember_key and remembered[request.remember_key] then
    return cb(true)
  end
  M.ask({
    title = "Allow this " .. request.tool .. " call?",
    lines = request.lines,
    can_remember = request.remember_key ~= nil,
  }, function(answer)
    if answer == "always" and request.remember_key then
      remembered[request.remember_key] = true
    end
    if answer == "deny" then
      cb(false, "the user declined")
    else
      cb(true)
    end
  end)
end

--- Forgets the session's "always" answers (for specs).
function M.reset()
  remembered = {}
  queue = {}
  showing = false
end

return M
