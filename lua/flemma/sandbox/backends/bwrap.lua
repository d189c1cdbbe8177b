--- The bubblewrap backend: checks that bwrap can be found, and builds the
--- argv through the C core. Nothing else.
local core = require("flemma.sandbox.core")
local host = require("flemma.sandbox.host")

local M = {}

---@param backend_config flemma.sandbox.BwrapConfig|table
---@return boolean ok, string|nil err
function M.available(backend_config)
  if not host.is_linux() then
    return false, "bubblewrap needs Linux (user namespaces)"
  end
  local path = backend_config.path or "bwrap"
  local found, err = core.which(path, host.getenv("PATH"))
  if not found then
    return false, "bubblewrap not found (" .. err .. "); install the bubblewrap package"
  end
  return true, nil
end

---@type table<string, string>
local versions = {}

--- "bubblewrap 0.8.0" as the program prints it, cached per path.
---@param backend_config flemma.sandbox.BwrapConfig|table
---@return string|nil version
function M.version(backend_config)
  local path = backend_config.path or "bwrap"
  if versions[path] == nil then
    local found = core.which(path, host.getenv("PATH"))
    local text = ""
    if found then
      local f = io.popen("'" .. found:gsub("'", "'\\''") .. "' --version 2>/dev/null")
      text = f and f:read("*l") or ""
      if f then
        f:close()
      end
    end
    versions[path] = text or ""
  end
  return versions[path] ~= "" and versions[path] or nil
end

---@param policy flemma.sandbox.ResolvedPolicy
---@param backend_config flemma.sandbox.BwrapConfig|table
---@param inner_cmd string[]
---@return string[]|nil argv, string|nil err
function M.wrap(policy, backend_config, inner_cmd)
  local argv, err = core.bwrap_argv(policy, backend_config, inner_cmd)
  if not argv then
    return nil, err
  end
  return argv, nil
end

return M
