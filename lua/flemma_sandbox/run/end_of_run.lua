--- What is done when a sandboxed run has ended, before its result is
--- reported: the check after the run when the helper was killed before its
--- own (the tool program does it: `flemma-sandbox-tool --check-after`), the run's
--- records (run/records.lua), what it moved to the quarantine, and the
--- run's files in our state folder removed.
local core = require("flemma_sandbox.core")
local helper = require("flemma_sandbox.backends.helper")
local process = require("flemma_sandbox.base.process")
local quarantine = require("flemma_sandbox.run.quarantine")
local records = require("flemma_sandbox.run.records")

local M = {}

--- Before the run: the records file the helper and the proxy append to,
--- for a run the wrap made a record of (the wrap's third value: never
--- read back from the argv, whose first word is not the helper in clone
--- mode). The record, to give M.finish, or nil for a run without one.
---@param record flemma_sandbox.WrapRecord|nil
---@return flemma_sandbox.WrapRecord|nil
function M.prepare(record)
  if type(record) ~= "table" or type(record.records_file) ~= "string" then
    return nil
  end
  records.create_file(record.records_file)
  return record
end

--- Runs `flemma-sandbox-tool --check-after NAME.running`; done(stderr)
--- with what it said.
---@param running string
---@param done fun(stderr: string)
local function check_killed_run(running, done)
  local argv = { helper.helper() or "flemma-sandbox-tool", "--check-after", running }
  local handle, spawn_err = process.spawn(argv, { stdout = false }, function(result)
    done(result.stderr)
  end)
  if not handle then
    -- left for the next run's helper, which checks what a killed one left
    return done("flemma-sandbox: the check after the run failed: " .. tostring(spawn_err) .. "\n")
  end
end

--- After the run: done(stderr, records, quarantined) with what the check
--- after a killed helper said on stderr (else ""), the run's records, and
--- what the run moved to the quarantine; the run's files in the state
--- folder are removed. Without a record (a run not through the helper)
--- all are empty.
---@param record flemma_sandbox.WrapRecord|nil M.prepare's
---@param done fun(stderr: string, recs: flemma_sandbox.Record[], quarantined: flemma_sandbox.Quarantined[])
function M.finish(record, done)
  if not record then
    return done("", {}, {})
  end
  local function report(stderr)
    for _, file in ipairs(record.leftovers) do
      os.remove(file)
    end
    done(stderr, records.take_file(record.records_file), quarantine.moved_in(record.run))
  end
  if core.file_type(record.running_file) then
    check_killed_run(record.running_file, report)
  else
    report("")
  end
end

return M
