--- Undo and redo of one call's change in direct mode: the call's change
--- is what differs between its checkpoints before and after
--- (checkpoints.lua); undo takes back each of its paths that is still as
--- the call left it, redo puts back what the last undo took back, under
--- the same rule (run/change_plan.lua). prepare() only looks (the preview);
--- carry_out() writes. The tree as it was before each is kept in the store
--- (refs/undo-saves).
local change_plan = require("flemma_sandbox.run.change_plan")
local checkpoints = require("flemma_sandbox.api.checkpoints")
local core = require("flemma_sandbox.core")
local git_box = require("flemma_sandbox.backends.git_box")
local policy_mod = require("flemma_sandbox.policy")
local shadow = require("flemma_sandbox.run.shadow")
local shadow_restore = require("flemma_sandbox.run.shadow_restore")

local M = {}

---@class flemma_sandbox.UndoTarget
---@field spec flemma_sandbox.ShadowSpec
---@field from string where the change is taken from (a ref)
---@field to string where it goes (a ref)
---@field undo_ref string|nil redo: the undo it takes back (10 digits)
---@field plan flemma_sandbox.ChangePlan|nil
---@field shared table<string, integer>|nil paths calls that ran at the same time changed too

---@class flemma_sandbox.UndoPrep
---@field redo boolean
---@field n integer the call
---@field label string what the call did
---@field scope flemma_sandbox.CheckpointScope
---@field targets flemma_sandbox.UndoTarget[]
---@field bufnr integer|nil the chat's buffer

--- The call undo takes back: n, or the newest whose end is recorded and
--- that no undo took back yet.
---@param specs flemma_sandbox.ShadowSpec[]
---@param n integer|nil
---@return integer|nil n, string label, string|nil err
local function undo_call(specs, n)
  local best, label, known = nil, "", false
  for _, spec in ipairs(specs) do
    for _, e in ipairs(shadow.list(spec)) do
      known = true
      if (n and e.n == n) or (not n and e.after and not e.undone and (not best or e.n > best)) then
        if n and not e.after then
          return nil, "", "call " .. n .. " has no record of its end (it ran before this version, or did not end)"
        elseif n and e.undone then
          return nil, "", "call " .. n .. " is undone already (:FlemmaSandbox redo puts it back)"
        end
        best, label = e.n, e.label
      end
    end
  end
  if best then
    return best, label, nil
  end
  if n then
    return nil, "", "call " .. n .. " has no checkpoint (kept: sandboxes.max_checkpoints)"
  end
  return nil, "", known and "every recorded call is undone already" or "no call of this chat has a checkpoint"
end

--- The paths changed by the calls that ran at the same time as call e
--- (started before it ended, or ended after it started): by path, the
--- call's number.
---@param spec flemma_sandbox.ShadowSpec
---@param entries flemma_sandbox.ShadowEntry[]
---@param e flemma_sandbox.ShadowEntry
---@return table<string, integer>
local function shared_paths(spec, entries, e)
  local out = {}
  for _, o in ipairs(entries) do
    local overlaps = o.after and ((o.n > e.n and o.n <= (e.last or e.n)) or (o.n < e.n and (o.last or o.n) >= e.n))
    if overlaps then
      for _, path in ipairs(shadow.call_paths(spec, o.n)) do
        out[path] = out[path] or o.n
      end
    end
  end
  return out
end

--- The targets of an undo of call n: each repository that recorded it.
---@param specs flemma_sandbox.ShadowSpec[]
---@param n integer
---@return flemma_sandbox.UndoTarget[]
local function undo_targets(specs, n)
  local out = {}
  for _, spec in ipairs(specs) do
    local entries = shadow.list(spec)
    for _, e in ipairs(entries) do
      if e.n == n and e.after then
        local name = shadow.ref_name(n)
        local t = { spec = spec, from = "refs/after/" .. name, to = "refs/checkpoints/" .. name }
        t.shared = shared_paths(spec, entries, e)
        out[#out + 1] = t
      end
    end
  end
  return out
end

--- The targets of a redo: in each repository the newest undo, when it took
--- back the same call as the newest undo of all.
---@param specs flemma_sandbox.ShadowSpec[]
---@return flemma_sandbox.UndoTarget[], integer|nil n, string label
local function redo_targets(specs)
  local out, n, label = {}, nil, ""
  for _, spec in ipairs(specs) do
    local u = shadow.undos(spec)[1]
    if u and (not n or u.n == n) then
      n, label = u.n, u.label
      local ref = "refs/undone/" .. u.k
      out[#out + 1] = { spec = spec, from = ref, to = ref .. "^", undo_ref = u.k }
    end
  end
  return out, n, label
end

--- Whether a loaded buffer holds unsaved changes of top/path.
---@param top string
---@return fun(path: string): boolean
local function unsaved_in(top)
  local modified = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].modified then
      local name = vim.api.nvim_buf_get_name(b)
      if name ~= "" then
        modified[vim.fn.fnamemodify(name, ":p")] = true
      end
    end
  end
  return function(path)
    return modified[top .. "/" .. path] == true
  end
end

--- The policy's word on a write at top/path (a protected or hidden path),
--- by its name: nothing on the way is followed.
---@param resolved table the chat's resolved policy
---@param top string
---@return fun(path: string): string|nil
local function refused_in(resolved, top)
  return function(path)
    local real = top .. "/" .. path
    local rule = policy_mod.protected_rule(real, resolved) or policy_mod.hidden_rule(real, resolved)
    return rule and ("protected: " .. tostring(rule.rule)) or nil
  end
end

--- Plans each target in the background (the tree now is read there), then
--- done(err).
---@param prep flemma_sandbox.UndoPrep
---@param done fun(err: string|nil)
local function plan_targets(prep, done)
  local ok, resolved = pcall(require("flemma_sandbox").get_policy, prep.bufnr)
  if not ok or type(resolved) ~= "table" then
    -- what a call may not write is the policy's word: none, nothing written
    return done("the chat's policy: " .. tostring(resolved))
  end
  local i = 0
  local function nxt()
    i = i + 1
    local t = prep.targets[i]
    if not t then
      return done(nil)
    end
    local word = (prep.redo and "redo" or "undo") .. " of call " .. prep.n
    local argv = shadow.step_argv(t.spec, "plan", "before " .. word, nil, t.from, t.to)
    checkpoints.run_step(t.spec, argv, function(out)
      local parsed, err = change_plan.parse(out or "")
      if not parsed then
        return done(t.spec.top .. ": " .. tostring(err))
      end
      local shared = t.shared or {}
      t.plan = change_plan.decide(parsed, refused_in(resolved, t.spec.top), unsaved_in(t.spec.top), function(path)
        return shared[path]
      end)
      nxt()
    end)
  end
  nxt()
end

--- Looks at what an undo (opts.redo: a redo) would do, writing nothing;
--- done(prep) or done(nil, why).
---@param bufnr integer|nil
---@param opts { n: integer|nil, redo: boolean|nil }
---@param done fun(prep: flemma_sandbox.UndoPrep|nil, err: string|nil)
function M.prepare(bufnr, opts, done)
  local scope = checkpoints.scope(bufnr)
  if scope.off or #scope.specs == 0 then
    return done(nil, "no checkpoints: " .. (scope.off or "no git repository in the writable projects"))
  end
  local prep = { redo = opts.redo == true, scope = scope, targets = {}, label = "", bufnr = bufnr }
  -- the stores' refs are read once the steps queued before (the end of
  -- the last call) have run
  local left = #scope.specs
  for _, spec in ipairs(scope.specs) do
    checkpoints.run_step(spec, shadow.step_argv(spec, "settled"), function()
      left = left - 1
      if left == 0 then
        M.choose(prep, opts, done)
      end
    end)
  end
end

--- prepare() once the stores are settled: the call, then the plans.
---@param prep flemma_sandbox.UndoPrep
---@param opts { n: integer|nil, redo: boolean|nil }
---@param done fun(prep: flemma_sandbox.UndoPrep|nil, err: string|nil)
function M.choose(prep, opts, done)
  local scope = prep.scope
  if prep.redo then
    prep.targets, prep.n, prep.label = redo_targets(scope.specs)
    if not prep.n then
      return done(nil, "nothing to redo: no undo of this chat is kept")
    end
  else
    local n, label, err = undo_call(scope.specs, opts.n)
    if not n then
      return done(nil, err)
    end
    prep.n, prep.label, prep.targets = n, label, undo_targets(scope.specs, n)
  end
  plan_targets(prep, function(err)
    if err then
      return done(nil, err)
    end
    done(prep)
  end)
end

---@class flemma_sandbox.UndoReport
---@field written { top: string, path: string }[]
---@field conflicts { top: string, path: string, why: string }[]
---@field skipped { top: string, path: string, why: string }[]
---@field errors string[]

--- Writes one target's paths and records what was written; done().
---@param prep flemma_sandbox.UndoPrep
---@param t flemma_sandbox.UndoTarget
---@param report flemma_sandbox.UndoReport
---@param done fun()
local function carry_out_one(prep, t, report, done)
  local spec, plan = t.spec, t.plan
  for _, c in ipairs(plan.conflicts) do
    report.conflicts[#report.conflicts + 1] = { top = spec.top, path = c.path, why = c.why }
  end
  for _, c in ipairs(plan.skipped) do
    report.skipped[#report.skipped + 1] = { top = spec.top, path = c.path, why = c.why }
  end
  local ok, err = core.write_atomic(spec.store, "apply", change_plan.apply_text(plan.apply), 384)
  if not ok then
    report.errors[#report.errors + 1] = spec.top .. ": " .. tostring(err)
    return done()
  end
  checkpoints.run_step(spec, shadow_restore.argv(spec), function(out)
    local answers = git_box.answers(out)
    local text, paths, conflicts, finished = change_plan.read_applied(answers, string.rep("0", #plan.now))
    for _, p in ipairs(paths) do
      report.written[#report.written + 1] = { top = spec.top, path = p }
    end
    for _, c in ipairs(conflicts) do
      report.conflicts[#report.conflicts + 1] = { top = spec.top, path = c.path, why = c.why }
    end
    if not finished then
      report.errors[#report.errors + 1] = spec.top .. ": " .. ((out or ""):match("[^\n]+") or "the write failed")
    end
    core.write_atomic(spec.store, "written", text, 384)
    local label = "undo of call " .. shadow.ref_name(prep.n) .. ": " .. prep.label
    local argv = prep.redo and shadow.step_argv(spec, "record", label, t.undo_ref, plan.save, "redo")
      or shadow.step_argv(spec, "record", label, nil, plan.save, "undo")
    checkpoints.run_step(spec, argv, function(rec)
      if not git_box.answer(rec, "recorded") then
        report.errors[#report.errors + 1] = spec.top .. ": not recorded: " .. tostring(rec)
      end
      done()
    end)
  end)
end

--- Writes what prepare() planned (each path checked again right before it
--- is written); the chat's sandbox is stopped first. done(report).
---@param prep flemma_sandbox.UndoPrep
---@param done fun(report: flemma_sandbox.UndoReport)
function M.carry_out(prep, done)
  local report = { written = {}, conflicts = {}, skipped = {}, errors = {} }
  require("flemma_sandbox.backends.live").stop_chat(prep.scope.chat, function()
    local i = 0
    local function nxt()
      i = i + 1
      if not prep.targets[i] then
        return done(report)
      end
      carry_out_one(prep, prep.targets[i], report, nxt)
    end
    nxt()
  end)
end

return M
