--- What the allowlist proxy refused lately (csrc/proxy_conn.c prints
--- "flemma-sandbox: blocked HOST: WHY" on a run's stderr), for the status.
local util = require("flemma_sandbox.util")

local M = {}

--- At most this many are kept.
M.LIMIT = 10

local recent = util.recent_hosts(M.LIMIT)

--- Notes the refusals in a run's stderr.
---@param stderr string
function M.note(stderr)
  for host, why in stderr:gmatch("flemma%-sandbox: blocked (%S+): ([^\n]*)") do
    recent.put({ host = host, why = why })
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
