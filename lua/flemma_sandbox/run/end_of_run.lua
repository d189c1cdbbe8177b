--- What is done when a sandboxed run has ended, before its result is
--- reported: the check after the run when the helper was killed before its
--- own (the helper does it: `flemma-sandbox-exec --check-after`), the run's
--- records (run/records.lua), what it moved to the quarantine, and the
--- run's files in our state folder removed.
local core = require("flemma_sandbox.core")
local helper = require("flemma_sandbox.backends.helper")
local quarantine = require("flemma_sandbox.run.quarantine")
local records = require("flemma_sandbox.run.records")

-- vim.uv from Neovim 0.10; vim.loop before (deprecated on 0.12)
local uv = vim.uv or vim.loop

local M = {}

--- Before the run: the records file the helper and the proxy append to,
--- for a run the wrap made a record of (the wrap's third value: never
--- read back from the argv, whose first word is not the helper in clone
--- mode).
---@param record flemma_sandbox.WrapRecord|nil
---@return string|nil check_file
function M.prepare(record)
  local check = type(record) == "table" and type(record.check_file) == "string" and record.check_file or nil
  if check then
    records.create(check)
  end
  return check
end

--- The run's files in the state folder, once nothing writes them.
---@param check string
local function remove_files(check)
  local base = check:gsub("%.check$", "")
  os.remove(check) -- a check file the helper never took up
  os.remove(base .. ".new") -- or one it was killed writing
  os.remove(base .. ".sock") -- and its network proxy's socket
end

--- Runs `flemma-sandbox-exec --check-after NAME.running`; done(stderr)
--- with what it said.
---@param running string
---@param done fun(stderr: string)
local function check_killed_run(running, done)
  local exe = helper.helper()
  local err_pipe = uv.new_pipe(false)
  local chunks = {}
  local handle, spawn_err
  handle, spawn_err = uv.spawn(exe or "flemma-sandbox-exec", {
    args = { "--check-after", running },
    stdio = { nil, nil, err_pipe },
  }, function()
    handle:close()
  end)
  if not handle then
    err_pipe:close()
    -- left for the next run's helper, which checks what a killed one left
    return done("flemma-sandbox: the check after the run failed: " .. tostring(spawn_err) .. "\n")
  end
  err_pipe:read_start(function(_, data)
    if data then
      chunks[#chunks + 1] = data
    else
      err_pipe:close()
      done(table.concat(chunks))
    end
  end)
end

--- After the run: done(stderr, records, quarantined) with what the check
--- after a killed helper said on stderr (else ""), the run's records, and
--- what the run moved to the quarantine. Without a check file (a run not
--- through the helper) all are empty.
---@param check string|nil M.prepare's
---@param done fun(stderr: string, recs: flemma_sandbox.Record[], quarantined: flemma_sandbox.Quarantined[])
function M.finish(check, done)
  if not check then
    return done("", {}, {})
  end
  local function report(stderr)
    remove_files(check)
    done(stderr, records.take(check), quarantine.moved_by(check))
  end
  local running = check:gsub("%.check$", ".running")
  if core.file_type(running) then
    check_killed_run(running, report)
  else
    report("")
  end
end

return M
