--- What the after-run check moved out of the user's tree (csrc/exec/after_run.c):
--- one folder per entry under the state folder, with a `from` file naming
--- where it was (and `at`, where it was renamed in place when the
--- quarantine is on another file system).
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")

local M = {}

---@class flemma_sandbox.Quarantined
---@field from string where the command created it
---@field path string where it is now
---@field run string which run moved it (its check file's name)

local read_line = require("flemma_sandbox.base.util").first_line

--- Everything in the quarantine, oldest first.
---@return flemma_sandbox.Quarantined[]
function M.list()
  local dir = surroundings.state_dir("quarantine")
  local out = {}
  -- each entry's own "from" file, one level down (depth 2)
  local found = dir and core.find_files(dir, { "from" }, {}, 2, 10000) or {}
  table.sort(found)
  for _, from_file in ipairs(found) do
    local entry = from_file:match("^(.*)/from$")
    local from = read_line(from_file)
    if entry and from and entry ~= dir then
      local name = from:match("([^/]+)$")
      out[#out + 1] = {
        from = from,
        path = read_line(entry .. "/at") or (entry .. "/" .. name),
        run = read_line(entry .. "/run") or "",
      }
    end
  end
  return out
end

--- What one run moved, by its name (flemma_sandbox.WrapRecord's run).
---@param run string
---@return flemma_sandbox.Quarantined[]
function M.moved_in(run)
  local out = {}
  for _, q in ipairs(M.list()) do
    if q.run == run then
      out[#out + 1] = q
    end
  end
  return out
end

--- What one run moved, by its check file.
---@param check_file string
---@return flemma_sandbox.Quarantined[]
function M.moved_by(check_file)
  return M.moved_in(check_file:match("([^/]+)%.[^./]+$"))
end

return M
