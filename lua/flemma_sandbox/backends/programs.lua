--- The programs of csrc/exec, one per role (ARCHITECTURE.md, "One
--- program per role"), built next to core.so: where each is.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")

local M = {}

local core_so = surroundings.core_so()

---@alias flemma_sandbox.ProgramRole "init"|"host"|"attach"|"tool"

---@type table<string, string>
local found_programs = {}

--- The program of a role, flemma-sandbox-ROLE, built next to core.so
--- (looked for until found): "host" in front of bwrap, "attach" for a call
--- in a live sandbox, "init" inside the sandbox, "tool" for --info,
--- --index-repos, --check-after, --live-stop and --live-info.
---@param role flemma_sandbox.ProgramRole
---@return string|nil path, string|nil err
function M.path(role)
  if found_programs[role] then
    return found_programs[role]
  end
  local name = "flemma-sandbox-" .. role
  local path = core_so and core_so:gsub("core%.so$", name)
  if not path or not core.exists(path) then
    return nil, name .. " was not found next to core.so (" .. tostring(core_so) .. "); run make"
  end
  found_programs[role] = path
  return path
end

--- Every role's program by its role, or nil and why one is missing.
---@return table<flemma_sandbox.ProgramRole, string>|nil programs, string|nil err
function M.all()
  local out = {}
  for _, role in ipairs({ "init", "host", "attach", "tool" }) do
    local path, err = M.path(role)
    if not path then
      return nil, err
    end
    out[role] = path
  end
  return out
end

return M
