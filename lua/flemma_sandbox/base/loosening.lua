--- The rules that say whether a change loosens the sandbox, shared by the
--- two trust checks (chat/frontmatter_trust.lua for the standalone frontmatter,
--- flemma/frontmatter_check.lua for Flemma's): one place decides, for example, that a
--- smaller disk reserve loosens while a smaller process limit tightens.
local util = require("flemma_sandbox.base.util")

local M = {}

--- How far each policy.network value reaches: "ask" can reach more than
--- the allowlist (the user may say yes), "host" everything; Flemma's
--- boolean `true` is the allowlist.
M.NETWORK_RANK = { [false] = 0, allowlist = 1, [true] = 1, ask = 2, host = 3 }

--- Whether going from `base` to `value` for policy.limits.NAME loosens:
--- `false` (no limit) where there was one, a larger limit, or a smaller
--- disk reserve (a reserve protects by being large).
---@param name string
---@param base integer|false|nil
---@param value integer|false|nil
---@return boolean
function M.limit(name, base, value)
  if value == false then
    return base ~= false
  end
  if type(base) ~= "number" or type(value) ~= "number" then
    return false
  end
  if name == "disk_reserve_mb" then
    return value < base
  end
  return value > base
end

--- Whether going from `base` to `value` for policy.network loosens.
---@return boolean
function M.network(base, value)
  return (M.NETWORK_RANK[value] or 3) > (M.NETWORK_RANK[base] or 0)
end

--- Whether going from `base` to `value` for sandboxes.KEY loosens: a
--- fresh sandbox per call (live = false), a shorter idle time or fewer
--- running sandboxes tighten, and so do checkpoints on or more of them,
--- and a copy of the repositories (workspace = "clone"), and no prestart;
--- a name (another chat's folders and
--- processes) loosens unless it is the one already set, and so does any
--- other change.
---@param key string
---@param base any
---@param value any
---@return boolean
function M.sandboxes(key, base, value)
  if key == "live" then
    return value ~= false
  elseif key == "idle_ttl_s" or key == "max_running" then
    return type(value) ~= "number" or value > (type(base) == "number" and base or 0)
  elseif key == "name" then
    return value ~= base
  elseif key == "workspace" then
    return value ~= "clone" and value ~= base
  elseif key == "checkpoints" then
    return value == false
  elseif key == "max_checkpoints" then
    return type(value) ~= "number" or value < (type(base) == "number" and base or 0)
  elseif key == "prestart" then
    return value ~= false and value ~= base -- off: nothing starts before a call
  end
  return true
end

--- The entries of list that base lacks (each as text): for the lists where
--- an entry opens something (rw_paths, env_allow, allow_sockets,
--- allow_domains, Flemma's auto_approve).
---@param list any[]
---@param base any[]|nil
---@return string[]
function M.added(list, base)
  local out = {}
  for _, v in ipairs(list) do
    if type(base) ~= "table" or not util.contains(base, v) then
      out[#out + 1] = tostring(v)
    end
  end
  return out
end

return M
