--- The `[sandbox]` notes of a Flemma bash call our backend wrapped: what
--- the run moved to the quarantine, why the helper stopped it, what the
--- proxy blocked or could not reach, which rule refused a path its output
--- names. Flemma runs the command itself and keeps only its output: the
--- wrap's record (flemma_sandbox.WrapRecord) comes to the call
--- (flemma/backend.lua's wrap, through the bridge's as_call), the run's
--- records file is made before the command starts (hosted.run_starts),
--- and its end is taken when Flemma's result comes (hosted.run_ended).
local command_notes = require("flemma_sandbox.tools.command_notes")
local util = require("flemma_sandbox.base.util")
local hosted = util.lazy_require("flemma_sandbox.api.hosted")

local M = {}

--- At most this many refused paths get a note each (as tools/bash.lua).
M.MAX_DENIAL_NOTES = 20
--- A cancelled call's runs are taken this long after (their helper ends).
M.DROP_AFTER_MS = 5000

---@class flemma_sandbox.FlemmaRun : flemma_sandbox.RunReport
---@field check flemma_sandbox.WrapRecord|nil what hosted.run_starts gave, for hosted.run_ended
---@field stderr string what the check after a killed helper said

local BACKEND = "sandbox.backends.flemma_sandbox."
--- Where Flemma's config holds a setting a restart names (live.fields):
--- Flemma's own policy keys, or our backend's keys under its name.
local FLEMMA_KEYS = {
  ["policy.network"] = { "sandbox.policy.network", BACKEND .. "network" },
  ["policy.allow_privileged"] = { "sandbox.policy.allow_privileged" },
  ["policy.rw_paths"] = { "sandbox.policy.rw_paths" },
}

--- Flemma's keys for setting, or nil when it is not one Flemma's config
--- gives as it is (deny_paths and ro_paths are made from several keys).
---@param setting string
---@return string[]|nil
local function flemma_keys(setting)
  if FLEMMA_KEYS[setting] then
    return FLEMMA_KEYS[setting]
  end
  local own = setting:match("^policy%.(limits%.[%w_]+)$") or setting:match("^policy%.([%w_]+)$")
  own = own or setting:match("^(sandboxes%.[%w_]+)$")
  local direct = { seccomp = true, allow_domains = true, deny_domains = true, allow_sockets = true, env_allow = true }
  if own and (direct[own] or own:find("^limits%.") or own:find("^sandboxes%.")) then
    return { BACKEND .. own }
  end
  return nil
end

--- Whether the chat's frontmatter sets a setting a restart names: Flemma
--- says the value of one of its keys comes from the buffer's frontmatter
--- layer ("F" in its source).
---@param bufnr integer|nil
---@return flemma_sandbox.SetByFrontmatter|nil
function M.set_by_frontmatter(bufnr)
  if type(bufnr) ~= "number" then
    return nil
  end
  return function(setting)
    local facade = require("flemma.config")
    for _, key in ipairs(flemma_keys(setting) or {}) do
      local got = facade.inspect(bufnr, key)
      if type(got) == "table" and type(got.layer) == "string" and got.layer:find("F", 1, true) then
        return true
      end
    end
    return false
  end
end

--- The notes of one call's runs, given its output.
---@param runs flemma_sandbox.FlemmaRun[]
---@param text string the call's output (Flemma's bash merges stderr into it)
---@param ctx table Flemma's ExecutionContext
---@return string[]
function M.compose(runs, text, ctx)
  local notes = {}
  for _, run in ipairs(runs) do
    for line in run.stderr:gmatch("[^\n]+") do
      notes[#notes + 1] = "[sandbox] " .. line:gsub("^flemma%-sandbox[%w-]*: ", "")
    end
    vim.list_extend(notes, command_notes.quarantine_notes(run.quarantined))
    vim.list_extend(notes, command_notes.stop_notes(run.records, true, M.set_by_frontmatter(ctx.bufnr)))
    vim.list_extend(notes, command_notes.network_notes(run.records))
  end
  local denied = command_notes.denied_paths(text)
  if #denied > 0 then
    -- the policy the command ran with, as the status shows it
    local resolved = require("flemma_sandbox.flemma.view").view(ctx.bufnr).resolved
    local bash = require("flemma_sandbox.tools.bash")
    for i, d in ipairs(resolved and denied or {}) do
      if i > M.MAX_DENIAL_NOTES then
        notes[#notes + 1] = string.format("[sandbox] %d more paths were refused", #denied - M.MAX_DENIAL_NOTES)
        break
      end
      notes[#notes + 1] = bash.denial_note(d, { cwd = ctx.cwd }, resolved)
    end
  end
  if command_notes.looks_like_git_write(text) then
    notes[#notes + 1] = command_notes.GIT_HINT
  end
  return notes
end

--- Flemma's result with the notes after its text.
---@param result table Flemma's ExecutionResult
---@param notes string[]
---@return table
local function with_notes(result, notes)
  if #notes == 0 or type(result) ~= "table" then
    return result
  end
  local key = type(result.error) == "string" and "error" or "output"
  if result[key] ~= nil and type(result[key]) ~= "string" then
    return result -- a structured output: left as the tool made it
  end
  local out = {}
  for k, v in pairs(result) do
    out[k] = v
  end
  local text = out[key] or ""
  out[key] = (text ~= "" and (text .. "\n\n") or "") .. table.concat(notes, "\n")
  return out
end

--- Given the result with its notes, and what the runs reported (for the
--- chat's timeline, timeline.lua).
---@alias flemma_sandbox.FlemmaRunsDone fun(result: table, runs: flemma_sandbox.FlemmaRun[])

---@class flemma_sandbox.FlemmaRuns
---@field add fun(record: flemma_sandbox.WrapRecord) before the run starts
---@field finish fun(result: table, ctx: table, callback: flemma_sandbox.FlemmaRunsDone) the runs' notes added to result
---@field drop fun() no result will come (cancelled): the runs' ends are taken a while later

--- The runs of one call, as its wraps report them.
---@return flemma_sandbox.FlemmaRuns
function M.runs()
  ---@type flemma_sandbox.FlemmaRun[]
  local list = {}
  local self = {}
  function self.add(record)
    list[#list + 1] = { check = hosted.run_starts(record), stderr = "", records = {}, quarantined = {} }
  end
  --- done() once every run's end is taken.
  local function take(done)
    local left = #list + 1
    local function one()
      left = left - 1
      if left == 0 then
        done()
      end
    end
    for _, run in ipairs(list) do
      hosted.run_ended(run.check, function(stderr, recs, quarantined)
        run.stderr, run.records, run.quarantined = stderr, recs, quarantined
        one()
      end)
    end
    one()
  end
  function self.finish(result, ctx, callback)
    if #list == 0 then
      return callback(result, {})
    end
    take(vim.schedule_wrap(function()
      local text = type(result) == "table" and (result.output or result.error) or ""
      local ok, notes = pcall(M.compose, list, type(text) == "string" and text or "", ctx)
      local runs = list
      list = {}
      callback(with_notes(result, ok and notes or { "[sandbox] notes failed: " .. tostring(notes) }), runs)
    end))
  end
  --- Flemma stops a cancelled command (jobstop) without waiting: its
  --- helper is given the time to end before its files are taken.
  function self.drop()
    if #list == 0 then
      return
    end
    vim.defer_fn(function()
      take(function() end)
      list = {}
    end, M.DROP_AFTER_MS)
  end
  return self
end

return M
