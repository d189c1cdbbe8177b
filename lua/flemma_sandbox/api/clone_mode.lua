--- Clone mode from above (sandboxes.workspace = "clone"): the copies of a
--- chat's repositories (policy/clone_plan.lua, backends/workspace_copies.lua),
--- for tools, the UI and the bridge.
local core = require("flemma_sandbox.core")
local notice = require("flemma_sandbox.base.notice")

local M = {}

--- Syncs under way (a caller about to remove a chat's folders waits).
M.syncing = 0

--- A Flemma chat's clone mode as Flemma's config gives it (nil: the
--- standalone config decides; see flemma/clone_tools.lua).
---@param bufnr integer|nil
---@return flemma_sandbox.FlemmaWorkspaceScope|false|nil
local function flemma_scope(bufnr)
  local bridge = require("flemma_sandbox.base.hooks").bridge
  if bridge and bridge.workspace_scope then
    return bridge.workspace_scope(bufnr)
  end
  return nil
end

--- Whether a buffer's chat works on copies.
---@param bufnr integer|nil
---@return boolean
function M.is_clone(bufnr)
  local scope = flemma_scope(bufnr)
  if scope ~= nil then
    return scope ~= false
  end
  return require("flemma_sandbox").resolve_config(bufnr).sandboxes.workspace == "clone"
end

--- The copies of a buffer's chat (none in direct mode).
---@param bufnr integer|nil
---@return flemma_sandbox.Workspace[], flemma_sandbox.ResolvedPolicy|nil, string|nil bwrap
function M.of(bufnr)
  local scope = flemma_scope(bufnr)
  if scope ~= nil then
    if not scope then
      return {}, nil, nil
    end
    return require("flemma_sandbox.policy.clone_plan").of(scope.resolved, scope.sandboxes), scope.resolved, scope.bwrap
  end
  local sandbox = require("flemma_sandbox")
  local cfg = sandbox.resolve_config(bufnr)
  local ok, resolved = pcall(sandbox.get_policy, bufnr)
  if not ok or type(resolved) ~= "table" then
    return {}, nil
  end
  return require("flemma_sandbox.policy.clone_plan").of(resolved, cfg.sandboxes),
    resolved,
    cfg.backends.bwrap.path or "bwrap"
end

--- Makes the copies of a buffer's chat in the background unless they are
--- there (a notice when that takes over a second); done(errors).
---@param bufnr integer|nil
---@param done fun(errors: string[])
function M.ensure(bufnr, done)
  local specs = M.specs(bufnr)
  local workspace = require("flemma_sandbox.backends.workspace_copies")
  local errors, left = {}, #specs
  if left == 0 then
    return done(errors)
  end
  local uv = require("flemma_sandbox.base.process").uv()
  local slow = uv.new_timer()
  slow:start(1000, 0, function()
    vim.schedule(function()
      if left > 0 then
        notice.say('making this chat\'s copy of the repository (sandboxes.workspace = "clone")...')
      end
    end)
  end)
  for _, spec in ipairs(specs) do
    workspace.ensure(spec, function(err)
      errors[#errors + 1] = err
      left = left - 1
      if left == 0 then
        slow:stop()
        slow:close()
        done(errors)
      end
    end)
  end
end

--- Makes the copies of a buffer's chat now unless they are there (the
--- editor waits: for a call that must run now, Flemma's file tools).
---@param bufnr integer|nil
---@return flemma_sandbox.WorkspaceSpec[] specs, string|nil err
function M.ensure_now(bufnr)
  local specs = M.specs(bufnr)
  local workspace = require("flemma_sandbox.backends.workspace_copies")
  for _, spec in ipairs(specs) do
    local made, err = workspace.ensure_now(spec)
    if not made then
      return specs, err
    end
  end
  return specs, nil
end

--- The specs of a buffer's copies.
---@param bufnr integer|nil
---@return flemma_sandbox.WorkspaceSpec[], flemma_sandbox.ResolvedPolicy|nil
function M.specs(bufnr)
  local spaces, resolved, bwrap = M.of(bufnr)
  local workspace = require("flemma_sandbox.backends.workspace_copies")
  local out = {}
  for _, space in ipairs(spaces) do
    out[#out + 1] = workspace.spec(space, resolved, bwrap)
  end
  return out, resolved
end

--- Runs fn(spec, next_one) for each spec in turn; done(errors).
local function each(specs, fn, done)
  local errors, i = {}, 0
  local function next_one(err)
    errors[#errors + 1] = err
    i = i + 1
    if i > #specs then
      return done(errors)
    end
    fn(specs[i], next_one)
  end
  next_one(nil)
end

--- Brings each copy's work into the user's repository as
--- refs/remotes/sandbox-NAME/* (NAME: the chat's), and the user's branches
--- into the copy, in the background; done(errors).
---@param bufnr integer|nil
---@param done fun(errors: string[])
function M.sync(bufnr, done)
  local specs, resolved = M.specs(bufnr)
  local workspace = require("flemma_sandbox.backends.workspace_copies")
  M.syncing = M.syncing + 1
  each(specs, function(spec, next_one)
    workspace.sync(spec, resolved.chat.name, next_one)
  end, function(errors)
    M.syncing = M.syncing - 1
    done(errors)
  end)
end

--- What the copies changed since they started (or the last apply), once
--- synced; done(changes, errors).
---@param bufnr integer|nil
---@param done fun(changes: flemma_sandbox.Change[], errors: string[])
function M.changes(bufnr, done)
  M.sync(bufnr, function(errors)
    local review = require("flemma_sandbox.api.review")
    local specs, resolved = M.specs(bufnr)
    local all = {}
    for _, spec in ipairs(specs) do
      vim.list_extend(all, review.changes_in(spec.top, resolved.chat.name))
    end
    done(all, errors)
  end)
end

--- Brings the copies' changes into the user's working tree (three-way,
--- nothing committed); done(result, errors).
---@param bufnr integer|nil
---@param done fun(result: flemma_sandbox.ApplyResult, errors: string[])
function M.apply(bufnr, done)
  M.changes(bufnr, function(changes, errors)
    local review = require("flemma_sandbox.api.review")
    local sandbox = require("flemma_sandbox")
    local result = { applied = {}, conflicts = {}, skipped = {} }
    local function writable(path)
      return sandbox.is_path_writable(path, bufnr)
    end
    for _, c in ipairs(changes) do
      review.apply_one(c, writable, result)
    end
    local specs, resolved = M.specs(bufnr)
    local workspace = require("flemma_sandbox.backends.workspace_copies")
    for _, spec in ipairs(specs) do
      if workspace.exists(spec.clone) then
        if not workspace.mark_applied(spec) then
          errors[#errors + 1] = "could not mark the copy of " .. spec.top .. " as applied"
        end
        review.mark_applied(spec.top, "refs/remotes/sandbox-" .. resolved.chat.name)
      end
    end
    done(result, errors)
  end)
end

--- Throws the copies away (the chat's sandbox stopped first, their work
--- kept in the user's repository for 14 days (backends/workspace_keep.lua),
--- the copy's refs removed from the user's repository); the next call makes
--- them again from the user's tree as it is then. Nothing is removed when
--- the work could not be kept. done(errors, kept).
---@param bufnr integer|nil
---@param done fun(errors: string[], kept: { top: string, ref: string }[])
function M.discard(bufnr, done)
  local specs, resolved = M.specs(bufnr)
  local chat = resolved and resolved.chat
  require("flemma_sandbox.backends.live").stop_chat(chat, function()
    local items = {}
    -- a command line sandbox's chat file is its folder's .cli
    local cli = (chat.chat or ""):match("/%.cli$") ~= nil
    for _, spec in ipairs(specs) do
      items[#items + 1] = { spec = spec, name = chat.name, cli = cli }
    end
    require("flemma_sandbox.backends.workspace_keep").keep_all(items, function(kept, errors)
      if #errors > 0 then
        return done(errors, kept)
      end
      for _, spec in ipairs(specs) do
        require("flemma_sandbox.api.review").forget(spec.top, chat.name)
        os.remove(spec.clone .. ".ignored")
        os.remove(spec.clone .. ".submodules")
        if core.file_type(spec.clone) == "directory" then
          if
            not require("flemma_sandbox.base.process").quietly({ "rm", "-rf", "--one-file-system", "--", spec.clone })
          then
            errors[#errors + 1] = "could not remove " .. spec.clone
          end
        end
      end
      done(errors, kept)
    end)
  end)
end

--- The copies of a buffer's chat whose work is not applied (as last
--- synced), "CHAT: the copy of TOP" each.
---@param bufnr integer|nil
---@return string[]
function M.unapplied(bufnr)
  local _, resolved = M.specs(bufnr)
  local chat = resolved and resolved.chat
  if not chat then
    return {}
  end
  return require("flemma_sandbox.backends.workspace_kept").unapplied_under(chat.dir)
end

--- The copy of a repository, if there is one.
---@param bufnr integer|nil
---@param top string
---@return string|nil
function M.clone_of(bufnr, top)
  for _, space in ipairs(M.of(bufnr)) do
    if space.top == top and core.file_type(space.clone) == "directory" then
      return space.clone
    end
  end
  return nil
end

return M
