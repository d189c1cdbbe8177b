--- Clone mode (sandboxes.workspace = "clone"): a chat's sandbox works on
--- its own copy of each git repository among the writable projects, a
--- `git clone --shared` kept in the chat's folder and shown at the
--- repository's own path; the user's tree is out of its reach. Here: which
--- repositories, where their copies are, and what that changes in a
--- call's plan. Made by backends/workspace_copies.lua.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")

local M = {}

--- Inside the copy's ".git": where the user's objects are shown read-only
--- (the copy's alternates name it, at a path that is the same in every
--- view of the copy).
M.USER_OBJECTS = "flemma-user-objects"

---@class flemma_sandbox.Workspace
---@field top string the repository's work tree (real path), where the copy is shown
---@field clone string the copy's folder in the chat's folder

--- The repository a writable root is in: the nearest folder at or above
--- it with a ".git" folder (not a link, not a file) that holds a HEAD;
--- nil outside git.
---@param root string real path
---@return string|nil top, string|nil rel the root below the top ("." for the top itself)
function M.repository_of(root)
  local dir = root
  while dir and dir ~= "" do
    if core.file_type(dir .. "/.git") == "directory" and core.file_type(dir .. "/.git/HEAD") == "file" then
      return dir, dir == root and "." or root:sub(#dir + 2)
    end
    dir = dir:match("^(.*)/[^/]*$")
  end
  return nil, nil
end

--- The copy of a repository in a chat's folder.
---@param chat_dir string
---@param top string
---@return string
function M.clone_for(chat_dir, top)
  local name = (top:match("([^/]+)$") or "root"):gsub("[^%w._-]", "_")
  return chat_dir .. "/workspace/" .. name .. "-" .. surroundings.sha256(top):sub(1, 12)
end

--- The workspaces of a resolved policy in clone mode (none in direct mode,
--- for a buffer that is no chat, or outside git).
---@param resolved flemma_sandbox.ResolvedPolicy
---@param sandboxes flemma_sandbox.SandboxesConfig|nil
---@return flemma_sandbox.Workspace[]
function M.of(resolved, sandboxes)
  local out, seen = {}, {}
  if not (sandboxes and sandboxes.workspace == "clone" and resolved.chat) then
    return out
  end
  for _, root in ipairs(resolved.project_roots or {}) do
    local top = M.repository_of(root)
    if top and not seen[top] then
      seen[top] = true
      out[#out + 1] = { top = top, clone = M.clone_for(resolved.chat.dir, top) }
    end
  end
  return out
end

--- The lines of a list the copy's making wrote beside it, in the chat's
--- folder that no sandbox sees (none when there is no such file).
---@param path string
---@return string[]
local function lines_of(path)
  local out = {}
  local f = io.open(path, "r")
  if f then
    for line in f:lines() do
      out[#out + 1] = line
    end
    f:close()
  end
  return out
end

--- At most this many ignored folders are shown in a copy.
M.IGNORED_LIMIT = 32

--- The folders at the repository's top that git ignores (listed when the
--- copy was made), each a plain name of a folder (not a link) in the
--- user's tree now.
---@param space flemma_sandbox.Workspace
---@return string[]
function M.ignored(space)
  local out = {}
  for _, line in ipairs(lines_of(space.clone .. ".ignored")) do
    local name = line:match("^([^/]+)/$")
    local plain = name and name ~= "." and name ~= ".." and name ~= ".git"
    if plain and #out < M.IGNORED_LIMIT and core.file_type(space.top .. "/" .. name) == "directory" then
      out[#out + 1] = name
    end
  end
  return out
end

---@class flemma_sandbox.CopiedSubmodule
---@field path string relative to the repository's top
---@field objects string the user's objects folder of it

--- The submodules a copy holds copies of (listed when it was made, by
--- backends/workspace_copies.lua).
---@param space flemma_sandbox.Workspace
---@return flemma_sandbox.CopiedSubmodule[]
function M.submodules(space)
  local out = {}
  for _, line in ipairs(lines_of(space.clone .. ".submodules")) do
    local sub, objects = line:match("^([^\t]+)\t(/[^\t]+)$")
    if sub and not sub:find("%.%.") and sub:sub(1, 1) ~= "/" then
      out[#out + 1] = { path = sub, objects = objects }
    end
  end
  return out
end

---@class flemma_sandbox.CloneFields clone mode's part of a call's plan (policy/clone_plan.lua)
---@field workspaces flemma_sandbox.Workspace[] the chat's copies, at least one
---@field own_git string[] each copy's ".git" and its submodules': the sandbox's own
---@field ro_paths string[] the policy's, without the copies' git folders
---@field protected flemma_sandbox.Rule[] the same for the reasons
---@field pins string[] the same for the pins

--- Clone mode's fields of a call's plan (backends/call_plan.lua), new
--- tables, the resolved policy left as it is: each copy's ".git" and its
--- submodules' are the sandbox's own (writable, but for the copy's
--- config, hooks and alternates, which the view binds read-only), not
--- protected git folders. Nil in direct mode, for a buffer that is no
--- chat, or outside git.
---@param resolved flemma_sandbox.ResolvedPolicy
---@param sandboxes flemma_sandbox.SandboxesConfig|nil
---@return flemma_sandbox.CloneFields|nil
function M.fields(resolved, sandboxes)
  local spaces = M.of(resolved, sandboxes)
  if #spaces == 0 then
    return nil
  end
  local own_git = {}
  for _, space in ipairs(spaces) do
    own_git[#own_git + 1] = space.top .. "/.git"
    for _, sub in ipairs(M.submodules(space)) do
      own_git[#own_git + 1] = space.top .. "/" .. sub.path .. "/.git"
    end
  end
  local function is_own(path)
    for _, git_dir in ipairs(own_git) do
      if core.is_within(path, git_dir) then
        return true
      end
    end
    return false
  end
  local function keep(list, path_of)
    local out = {}
    for _, item in ipairs(list or {}) do
      if not is_own(path_of(item)) then
        out[#out + 1] = item
      end
    end
    return out
  end
  local function plain(p)
    return p
  end
  local function field(r)
    return r.path
  end
  return {
    workspaces = spaces,
    own_git = own_git,
    ro_paths = keep(resolved.ro_paths, plain),
    protected = keep(resolved.protected, field),
    pins = keep(resolved.pins, plain),
  }
end

return M
