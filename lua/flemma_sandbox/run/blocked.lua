--- What the allowlist proxy refused lately (csrc/proxy_conn.c prints
--- "flemma-sandbox: blocked HOST: WHY" on a run's stderr), for the status.
local M = {}

--- At most this many are kept, the newest last.
M.LIMIT = 10

---@type { host: string, why: string }[]
local recent = {}

--- Notes the refusals in a run's stderr.
---@param stderr string
function M.note(stderr)
  for host, why in stderr:gmatch("flemma%-sandbox: blocked (%S+): ([^\n]*)") do
    for i = #recent, 1, -1 do
      if recent[i].host == host then
        table.remove(recent, i)
      end
    end
    recent[#recent + 1] = { host = host, why = why }
    if #recent > M.LIMIT then
      table.remove(recent, 1)
    end
  end
end

--- The hosts refused lately, the newest first.
---@return { host: string, why: string }[]
function M.recent()
  local out = {}
  for i = #recent, 1, -1 do
    out[#out + 1] = recent[i]
  end
  return out
end

--- For specs: forget them.
function M.clear()
  recent = {}
end

return M
