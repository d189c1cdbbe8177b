--- Direct mode's checkpoints: before and after each tool call that can
--- write (bash, write, edit, git), the tree of each git repository in the
--- chat's writable projects is recorded in a shadow store of the chat's
--- own (run/shadow.lua), under the call's number in the chat (calls.lua).
--- The call's change is what differs between the two; undo and redo take
--- it back and again (call_undo.lua). Nothing of it shows in the user's
--- repository.
local core = require("flemma_sandbox.core")
local process = require("flemma_sandbox.base.process")
local git_box = require("flemma_sandbox.backends.git_box")
local shadow = require("flemma_sandbox.run.shadow")
local surroundings = require("flemma_sandbox.base.surroundings")

local M = {}

--- The tools whose calls get a checkpoint first.
M.WRITING_TOOLS = { bash = true, write = true, edit = true, git = true }

--- Stores set up in this session (their "init" step ran).
local ready = {}
--- Per store, the steps waiting for the one running (one git at a time).
local queues = {}

---@class flemma_sandbox.CheckpointScope
---@field specs flemma_sandbox.ShadowSpec[] one per repository
---@field outside string[] writable projects in no git repository (no checkpoints)
---@field chat flemma_sandbox.ChatDir|nil
---@field off string|nil why there are none at all

--- What a buffer's checkpoints cover.
---@param bufnr integer|nil
---@return flemma_sandbox.CheckpointScope
function M.scope(bufnr)
  local sandbox = require("flemma_sandbox")
  local out = { specs = {}, outside = {} }
  local cfg = sandbox.resolve_config(bufnr)
  if not cfg.sandboxes.checkpoints then
    out.off = "sandboxes.checkpoints is off"
    return out
  end
  local ok, policy = pcall(sandbox.get_policy, bufnr)
  if not ok or type(policy) ~= "table" then
    out.off = "no policy: " .. tostring(policy)
    return out
  end
  out.chat = policy.chat
  if not policy.chat then
    out.off = "this buffer is not a chat with a file"
    return out
  end
  local bwrap = core.which(cfg.backends.bwrap.path or "bwrap", surroundings.getenv("PATH"))
  local git = core.which("git", surroundings.getenv("PATH"))
  if not bwrap or not git then
    out.off = (bwrap and "git" or "bwrap") .. " was not found on PATH"
    return out
  end
  local seen = {}
  for _, root in ipairs(policy.project_roots or {}) do
    local top, rel = shadow.repository_of(root)
    if not top then
      out.outside[#out.outside + 1] = root
    elseif not seen[top .. "\0" .. rel] then
      seen[top .. "\0" .. rel] = true
      local hidden = {}
      for _, path in ipairs(policy.deny_paths or {}) do
        if core.is_within(path, top) then
          hidden[#hidden + 1] = path
        end
      end
      out.specs[#out.specs + 1] = {
        bwrap = bwrap,
        git = git,
        top = top,
        rel = rel,
        store = shadow.store_for(policy.chat.dir, top),
        hidden = hidden,
        secrets = policy.secret_scan and policy.secret_scan.patterns or {},
        keep = cfg.sandboxes.max_checkpoints,
      }
    end
  end
  return out
end

--- Runs argv off the editor's thread, one at a time per store; done(stdout).
---@param store string
---@param argv string[]
---@param done fun(out: string)
local function queued(store, argv, done)
  local queue = queues[store]
  if queue then
    queue[#queue + 1] = { argv, done }
    return
  end
  queues[store] = {}
  local function run(a, d)
    local started = surroundings.output_in_background(a[1], vim.list_slice(a, 2), function(out, err)
      d(out .. (out == "" and err or ""))
      local nxt = table.remove(queues[store], 1)
      if nxt then
        run(nxt[1], nxt[2])
      else
        queues[store] = nil
      end
    end)
    if not started then
      -- nothing of this store can run: each waiting step is told
      local waiting = queues[store]
      queues[store] = nil
      d("")
      for _, item in ipairs(waiting) do
        item[2]("")
      end
    end
  end
  run(argv, done)
end

--- The steps before a spec's first use in this session, for step().
---@param spec flemma_sandbox.ShadowSpec
---@return string[]|nil argv, string|nil err
local function init_argv(spec)
  if ready[spec.store] then
    return {}
  end
  local ok, err = shadow.prepare(spec)
  if not ok then
    return nil, err
  end
  return shadow.step_argv(spec, "init")
end

--- One step of one spec: init first when needed; done(output, err).
---@param spec flemma_sandbox.ShadowSpec
---@param argv string[]
---@param done fun(out: string|nil, err: string|nil)
local function step(spec, argv, done)
  local init, err = init_argv(spec)
  if not init then
    return done(nil, err)
  end
  local function go()
    queued(spec.store, argv, function(out)
      done(out)
    end)
  end
  if #init == 0 then
    return go()
  end
  queued(spec.store, init, function()
    ready[spec.store] = core.file_type(spec.store .. "/objects") == "directory" or nil
    go()
  end)
end

--- Calls done(results) when fn has run for each spec (one after another).
local function each(specs, fn, done)
  local results, i = {}, 0
  local function nxt()
    i = i + 1
    if i > #specs then
      return done(results)
    end
    fn(specs[i], function(result)
      results[#results + 1] = result
      nxt()
    end)
  end
  nxt()
end

--- Records a checkpoint of each repository of the buffer's chat before a
--- call; done(errors, specs) when all are taken (the call waits for it):
--- specs are the stores, for finish() (the chat's file may be gone then).
---@param bufnr integer|nil
---@param label string what the call is about to do
---@param done fun(errors: string[], specs: flemma_sandbox.ShadowSpec[])
---@param n? integer the call's number in the chat (calls.lua)
function M.take(bufnr, label, done, n)
  local scope = M.scope(bufnr)
  each(scope.specs, function(spec, next_one)
    step(spec, shadow.step_argv(spec, "take", label, n), function(out, err)
      next_one(not git_box.answer(out, "checkpoint") and (spec.top .. ": " .. (err or out or "")) or nil)
    end)
  end, function(results)
    local errors = {}
    for _, e in pairs(results) do
      errors[#errors + 1] = e
    end
    done(errors, scope.specs)
  end)
end

--- Brings each store's index up to date in the background, so that a
--- checkpoint the editor waits for (take_now) only looks at what changed:
--- for Flemma, when a chat sends a request.
---@param bufnr integer|nil
function M.warm(bufnr)
  for _, spec in ipairs(M.scope(bufnr).specs) do
    step(spec, shadow.step_argv(spec, "warm"), function() end)
  end
end

--- The same, waiting for it (Flemma runs its file tools on the editor's
--- thread right after it says a call starts).
---@param bufnr integer|nil
---@param label string
---@return string[] errors
function M.take_now(bufnr, label)
  local errors = {}
  for _, spec in ipairs(M.scope(bufnr).specs) do
    local init, err = init_argv(spec)
    if init and #init > 0 then
      process.run(init)
      ready[spec.store] = core.file_type(spec.store .. "/objects") == "directory" or nil
    end
    local out = init and process.run(shadow.step_argv(spec, "take", label)) or ""
    if not git_box.answer(out, "checkpoint") then
      errors[#errors + 1] = spec.top .. ": " .. (err or out)
    end
  end
  return errors
end

---@class flemma_sandbox.CheckpointList
---@field top string
---@field rel string
---@field entries { n: integer, label: string, time: integer }[]

--- The checkpoints of the buffer's chat, per repository, newest first.
---@param bufnr integer|nil
---@return flemma_sandbox.CheckpointList[], flemma_sandbox.CheckpointScope
function M.list(bufnr)
  local scope = M.scope(bufnr)
  local out = {}
  for _, spec in ipairs(scope.specs) do
    out[#out + 1] = { top = spec.top, rel = spec.rel, entries = shadow.list(spec) }
  end
  return out, scope
end

--- Runs a step of a spec's store off the editor's thread, after the steps
--- queued before it (the store set up first); done(output).
---@param spec flemma_sandbox.ShadowSpec
---@param argv string[]
---@param done fun(out: string)
function M.run_step(spec, argv, done)
  step(spec, argv, function(out, err)
    done(out or err or "")
  end)
end

--- Records the tree of each store take() used after call n, off the
--- editor's thread; then done().
---@param specs flemma_sandbox.ShadowSpec[]
---@param n integer
---@param done fun()
function M.finish(specs, n, done)
  each(specs, function(spec, next_one)
    step(spec, shadow.step_argv(spec, "after", "", n), function()
      next_one(nil)
    end)
  end, function()
    done()
  end)
end

---@class flemma_sandbox.CallChanges
---@field top string
---@field rel string
---@field changes { status: string, path: string }[]

--- What call n changed in each repository of the buffer's chat (its
--- paths and A, M, D); a repository that kept no record of it is left out.
---@param bufnr integer|nil
---@param n integer
---@return flemma_sandbox.CallChanges[]
function M.call_changes(bufnr, n)
  local out = {}
  for _, spec in ipairs(M.scope(bufnr).specs) do
    local lines = shadow.call_diff(spec, n, false)
    if lines then
      local changes = {}
      for _, line in ipairs(lines) do
        local status, path = line:match("^(%a)%d*\t(.+)$")
        if status then
          changes[#changes + 1] = { status = status, path = path }
        end
      end
      out[#out + 1] = { top = spec.top, rel = spec.rel, changes = changes }
    end
  end
  return out
end

--- Call n's diff in each repository of the buffer's chat (git's unified
--- diff, with the repository's folder on a line of its own first).
---@param bufnr integer|nil
---@param n integer
---@return string[]
function M.call_diff(bufnr, n)
  local out = {}
  for _, spec in ipairs(M.scope(bufnr).specs) do
    local lines = shadow.call_diff(spec, n, true)
    if lines then
      out[#out + 1] = "# " .. spec.top
      vim.list_extend(out, lines)
    end
  end
  return out
end

return M
