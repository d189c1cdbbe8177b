--- In clone mode (api/clone_mode.lua) the host's file tools act on the chat's
--- copy: a path at a repository's path names the copy's file; what it
--- resolves to must stay inside the copy (a link the sandbox made there
--- to the user's tree, or anywhere, is refused); the rules are checked,
--- and paths shown, as the sandbox sees them: at the repository's path.
local core = require("flemma_sandbox.core")

local M = {}

---@class flemma_sandbox.Copy
---@field top string
---@field clone string

--- The copy a path (absolute, as written) is in.
---@param copies flemma_sandbox.Copy[]|nil
---@param path string
---@return flemma_sandbox.Copy|nil
function M.copy_at(copies, path)
  for _, c in ipairs(copies or {}) do
    if core.is_within(path, c.top) then
      return c
    end
  end
  return nil
end

--- The copy a host path (in a copy's folder) is in.
---@param copies flemma_sandbox.Copy[]|nil
---@param real string
---@return flemma_sandbox.Copy|nil
function M.copy_holding(copies, real)
  for _, c in ipairs(copies or {}) do
    if core.is_within(real, c.clone) then
      return c
    end
  end
  return nil
end

--- The real path in the copy that `path` names, or nil and why.
---@param c flemma_sandbox.Copy
---@param path string absolute, within c.top
---@return string|nil real, string|nil err
function M.resolve(c, path)
  local real, err = core.resolve(c.clone .. path:sub(#c.top + 1), "/")
  if not real then
    return nil, err
  end
  if not core.is_within(real, c.clone) then
    return nil, path .. " leads out of the chat's copy (a link): refused"
  end
  return real
end

--- A path in a copy as the sandbox sees it (at the repository's path);
--- any other path as it is.
---@param copies flemma_sandbox.Copy[]|nil
---@param real string
---@return string
function M.as_seen(copies, real)
  local c = M.copy_holding(copies, real)
  return c and (c.top .. real:sub(#c.clone + 1)) or real
end

return M
