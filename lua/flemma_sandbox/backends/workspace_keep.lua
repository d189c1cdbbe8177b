--- Before a copy (backends/workspace_copies.lua) is thrown away (discard, delete,
--- gc), its work is kept in the user's repository for KEEP_DAYS days: the
--- sync commits its work tree in the copy (uncommitted and untracked files
--- included: refs/flemma/wip, made with an index of its own, never the
--- user's), its branches and that commit are fetched into the user's
--- objects, and one commit over them goes under
--- refs/flemma-sandbox/discarded/CHAT/TIME (UTC). Only gc
--- prunes those refs, once older than KEEP_DAYS. git runs in the git bwrap
--- (backends/git_box.lua) that sees only the user's git folder; the copy's
--- objects are stored under a ref, never checked out here.
local core = require("flemma_sandbox.core")
local process = require("flemma_sandbox.base.process")
local git_box = require("flemma_sandbox.backends.git_box")
local surroundings = require("flemma_sandbox.base.surroundings")

local M = {}

M.KEEP_DAYS = 14
M.PREFIX = "refs/flemma-sandbox/discarded/"

-- Keeping a copy's work: its arguments and what it does are said in the script.
local KEEP = "workspace_keep.sh"

-- Pruning the kept refs: its arguments and what it does are said in the script.
local PRUNE = "workspace_prune.sh"

--- The file listing the repositories that hold kept refs (for gc).
---@return string|nil dir
local function record_dir()
  return surroundings.state_dir("kept")
end

--- The repositories that hold kept refs (as recorded), one a line.
---@return string[]
function M.recorded()
  local dir = record_dir()
  local out = {}
  local f = dir and io.open(dir .. "/repositories", "r")
  if f then
    for line in f:lines() do
      if line:sub(1, 1) == "/" and not vim.tbl_contains(out, line) then
        out[#out + 1] = line
      end
    end
    f:close()
  end
  return out
end

--- Records the repositories that hold kept refs.
---@param tops string[]
local function record(tops)
  local dir = record_dir()
  if dir then
    core.write_atomic(dir, "repositories", table.concat(tops, "\n") .. "\n", 384)
  end
end

--- A chat's name as a piece of a ref's name.
---@param name string
---@return string
local function ref_part(name)
  local part = name:gsub("[^%w_-]", "_")
  return part
end

--- Keeps a copy's work in its repository (see above), in the background;
--- done(ref, err): ref nil when there was nothing to keep.
---@param spec flemma_sandbox.WorkspaceSpec
---@param name string the chat's name
---@param done fun(ref: string|nil, err: string|nil)
---@param cli? boolean a command line sandbox (bin/flemma-sandbox), not a chat
function M.keep(spec, name, done, cli)
  local workspace = require("flemma_sandbox.backends.workspace_copies")
  if not workspace.exists(spec.clone) or core.file_type(spec.top .. "/.git") ~= "directory" then
    return done(nil, nil)
  end
  workspace.sync(spec, name, function(err)
    if err then
      return done(nil, "could not keep the work of the copy of " .. spec.top .. ": " .. err)
    end
    local when = os.date("!%Y-%m-%d %H:%M:%S")
    local ref = M.PREFIX .. ref_part(name) .. "/" .. os.date("!%Y%m%dT%H%M%SZ")
    local message = string.format(
      "flemma-sandbox: the work of %s, kept when it was thrown away (%s UTC)\n\n"
        .. "This commit's tree is the copy's work tree as it was, uncommitted and untracked\n"
        .. "files included (ignored and secret files are never in a copy's commits). Its\n"
        .. "first parent is that tree over the copy's HEAD, the others the copy's other\n"
        .. "branches. It may hold commits the sync did not publish because they change\n"
        .. "or delete a file the copy hides: a merge of it would bring those changes.\n"
        .. "Kept %d days: gc removes the ref after that.",
      cli and ("sandbox " .. name .. "'s copy (command line)") or ("chat " .. name .. "'s copy"),
      when,
      M.KEEP_DAYS
    )
    local binds = workspace.copy_binds(spec, false, true)
    local argv = git_box.script_argv(spec.bwrap, binds, KEEP, { spec.top, name, ref, message })
    local started = surroundings.output_in_background(argv[1], vim.list_slice(argv, 2), function(out, errs)
      local kept = git_box.answer(out, "kept")
      if kept and type(kept.ref) == "string" then
        local tops = M.recorded()
        if not vim.tbl_contains(tops, spec.top) then
          tops[#tops + 1] = spec.top
          record(tops)
        end
        return done(kept.ref, nil)
      end
      if git_box.answer(out, "nothing") then
        return done(nil, nil)
      end
      done(nil, "could not keep the work of the copy of " .. spec.top .. ": " .. out .. errs)
    end)
    if not started then
      done(nil, "could not start bwrap to keep the work of the copy of " .. spec.top)
    end
  end)
end

--- Keeps the work of several copies in turn; done(kept, errors), kept as
--- { top, ref } for each that had work.
---@param items { spec: flemma_sandbox.WorkspaceSpec, name: string, cli: boolean|nil }[]
---@param done fun(kept: { top: string, ref: string }[], errors: string[])
function M.keep_all(items, done)
  local kept, errors, i = {}, {}, 0
  local function next_one()
    i = i + 1
    local item = items[i]
    if not item then
      return done(kept, errors)
    end
    M.keep(item.spec, item.name, function(ref, err)
      if ref then
        kept[#kept + 1] = { top = item.spec.top, ref = ref }
      end
      errors[#errors + 1] = err
      next_one()
    end, item.cli)
  end
  next_one()
end

--- How to get kept work back, for the user.
---@param kept { top: string, ref: string }[]
---@return string[]
function M.how_to(kept)
  local out = {}
  for _, k in ipairs(kept) do
    vim.list_extend(out, {
      string.format("the copy's work is kept %d days in %s as", M.KEEP_DAYS, k.top),
      "  " .. k.ref,
      "to get it back, in that repository:",
      "  git log --stat " .. k.ref,
      "  git branch rescued " .. k.ref,
      "  git restore --source=" .. k.ref .. " -- PATH",
    })
  end
  return out
end

--- Deletes the kept refs older than KEEP_DAYS in the recorded
--- repositories and in tops (gc; waits); the refs it deleted.
---@param bwrap string
---@param tops? string[]
---@param now? integer seconds since the epoch
---@return string[] pruned, string[] errors
function M.prune(bwrap, tops, now)
  local cutoff = os.date("!%Y%m%dT%H%M%SZ", (now or os.time()) - M.KEEP_DAYS * 86400)
  local all, still = M.recorded(), {}
  for _, top in ipairs(tops or {}) do
    if not vim.tbl_contains(all, top) then
      all[#all + 1] = top
    end
  end
  local pruned, errors = {}, {}
  for _, top in ipairs(all) do
    if core.file_type(top .. "/.git") == "directory" then
      local binds = { "--bind", top .. "/.git", "/user.git" }
      local out = process.run(git_box.script_argv(bwrap, binds, PRUNE, {}))
      local old = {}
      for _, left in ipairs(git_box.answers(out)) do
        -- the time in the name, a -N after it when that name was taken
        local stamp = left.answer == "left" and tostring(left.ref):match("/(%d%d%d%d%d%d%d%dT%d%d%d%d%d%dZ)[-%d]*$")
        if stamp and stamp < cutoff then
          old[#old + 1] = left.ref
        end
      end
      if #old > 0 then
        out = process.run(git_box.script_argv(bwrap, binds, PRUNE, old))
      end
      if not git_box.answer(out, "listed") then
        errors[#errors + 1] = "could not prune the kept work in " .. top .. ": " .. out
      else
        for _, ref in ipairs(old) do
          pruned[#pruned + 1] = top .. ": " .. ref
        end
      end
      if git_box.answer(out, "left") then
        still[#still + 1] = top
      end
    end
  end
  record(still)
  return pruned, errors
end

return M
