--- Questions about a path under a resolved policy: its real path, the
--- writable root holding it, the rule that hides or protects it, and
--- whether a command may read or write it.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local private_mod = require("flemma_sandbox.policy.private")
local protect = require("flemma_sandbox.policy.protect")
local repos = require("flemma_sandbox.policy.repos")

local M = {}

---@param real string
---@param rules flemma_sandbox.Rule[]|nil
---@return flemma_sandbox.Rule|nil
local function rule_holding(real, rules)
  for _, r in ipairs(rules or {}) do
    if core.is_within(real, r.path) then
      return r
    end
  end
end

--- The hidden path (and its rule) that holds a real path, if any.
---@param real string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return flemma_sandbox.Rule|nil
function M.hidden_rule(real, resolved)
  return rule_holding(real, resolved.hidden)
    or protect.secret_rule(real, resolved.secret_scan)
    or private_mod.hiding(real, resolved.private, resolved.rw_paths)
end

--- The protected or watched path (and its rule) that holds a real path, if
--- any; a path through a ".git" in a project is git's, existing or not.
---@param real string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return flemma_sandbox.Rule|nil
function M.protected_rule(real, resolved)
  local rule = rule_holding(real, resolved.protected) or rule_holding(real, resolved.watched)
  if not rule and repos.in_git_dir(real, resolved.projects or {}) then
    rule = { path = real, rule = "a git folder (repository writes go through the git tool)" }
  end
  return rule
end

--- The path the kernel would reach for `path`: relative to the working
--- directory, a leading `~` read as $HOME (nothing else is expanded), every
--- symlink followed.
---@param path string
---@param cwd? string default: the host's working directory
---@return string|nil real, string|nil err
function M.real_path(path, cwd)
  if path == "~" or path:sub(1, 2) == "~/" then
    local home = surroundings.getenv("HOME")
    if not home or home == "" then
      return nil, "HOME is not set, cannot place " .. path
    end
    path = home .. path:sub(2)
  end
  return core.resolve(path, cwd or surroundings.cwd())
end

--- The writable root that holds a real path (the longest), if any.
---@param real string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return string|nil
function M.root_of(real, resolved)
  local best
  for _, root in ipairs(resolved.rw_paths) do
    if core.is_within(real, root) and (not best or #root > #best) then
      best = root
    end
  end
  return best
end

--- Whether `path` (relative to the cwd, `~` is $HOME) is visible in the
--- sandbox once every symlink on it is followed.
---@param path string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return boolean readable, string reason
function M.is_readable(path, resolved)
  local real, err = M.real_path(path)
  if not real then
    return false, err
  end
  local rule = M.hidden_rule(real, resolved)
  if rule then
    return false, real .. " is hidden (" .. rule.rule .. ")"
  end
  return true, real .. " is visible"
end

--- Whether `path` (relative to the cwd; a leading `~` is $HOME, nothing
--- else is expanded) lies in a writable root once every symlink on it is
--- followed.
---@param path string
---@param resolved flemma_sandbox.ResolvedPolicy
---@return boolean writable, string reason
function M.is_writable(path, resolved)
  local real, err = M.real_path(path)
  if not real then
    return false, err
  end
  local root = M.root_of(real, resolved)
  local private = not root and private_mod.hiding(real, resolved.private, resolved.rw_paths)
  if private then
    return false, real .. " is not in rw_paths (" .. (private.write_rule or private.rule) .. ")"
  elseif not root then
    return false, real .. " is not in rw_paths"
  end
  local rule = M.protected_rule(real, resolved) or M.hidden_rule(real, resolved)
  if rule then
    return false, real .. " is protected (" .. rule.rule .. ")"
  end
  return true, real .. " is inside " .. root
end

--- Why a writable path would open the home folder, or nil: it is $HOME or
--- a folder above it (`/`, `/home`). Neovim started in ~ makes $CWD the
--- home folder, where dozens of files run code later (shell start-up,
--- ~/bin on PATH, git and editor config, autostart entries).
---@param resolved string
---@return string|nil reason, string|nil short the same for a one-line notice, after the entry
function M.opens_home(resolved)
  local home = surroundings.getenv("HOME")
  home = home and home ~= "" and core.resolve(home, "/") or nil
  if not home or not core.is_within(home, resolved) then
    return nil
  end
  local what = resolved == home and "is the home folder" or "holds the home folder"
  return resolved .. " " .. what .. ": not writable unless policy.allow_home_rw = true",
    (resolved == home and "is ~" or "holds ~") .. ": not writable (policy.allow_home_rw)"
end

return M
