--- What happens around a standalone tool call: it is numbered in its chat
--- and its end recorded (calls.lua); for one that can write, in direct
--- mode a checkpoint first (checkpoints.lua, so :FlemmaSandbox undo can put
--- the tree back); in clone mode the chat's copies made first and synced
--- to the user's repository after (api/clone_mode.lua).
local notice = require("flemma_sandbox.base.notice")

local M = {}

local checkpoint_warned = false

--- A standalone call waits in the main loop for what the first chat
--- started in the background, never on the editor's thread (calls.lua).
local READY = { when_ready = true }

--- Before a call: run(call) once it is started (calls.lua: its number in
--- the chat, and the checkpoint) or the copies are made; the call runs
--- either way (a failed checkpoint is said once per session).
---@param name string
---@param request table the tool's prepared request (its lines say what it does)
---@param bufnr integer|nil
---@param run fun(call: flemma_sandbox.Call)
function M.before(name, request, bufnr, run)
  local calls = require("flemma_sandbox.api.calls")
  local label = name .. ": " .. tostring((request.lines or {})[1] or ""):sub(1, 200)
  local workspaces = require("flemma_sandbox.api.clone_mode")
  local writing = require("flemma_sandbox.api.checkpoints").WRITING_TOOLS[name]
  if writing and workspaces.is_clone(bufnr) then
    -- off the editor's thread (wrap_command would make them while it waits)
    return workspaces.ensure(bufnr, function(errors)
      if #errors > 0 then
        notice.say(errors[1], vim.log.levels.WARN)
      end
      calls.start(bufnr, name, label, false, run, READY)
    end)
  end
  calls.start(bufnr, name, label, true, function(call, errors)
    if #errors > 0 and not checkpoint_warned then
      checkpoint_warned = true
      notice.say("no checkpoint before this call (undo cannot go back past it): " .. errors[1], vim.log.levels.WARN)
    end
    run(call)
  end, READY)
end

--- After a call in clone mode: the copies' work goes to the user's
--- repository as refs/remotes/sandbox-NAME/* (for Flemma's calls too, at
--- FlemmaToolFinished).
---@param name string
---@param bufnr integer|nil
function M.sync(name, bufnr)
  local workspaces = require("flemma_sandbox.api.clone_mode")
  if require("flemma_sandbox.api.checkpoints").WRITING_TOOLS[name] and workspaces.is_clone(bufnr) then
    workspaces.sync(bufnr, function(errors)
      if #errors > 0 then
        notice.say(errors[1], vim.log.levels.WARN)
      end
    end)
  end
end

--- After a standalone call: its end recorded (calls.lua), then deliver()
--- gives its result, then the clone-mode sync.
---@param name string
---@param bufnr integer|nil
---@param call flemma_sandbox.Call|nil
---@param result table|nil
---@param deliver fun()
function M.after(name, bufnr, call, result, deliver)
  require("flemma_sandbox.api.calls").ended(call, result, result and result.sandbox_runs, function()
    deliver()
    M.sync(name, bufnr)
  end)
end

return M
