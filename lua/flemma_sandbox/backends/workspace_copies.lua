--- Clone mode's copies (policy/clone_plan.lua): made on the host, in the
--- git bwrap (backends/git_box.lua) that sees the user's repository
--- read-only and the chat's workspace folder; shown to the sandbox at the
--- repository's own path by a view in front of the helper (view_argv).
local core = require("flemma_sandbox.core")
local process = require("flemma_sandbox.base.process")
local git_box = require("flemma_sandbox.backends.git_box")
local hides = require("flemma_sandbox.backends.workspace_hidden")
local surroundings = require("flemma_sandbox.base.surroundings")
local workspace = require("flemma_sandbox.policy.clone_plan")

local M = {}

--- Copies being made in the background: the callbacks waiting for each.
---@type table<string, fun(err: string|nil)[]>
local making = {}
--- Copies being synced: the callbacks of the syncs asked meanwhile.
---@type table<string, fun(err: string|nil)[]>
local syncing = {}

-- The copy's making: its arguments and what it does are said in the script.
local CREATE = "workspace_create.sh"

-- The sync's first step: its arguments and what it does are said in the script.
local SYNC_COPY = "workspace_sync_copy.sh"
local MARK_APPLIED = "workspace_mark_applied.sh"

---@class flemma_sandbox.WorkspaceSpec
---@field bwrap string
---@field top string
---@field clone string
---@field hidden string[] hidden paths in the repository (shown empty to git)
---@field secrets string[] secret_files

--- The spec of a workspace for a resolved policy.
---@param space flemma_sandbox.Workspace
---@param resolved flemma_sandbox.ResolvedPolicy
---@param bwrap string
---@return flemma_sandbox.WorkspaceSpec
function M.spec(space, resolved, bwrap)
  local hidden = {}
  for _, path in ipairs(resolved.deny_paths or {}) do
    if core.is_within(path, space.top) then
      hidden[#hidden + 1] = path
    end
  end
  local scan = resolved.secret_scan
  return {
    bwrap = bwrap,
    top = space.top,
    clone = space.clone,
    hidden = hidden,
    secrets = scan and scan.patterns or {},
  }
end

--- The argv that makes a copy (its folder's parent made first, 0700).
---@param spec flemma_sandbox.WorkspaceSpec
---@return string[]|nil argv, string|nil err
function M.create_argv(spec)
  local parent, err = hides.write_lists(spec)
  if not parent then
    return nil, err
  end
  if core.file_type(parent .. "/empty") ~= "file" then
    core.write_atomic(parent, "empty", "", 384)
  end
  local binds = { "--ro-bind", spec.top, spec.top }
  vim.list_extend(binds, git_box.hidden_covers(spec.hidden, parent .. "/empty"))
  vim.list_extend(binds, { "--bind", parent, parent })
  local name, email = hides.user_identity(spec.top)
  return git_box.script_argv(
    spec.bwrap,
    binds,
    CREATE,
    { spec.top, spec.clone, parent .. "/secrets", spec.clone .. ".hidden", name, email }
  )
end

--- The binds of the git bwrap that works on a copy: the copy at the
--- repository's path as the sandbox sees it, the user's objects where
--- its alternates name them, the user's git folder at /user.git; only
--- one of the copy and the user's git folder is ever writable.
---@param spec flemma_sandbox.WorkspaceSpec
---@param copy_rw boolean
---@param user_rw boolean
---@return string[]
function M.copy_binds(spec, copy_rw, user_rw)
  return {
    copy_rw and "--bind" or "--ro-bind",
    spec.clone,
    spec.top,
    "--ro-bind",
    spec.top .. "/.git/objects",
    spec.top .. "/.git/" .. workspace.USER_OBJECTS,
    user_rw and "--bind" or "--ro-bind",
    spec.top .. "/.git",
    "/user.git",
  }
end

--- Brings the copy's work to the user's repository as
--- refs/remotes/sandbox-NAME/* (branches, wip, base) and the user's
--- branches to the copy, in the background; done(err). A ref whose new
--- commits change or delete a file the copy hides is held back
--- (backends/workspace_hidden.lua), and a note says so.
---@param spec flemma_sandbox.WorkspaceSpec
---@param name string the chat's name
---@param done fun(err: string|nil)
function M.sync(spec, name, done)
  if not M.exists(spec.clone) then
    return done(nil)
  end
  -- one sync of a copy at a time; those asked meanwhile are one more after
  local running = syncing[spec.clone]
  if running then
    table.insert(running, done)
    return
  end
  syncing[spec.clone] = {}
  local function finish(why)
    local again = syncing[spec.clone]
    syncing[spec.clone] = nil
    done(why)
    if #again > 0 then
      M.sync(spec, name, function(err)
        for _, fn in ipairs(again) do
          fn(err)
        end
      end)
    end
  end
  local parent = hides.write_lists(spec)
  if not parent then
    return finish("could not write the lists of the chat's copy of " .. spec.top)
  end
  local function run(argv, word, next_step)
    local started = surroundings.output_in_background(argv[1], vim.list_slice(argv, 2), function(out, errs)
      if git_box.answer(out, word) then
        return next_step(out)
      end
      if not M.exists(spec.clone) then
        return finish(nil) -- discarded or deleted meanwhile: nothing to sync
      end
      finish("could not sync the chat's copy of " .. spec.top .. ": " .. out .. errs)
    end)
    if not started then
      finish("could not start bwrap to sync the chat's copy of " .. spec.top)
    end
  end
  local copy_argv = git_box.script_argv(spec.bwrap, M.copy_binds(spec, true, false), SYNC_COPY, { spec.top, name })
  run(copy_argv, "copied", function(copied)
    if git_box.answer(copied, "copied").same == true then
      return finish(nil) -- the user's repository has the copy's refs as they are
    end
    run(hides.sync_user_argv(spec, parent, name, M.copy_binds(spec, false, true)), "synced", function(out)
      hides.held_note(out)
      finish(nil)
    end)
  end)
end

--- Makes the copy's refs/flemma/base its refs/flemma/wip (what was just
--- brought into the user's tree); waits.
---@param spec flemma_sandbox.WorkspaceSpec
---@return boolean
function M.mark_applied(spec)
  local argv = git_box.script_argv(spec.bwrap, M.copy_binds(spec, true, false), MARK_APPLIED, { spec.top })
  return git_box.answer((process.run(argv)), "marked") ~= nil
end

--- Whether a copy is there (made whole).
---@param clone string
---@return boolean
function M.exists(clone)
  return core.file_type(clone .. "/.git/" .. workspace.USER_OBJECTS) == "directory"
end

--- How long a call waits for a copy being made in the background.
M.MAKE_WAIT_MS = 120000

--- Makes the copy now unless it is there; the editor waits (wrap_command
--- is synchronous; tool calls make it in the background first, ensure()).
---@param spec flemma_sandbox.WorkspaceSpec
---@return boolean|nil ok, string|nil err
function M.ensure_now(spec)
  if M.exists(spec.clone) then
    return true
  end
  if making[spec.clone] then
    -- made in the background since the chat's request: waited for (the
    -- loop runs meanwhile, so that job can end)
    local made = not vim.in_fast_event()
      and vim.wait(M.MAKE_WAIT_MS, function()
        return not making[spec.clone]
      end, 20)
    if made and M.exists(spec.clone) then
      return true
    end
    return nil, "flemma-sandbox: the chat's copy of " .. spec.top .. " is being made; try again in a moment"
  end
  local argv, err = M.create_argv(spec)
  if not argv then
    return nil, err
  end
  local out = process.run(argv)
  if not git_box.answer(out, "created") or not M.exists(spec.clone) then
    return nil, "flemma-sandbox: could not make the chat's copy of " .. spec.top .. ": " .. out
  end
  return true
end

--- Makes the copy in the background unless it is there; done(err).
---@param spec flemma_sandbox.WorkspaceSpec
---@param done fun(err: string|nil)
function M.ensure(spec, done)
  if M.exists(spec.clone) then
    return done(nil)
  end
  -- calls that start together wait for the one copy being made
  if making[spec.clone] then
    table.insert(making[spec.clone], done)
    return
  end
  local argv, err = M.create_argv(spec)
  if not argv then
    return done(err)
  end
  making[spec.clone] = { done }
  local function finish(why)
    local waiting = making[spec.clone]
    making[spec.clone] = nil
    for _, fn in ipairs(waiting) do
      fn(why)
    end
  end
  local started = surroundings.output_in_background(argv[1], vim.list_slice(argv, 2), function(out, errs)
    if git_box.answer(out, "created") and M.exists(spec.clone) then
      return finish(nil)
    end
    finish("could not make the chat's copy of " .. spec.top .. ": " .. out .. errs)
  end)
  if not started then
    finish("could not start bwrap to make the chat's copy of " .. spec.top)
  end
end

--- bwrap options of the view in front of the helper: each copy at its
--- repository's path; its ".git" a mount point (it cannot be moved
--- aside), its config, hooks, info (the exclude file that keeps secret
--- names out of what is synced) and alternates read-only, the user's
--- objects read-only where its alternates name them; the user's ignored
--- folders copy-on-write or read-only, and the user's objects of each
--- submodule where its copy's alternates name them
--- (backends/workspace_shown.lua).
--- The sources are the host's: the user's tree itself is nowhere in this
--- view but for those folders.
---@param workspaces flemma_sandbox.Workspace[]
---@param overlay boolean whether this bwrap mounts overlays
---@return string[]
function M.view_options(workspaces, overlay)
  local out = { "--dev-bind", "/", "/" }
  for _, space in ipairs(workspaces) do
    local top, clone = space.top, space.clone
    vim.list_extend(out, { "--bind", clone, top, "--bind", clone .. "/.git", top .. "/.git" })
    vim.list_extend(out, require("flemma_sandbox.backends.workspace_shown").view_options(space, overlay))
    for _, name in ipairs({ "config", "hooks", "info", "objects/info" }) do
      if core.file_type(clone .. "/.git/" .. name) then
        vim.list_extend(out, { "--ro-bind", clone .. "/.git/" .. name, top .. "/.git/" .. name })
      end
    end
    vim.list_extend(out, { "--ro-bind", top .. "/.git/objects", top .. "/.git/" .. workspace.USER_OBJECTS })
  end
  return out
end

return M
