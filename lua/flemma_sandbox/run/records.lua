--- The records of a run (csrc/shared/record.h): what the helper and the
--- proxy report, one JSON object per line, in NAME.records beside the
--- run's check file. Neovim makes the file before a run it will read (the
--- helper never creates it: for other callers, Flemma's own runner, nothing
--- is written) and takes it after. The sentences on stderr are for people;
--- code reads these. ARCHITECTURE.md lists the types and their fields (all
--- values are strings).
local editor = require("flemma_sandbox.base.editor")
local M = {}

---@class flemma_sandbox.Record
---@field type string
---@field [string] string

--- What one run reported: its records, and what the check after it moved
--- to the quarantine. A call's runs are a list of these, standalone and
--- under Flemma (flemma_sandbox.FlemmaRun adds to it), to calls.ended.
---@class flemma_sandbox.RunReport
---@field records flemma_sandbox.Record[]
---@field quarantined flemma_sandbox.Quarantined[]

--- The records file of a run, by its check file.
---@param check_file string NAME.check
---@return string
function M.path_for(check_file)
  return (check_file:gsub("%.check$", "") .. ".records")
end

--- Makes the empty file the helper and the proxy append to. It lies in
--- our state folder, which no sandbox can write.
---@param path string the run's records file (flemma_sandbox.WrapRecord's records_file)
---@return boolean
function M.create_file(path)
  local f = io.open(path, "wb")
  if not f then
    return false
  end
  f:close()
  return true
end

--- M.create_file by the run's check file.
---@param check_file string
---@return boolean
function M.create(check_file)
  return M.create_file(M.path_for(check_file))
end

local decode = editor.json_decode

--- The records in text, in order; lines that are not a record are left
--- out (a record cut short by a killed writer).
---@param text string
---@return flemma_sandbox.Record[]
function M.parse(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    local ok, rec = pcall(decode, line)
    if ok and type(rec) == "table" and type(rec.type) == "string" then
      out[#out + 1] = rec
    end
  end
  return out
end

--- Reads a run's records and removes the file.
---@param path string the run's records file
---@return flemma_sandbox.Record[]
function M.take_file(path)
  local f = io.open(path, "rb")
  if not f then
    return {}
  end
  local text = f:read("*a") or ""
  f:close()
  os.remove(path)
  return M.parse(text)
end

--- M.take_file by the run's check file.
---@param check_file string
---@return flemma_sandbox.Record[]
function M.take(check_file)
  return M.take_file(M.path_for(check_file))
end

--- Whether a failed run is bwrap giving up before the command started
--- because a path it was to mount over vanished after the policy was read
--- (a host socket closing, a protected file deleted): then running it
--- again, planned afresh, is safe. The host side knows it (bwrap ended
--- before the init program inside said it had started, csrc/exec/host_side.c)
--- and reports a `setup_failed` record by "bwrap"; a live call whose new
--- sandbox never took it gets its keeper's. Never read from the output: a
--- command may print bwrap's words itself.
---@param code integer exit status
---@param recs flemma_sandbox.Record[]|nil the run's records (M.parse)
---@return boolean
function M.lost_race(code, recs)
  if code == 0 then
    return false
  end
  for _, rec in ipairs(recs or {}) do
    if rec.type == "setup_failed" and rec.by == "bwrap" then
      return true
    end
  end
  return false
end

--- The records of a run started again because its first start lost a
--- race with the host (M.lost_race): the first start's records
--- of earlier runs (its host side did the checks of runs whose
--- host side was killed, which the second start will not find again), then
--- the second start's.
---@param first flemma_sandbox.Record[]|nil
---@param again flemma_sandbox.Record[]|nil
---@return flemma_sandbox.Record[]
function M.after_retry(first, again)
  local out = {}
  for _, rec in ipairs(first or {}) do
    if rec.run == "earlier" then
      out[#out + 1] = rec
    end
  end
  for _, rec in ipairs(again or {}) do
    out[#out + 1] = rec
  end
  return out
end

return M
