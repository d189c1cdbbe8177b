--- The write of an undo or redo (call_undo.lua): the paths of
--- $store/apply put back one by one in the shadow store's bwrap
--- (run/shadow.lua) with the writable root alone writable.
local shadow = require("flemma_sandbox.run.shadow")

local M = {}

-- The write of an undo or redo: its arguments and what it does are said in the script.
local RESTORE = "shadow_restore.sh"

--- The argv that writes the paths of $store/apply back (after "plan"),
--- with the writable root alone writable.
---@param spec flemma_sandbox.ShadowSpec
---@return string[]
function M.argv(spec)
  local root = spec.rel == "." and spec.top or (spec.top .. "/" .. spec.rel)
  return shadow.box_argv(spec, RESTORE, { spec.top, spec.store }, root, false)
end

return M
