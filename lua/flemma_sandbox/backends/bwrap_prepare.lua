--- What the bubblewrap backend does before a call's wrap, in one step the
--- wrap path takes first (backends/init.lua wrap_resolved): the chat's own
--- folders, clone mode's copies, and its place among the running chats'
--- sandboxes. The wrap itself (backends/bwrap.lua) only computes the argv
--- and writes its plan files.
local chat_dirs = require("flemma_sandbox.policy.chat_dirs")
local client = require("flemma_sandbox.backends.helper")
local live = require("flemma_sandbox.backends.live")

local M = {}

---@class flemma_sandbox.Prepared what a call's preparation did that the wrap path says
---@field stopped_chat string|nil the chat whose sandbox was stopped for this one (sandboxes.max_running)

--- The chat's live sandbox folder when its calls share one (nil when not).
---@param plan flemma_sandbox.CallPlan
---@return string|nil dir, string|nil err
function M.live_dir(plan)
  if not live.wanted(plan) then
    return nil, nil
  end
  local dir, derr = live.dir_for(plan.chat)
  if not dir then
    return nil, "flemma-sandbox: no state folder for the chat's sandbox: " .. tostring(derr)
  end
  return dir, nil
end

--- Each copy of clone mode made unless it is there (the editor waits when
--- a tool call did not make it already, backends/workspace_copies.lua).
---@param plan flemma_sandbox.CallPlan
---@param backend_config flemma_sandbox.BwrapConfig|table
---@return boolean|nil ok, string|nil err
local function ensure_copies(plan, backend_config)
  local workspace = require("flemma_sandbox.backends.workspace_copies")
  local bwrap = backend_config.path or "bwrap"
  for _, space in ipairs(plan.workspaces or {}) do
    local ok, err = workspace.ensure_now(workspace.spec(space, plan, bwrap))
    if not ok then
      return nil, err
    end
  end
  return true, nil
end

--- Before the wrap: the chat's own folders, made (and checked: folders,
--- not links) before bwrap binds them; clone mode's copies; and, for a
--- chat's live sandbox, its use noted, which may stop another chat's
--- (sandboxes.max_running).
---@param plan flemma_sandbox.CallPlan
---@param backend_config flemma_sandbox.BwrapConfig|table
---@return flemma_sandbox.Prepared|nil prepared, string|nil err
function M.prepare(plan, backend_config)
  local programs, herr = client.programs()
  if not programs then
    return nil, herr
  end
  if plan.chat and plan.persist_subs and #plan.persist_subs > 0 then
    local ok, perr = chat_dirs.prepare(plan.chat, plan.persist_subs, plan.persist_copies)
    if not ok then
      return nil, perr
    end
  end
  local ok, cerr = ensure_copies(plan, backend_config or {})
  if not ok then
    return nil, cerr
  end
  local live_dir, derr = M.live_dir(plan)
  if derr then
    return nil, derr
  end
  local stopped_chat = nil
  if live_dir then
    stopped_chat = live.touch(programs.tool, live_dir, plan.chat, plan.sandboxes)
  end
  return { stopped_chat = stopped_chat }, nil
end

return M
