--- What the allowlist proxy refused lately (its "blocked" records,
--- run/records.lua), for the status.
local util = require("flemma_sandbox.base.util")

local M = {}

--- At most this many are kept.
M.LIMIT = 10

local recent = util.recent_hosts(M.LIMIT)

--- Notes the refusals among a run's records.
---@param recs flemma_sandbox.Record[]
function M.note(recs)
  for _, r in ipairs(recs) do
    if r.type == "blocked" then
      recent.put({ host = r.host, why = r.why })
    end
  end
end

--- The hosts refused lately, the newest first.
---@return { host: string, why: string }[]
function M.recent()
  return recent.newest_first()
end

--- For specs: forget them.
function M.clear()
  recent.clear()
end

return M
