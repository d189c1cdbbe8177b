--- What happens around a standalone tool call that can write: in direct
--- mode a checkpoint first (checkpoints.lua, so :FlemmaSandbox undo can put
--- the tree back); in clone mode the chat's copies made first and synced
--- to the user's repository after (workspaces.lua).
local notice = require("flemma_sandbox.notice")

local M = {}

local checkpoint_warned = false

--- Before a call: run() once the checkpoint is taken or the copies are
--- made; the call runs either way (a failed checkpoint is said once per
--- session).
---@param name string
---@param request table the tool's prepared request (its lines say what it does)
---@param bufnr integer|nil
---@param run fun()
function M.before(name, request, bufnr, run)
  local checkpoints = require("flemma_sandbox.checkpoints")
  if not checkpoints.WRITING_TOOLS[name] then
    return run()
  end
  local workspaces = require("flemma_sandbox.workspaces")
  if workspaces.is_clone(bufnr) then
    -- off the editor's thread (wrap_command would make them while it waits)
    return workspaces.ensure(bufnr, function(errors)
      if #errors > 0 then
        notice.say(errors[1], vim.log.levels.WARN)
      end
      run()
    end)
  end
  local label = name .. ": " .. tostring((request.lines or {})[1] or ""):sub(1, 200)
  checkpoints.take(bufnr, label, function(errors)
    if #errors > 0 and not checkpoint_warned then
      checkpoint_warned = true
      notice.say("no checkpoint before this call (undo cannot go back past it): " .. errors[1], vim.log.levels.WARN)
    end
    run()
  end)
end

--- After a call (its result already given): in clone mode the copies'
--- work goes to the user's repository as refs/remotes/sandbox-NAME/*.
---@param name string
---@param bufnr integer|nil
function M.after(name, bufnr)
  local workspaces = require("flemma_sandbox.workspaces")
  if require("flemma_sandbox.checkpoints").WRITING_TOOLS[name] and workspaces.is_clone(bufnr) then
    workspaces.sync(bufnr, function(errors)
      if #errors > 0 then
        notice.say(errors[1], vim.log.levels.WARN)
      end
    end)
  end
end

return M
