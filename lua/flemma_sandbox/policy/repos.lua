--- The repositories in the writable projects, found by rule rather than
--- by a list: every ".git" at any depth, the git folders a ".git" file
--- points to, and core.hooksPath. All of it is read-only in the sandbox;
--- a ".git" that is new after a run goes to the quarantine.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")

local M = {}

local first_line = util.first_line

--- The gitdir (and common dir) a ".git" file points to: a worktree's or a
--- submodule's real git folder, which git reads config and hooks from.
---@param dot_git string the ".git" file
---@return string[] folders
local function linked_gitdirs(dot_git)
  local work_tree = dot_git:match("^(.*)/[^/]+$")
  local gitdir = (first_line(dot_git) or ""):match("^gitdir:%s*(.-)%s*$")
  local real = gitdir and core.resolve(gitdir, work_tree)
  if not real or core.file_type(real) ~= "directory" then
    return {}
  end
  local dirs = { real }
  local common = first_line(real .. "/commondir")
  common = common and core.resolve(common, real)
  if common and core.file_type(common) == "directory" then
    dirs[#dirs + 1] = common
  end
  return dirs
end

--- core.hooksPath from one git config file, or nil: read the way git
--- reads it (csrc/shared/git_config.c, which the helper uses too).
---@param file string
---@return string|nil
local function hooks_path_in(file)
  local f = io.open(file, "r")
  if not f then
    return nil
  end
  local text = f:read("*a") or ""
  f:close()
  return core.git_hooks_path(text)
end

--- The files a git config file includes ("[include]" and "[includeIf ...]"
--- sections' "path"), resolved as git resolves them: "~/" in the home
--- folder, a relative one beside the including file; the files those
--- include too (at most depth levels). Read loosely: a line taken for an
--- include that git would not take only protects one file more. Git reads
--- every key of an included file (core.fsmonitor, core.hooksPath, aliases)
--- as its own: one in a writable folder is code git on the host runs.
---@param file string
---@param home string|nil
---@param out table appended to (a list), and each path as a key
---@param depth? integer
local function includes_of(file, home, out, depth)
  depth = depth or 10
  -- a regular file alone, never waited on (a FIFO a command left there)
  local text = depth > 0 and core.read_opened(file, 1024 * 1024)
  if not text then
    return
  end
  local section
  for line in text:gmatch("[^\n]+") do
    local name, rest = line:match("^%s*%[%s*([%w%.%-]+)[^%]]*%](.*)$")
    if name then
      section, line = name:lower(), rest
    end
    local value = (section == "include" or section == "includeif") and line:match("^%s*[pP][aA][tT][hH]%s*=%s*(.-)%s*$")
    value = value and (value:match('^"([^"]*)"') or value:gsub("%s*[;#].*$", ""))
    if value and value ~= "" then
      value = value:gsub("^~/", (home or "~") .. "/")
      local path = core.resolve(value, file:match("^(.*)/[^/]+$") or "/")
      if path and not out[path] then
        out[#out + 1], out[path] = path, true -- each file read once: no loop, no blow-up
        includes_of(path, home, out, depth - 1)
      end
    end
  end
end

--- No repositories (the ".git/" rule removed from deny_write).
---@type flemma_sandbox.Repos
M.NONE = { dot_gits = {}, protect = {}, truncated = {}, configs = {} }

--- At most this many ".git" entries per project are protected.
M.REPO_LIMIT = 1000

---@class flemma_sandbox.Repos
---@field dot_gits string[] every ".git" (folder or file) found in the projects
---@field protect flemma_sandbox.Rule[] git folders and hook folders to keep read-only
---@field truncated string[] projects whose search stopped early
---@field configs string[] the git config files read (for core.hooksPath)
---@field user_hooks string|nil the user's own core.hooksPath ("~/" expanded; a relative one
--- is each repository's): the helper protects it in a repository made after the plan

--- Every repository in the projects: each ".git" at any depth (nested
--- repositories, submodules, vendored clones), the real gitdir and common
--- dir of a ".git" file, and the folder core.hooksPath names (in the
--- repository's config or the user's own).
---@param projects string[]
---@return flemma_sandbox.Repos
function M.find(projects)
  local out = { dot_gits = {}, protect = {}, truncated = {}, configs = {} }
  local home = surroundings.getenv("HOME")
  -- in git's order: ~/.gitconfig is read last, its value wins
  local user_configs = {
    (surroundings.getenv("XDG_CONFIG_HOME") or (home or "") .. "/.config") .. "/git/config",
    home and (home .. "/.gitconfig"),
  }
  local user_hooks
  for _, file in ipairs(user_configs) do
    user_hooks = file and hooks_path_in(file) or user_hooks
    out.configs[#out.configs + 1] = file
  end
  local user_included = {}
  for _, file in ipairs(user_configs) do
    includes_of(file, home, user_included)
  end
  for _, file in ipairs(user_included) do
    out.protect[#out.protect + 1] = { path = file, rule = "a file your git config includes", dir = false }
    out.configs[#out.configs + 1] = file
  end
  user_hooks = user_hooks and user_hooks:gsub("^~/", (home or "~") .. "/")
  out.user_hooks = user_hooks
  -- the same index the helper keeps for its own ".git" scans: a resolution
  -- after a run looks at each folder once (fstat) instead of reading it
  local index_dir = surroundings.state_dir("index")
  for _, root in ipairs(projects) do
    local found, truncated = core.find_names(root, { ".git" }, M.REPO_LIMIT, index_dir)
    if truncated then
      out.truncated[#out.truncated + 1] = root
    end
    for _, dot_git in ipairs(found or {}) do
      out.dot_gits[#out.dot_gits + 1] = dot_git
      local work_tree = dot_git:match("^(.*)/[^/]+$")
      local real = core.resolve(dot_git, "/")
      -- a ".git" that is a symlink protects the folder it points to
      local kind = real and core.file_type(real)
      local gitdirs = kind == "directory" and { real } or kind == "file" and linked_gitdirs(dot_git) or {}
      local rule = "a git folder of " .. work_tree
      for i, dir in ipairs(gitdirs) do
        out.protect[#out.protect + 1] = { path = dir, rule = i == 1 and rule or rule .. " (common dir)", dir = true }
      end
      local hooks, included = user_hooks, {}
      for _, dir in ipairs(gitdirs) do
        hooks = hooks_path_in(dir .. "/config") or hooks
        hooks = hooks_path_in(dir .. "/config.worktree") or hooks
        includes_of(dir .. "/config", home, included)
        includes_of(dir .. "/config.worktree", home, included)
      end
      for _, file in ipairs(included) do
        out.protect[#out.protect + 1] =
          { path = file, rule = "a file the git config of " .. work_tree .. " includes", dir = false }
        out.configs[#out.configs + 1] = file
      end
      if hooks then
        hooks = hooks:gsub("^~/", (home or "~") .. "/")
        out.protect[#out.protect + 1] = {
          path = core.resolve(hooks, work_tree),
          rule = "core.hooksPath of " .. work_tree,
          dir = true,
        }
      end
    end
  end
  return out
end

--- Whether a path inside a project goes through a ".git" (existing or
--- not): such a path is git's, never the sandbox's to write.
---@param real string
---@param projects string[]
---@return boolean
function M.in_git_dir(real, projects)
  for _, root in ipairs(projects) do
    if core.is_within(real, root) and ("/" .. real:sub(#root + 2) .. "/"):find("/.git/", 1, true) then
      return true
    end
  end
  return false
end

return M
