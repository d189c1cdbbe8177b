--- What a copy's view shows of the user's tree besides the copy (clone
--- mode). The user's objects of each submodule the copy holds, read-only.
--- The ignored folders: the folders git ignores at a repository's
--- top (node_modules/, target/, .venv/) are not copied; the view shows the
--- user's own there. Where bwrap mounts overlays (0.11 and later, on a
--- kernel that allows them in a user namespace: probed), copy-on-write: the
--- user's folder below a layer in memory that lasts as long as the view
--- (a chat's live sandbox, or one call), so what a command changes there
--- is the sandbox's and the user's folder is never written. (A layer kept
--- in the chat's folder would outlive the sandbox, but the kernel refuses
--- to copy a file up into it from a command of a live sandbox: EPERM.)
--- Elsewhere read-only.
local core = require("flemma_sandbox.core")
local workspace = require("flemma_sandbox.policy.clone_plan")

local M = {}

--- The user's objects of each submodule copied with the copy (listed by
--- the copy's making, in the chat's workspace folder), where the
--- submodule copy's alternates name them: a folder in the copy reached
--- through no link (the sandbox may have replaced the submodule's folder).
---@param space flemma_sandbox.Workspace
---@return string[] options
local function submodule_objects(space)
  local out = {}
  for _, sub in ipairs(workspace.submodules(space)) do
    local at = space.clone .. "/" .. sub.path .. "/.git/" .. workspace.USER_OBJECTS
    if core.resolve(at, "/") == at and core.file_type(sub.objects) == "directory" then
      vim.list_extend(
        out,
        { "--ro-bind", sub.objects, space.top .. "/" .. sub.path .. "/.git/" .. workspace.USER_OBJECTS }
      )
    end
  end
  return out
end

--- The view's options for what it shows of the user's tree in a copy:
--- ignored folders, submodules' objects.
---@param space flemma_sandbox.Workspace
---@param overlay boolean whether this bwrap mounts overlays
---@return string[]
function M.view_options(space, overlay)
  local out = submodule_objects(space)
  for _, name in ipairs(workspace.ignored(space)) do
    local path = space.top .. "/" .. name
    if overlay then
      vim.list_extend(out, { "--overlay-src", path, "--tmp-overlay", path })
    else
      vim.list_extend(out, { "--ro-bind", path, path })
    end
  end
  return out
end

return M
