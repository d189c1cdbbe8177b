--- A chat's live sandbox started in the background when the chat is
--- opened or entered (sandboxes.prestart), so the model's first tool call
--- joins a running sandbox instead of waiting for one to start. The start
--- is a run of `true` down the very wrap path of the chat's bash calls
--- (standalone: the public API's wrapper; under Flemma: Flemma's
--- wrap_command with the bridge's call, hooks.bridge.prestart_plan), so it
--- starts the sandbox, with the key, that the first call joins. It never
--- asks the user, never stops another chat's sandbox to make room
--- (sandboxes.max_running), runs only when none runs yet, and fails
--- quietly: a debug line, and :FlemmaSandbox status says it.
local M = {}

---@class flemma_sandbox.PrestartPlan
---@field policy flemma_sandbox.ResolvedPolicy the chat's (policy.chat set for a chat)
---@field sandboxes flemma_sandbox.SandboxesConfig
---@field wrap fun(argv: string[], env: table<string, string>|nil): string[]|nil, string|nil, table|nil
---@field ready fun(done: fun(ok: boolean, err: string|nil)) the backend's test, in the background

--- What the last prestart of each live folder did, for the status:
--- "started", "skipped" or "failed", with why and when.
---@type table<string, { state: string, why: string|nil, at: integer }>
M.last = {}

---@type table<string, boolean> live folders whose prestart runs now
local busy = {}

---@type table<string, integer> live folders of chats whose folders are
--- being removed (nvim/sandboxes.lua remove): no prestart starts them
--- meanwhile, or its wrap would make the folders again under the removal
local held = {}

--- Bumped by M.reset: a prestart still waiting then starts nothing.
local generation = 0

--- How often, and how far apart, the backend's test sandbox is waited for.
local READY_TRIES, READY_EVERY_MS = 60, 250

---@param dir string|nil
---@param state string
---@param why string|nil
local function say(dir, state, why)
  if dir then
    M.last[dir] = { state = state, why = why, at = os.time() }
  end
  -- a debug line, shown only with 'verbose' set (:set verbose=1)
  if state ~= "started" and vim.o.verbose > 0 then
    local text = string.format("flemma-sandbox: prestart %s: %s", state, tostring(why))
    pcall(vim.notify, text, vim.log.levels.DEBUG)
  end
end

--- The standalone chat's plan: the public API's policy and wrapper.
---@param bufnr integer
---@return flemma_sandbox.PrestartPlan|nil plan, string|nil why not
local function standalone_plan(bufnr)
  local sandbox = require("flemma_sandbox")
  local cfg = sandbox.resolve_config(bufnr)
  if not cfg.enabled then
    return nil, "the sandbox is off"
  end
  local refused = sandbox.tools_refusal(bufnr)
  if refused then
    return nil, refused
  end
  local bwrap = require("flemma_sandbox.backends.bwrap")
  return {
    policy = (sandbox.get_policy(bufnr)),
    sandboxes = cfg.sandboxes,
    wrap = sandbox.wrapper(bufnr, { bufnr = bufnr }),
    ready = function(done)
      bwrap.check_in_background(cfg.backends.bwrap, done)
    end,
  }
end

--- Whether the sandbox kept in dir runs (the helper's --live-info, off
--- the editor's thread): done(running).
---@param helper string
---@param dir string
---@param done fun(running: boolean)
local function running(helper, dir, done)
  local started = require("flemma_sandbox.base.surroundings").output_in_background(
    helper,
    { "--live-info", dir },
    function(out)
      done(out:match("^running ") ~= nil)
    end
  )
  if not started then
    done(false)
  end
end

--- Runs `true` in the chat's sandbox through plan.wrap: the helper starts
--- the sandbox (its keeper stays) and the run ends.
---@param plan flemma_sandbox.PrestartPlan
---@param dir string
---@param bufnr integer
local function start(plan, dir, bufnr)
  local live = require("flemma_sandbox.backends.live")
  busy[dir] = true
  -- the chat's calls wait for this run (live.after_prestart)
  live.prestart_began(bufnr)
  local ok, handle, err = pcall(require("flemma_sandbox").run, { "true" }, {
    wrap = plan.wrap,
    timeout_ms = 60000,
    on_exit = function(r)
      busy[dir] = nil
      live.prestart_ended(bufnr)
      if r.exit_code == 0 and r.sandboxed then
        say(dir, "started")
      else
        say(dir, "failed", (r.stderr or ""):match("[^\n]+") or ("exit status " .. tostring(r.exit_code)))
      end
    end,
  })
  if not ok or not handle then
    busy[dir] = nil
    live.prestart_ended(bufnr)
    say(dir, "failed", ok and err or handle)
  end
end

--- The prestart of plan's chat, once the backend's test sandbox is done.
---@param plan flemma_sandbox.PrestartPlan
---@param tries integer
local function when_ready(plan, tries, bufnr)
  local answered, gen = false, generation
  plan.ready(function(ok, err)
    answered = true
    if gen ~= generation then
      return
    end
    local live = require("flemma_sandbox.backends.live")
    local dir = live.dir_for(plan.policy.chat)
    if not ok or not dir then
      return say(dir, "failed", err or "no state folder")
    end
    if busy[dir] or live.used[dir] then
      return -- started, or used by a call, in this Neovim already
    end
    if held[dir] then
      return say(dir, "skipped", "the chat's folders are being removed")
    end
    if not live.room(dir, plan.sandboxes) then
      return say(dir, "skipped", "sandboxes.max_running sandboxes run; none is stopped to start this one")
    end
    local helper = require("flemma_sandbox.backends.helper").helper()
    if not helper then
      return say(dir, "failed", "no helper")
    end
    busy[dir] = true
    running(helper, dir, function(is_running)
      busy[dir] = nil
      if gen ~= generation or live.used[dir] then
        return -- a call of the chat came meanwhile: it started the sandbox
      end
      if is_running then
        return say(dir, "skipped", "it runs already")
      end
      if held[dir] then
        return say(dir, "skipped", "the chat's folders are being removed")
      end
      -- the plan again, now: a frontmatter trusted or changed meanwhile
      -- may give the chat another sandbox
      local fresh = vim.api.nvim_buf_is_valid(bufnr) and M.plan_of(bufnr)
      if not fresh or not fresh.policy.chat or live.dir_for(fresh.policy.chat) ~= dir then
        return say(dir, "skipped", "the chat's policy changed while it waited")
      end
      -- a chat's outputs folder first: its coming changes the policy
      pcall(require("flemma_sandbox.tools.outputs").make_dir)
      start(fresh, dir, bufnr)
    end)
  end)
  -- the test runs (another caller started it): asked again in a while
  if not answered and tries > 0 then
    vim.defer_fn(function()
      if gen == generation then
        when_ready(plan, tries - 1, bufnr)
      end
    end, READY_EVERY_MS)
  end
end

--- The chat's plan: the bridge's under Flemma, else the public API's.
---@param bufnr integer
---@return flemma_sandbox.PrestartPlan|nil plan, string|nil why not
function M.plan_of(bufnr)
  local bridge = require("flemma_sandbox.base.hooks").bridge
  local ok, plan, why
  if bridge and bridge.is_attached() then
    if not bridge.prestart_plan then
      return nil, "no prestart under this bridge"
    end
    ok, plan, why = pcall(bridge.prestart_plan, bufnr)
  else
    ok, plan, why = pcall(standalone_plan, bufnr)
  end
  if not ok then
    return nil, tostring(plan)
  end
  return plan, why
end

--- Starts the chat's sandbox in the background when it should: a chat
--- (a live sandbox wanted), sandboxes.prestart on, tool calls on, the
--- chat's policy resolved, room within max_running, not running yet.
---@param bufnr integer
function M.maybe(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local plan, why = M.plan_of(bufnr)
  if not plan then
    return say(nil, "skipped", why)
  end
  local sandboxes = plan.sandboxes or {}
  if sandboxes.prestart == false or not sandboxes.live or not (plan.policy and plan.policy.chat) then
    return
  end
  if sandboxes.name then
    -- shared by the chats of that name: its first call from a chat new to
    -- the name starts it again anyway (to add that chat's file)
    return say(nil, "skipped", "sandboxes.name shares the sandbox with other chats")
  end
  if sandboxes.workspace == "clone" then
    -- the copies first, in the background (the wrap would make them while the editor waits)
    return require("flemma_sandbox.api.clone_mode").ensure(bufnr, function(errors)
      if #errors == 0 then
        when_ready(plan, READY_TRIES, bufnr)
      end
    end)
  end
  when_ready(plan, READY_TRIES, bufnr)
end

--- Whether a prestart asks about or starts a sandbox now.
---@return boolean
function M.busy()
  return next(busy) ~= nil
end

--- No prestart starts the sandbox of the live folder dir until as many
--- M.release(dir) (its chat's folders are being removed).
---@param dir string
function M.hold(dir)
  held[dir] = (held[dir] or 0) + 1
end

---@param dir string
function M.release(dir)
  local n = (held[dir] or 1) - 1
  held[dir] = n > 0 and n or nil
end

--- Forgets what prestarts did, and drops those still waiting (specs).
function M.reset()
  generation = generation + 1
  busy, M.last = {}, {}
  require("flemma_sandbox.backends.live").prestarts_ended()
end

--- The status's words for the last prestart of dir, or nil.
---@param dir string
---@return string|nil
function M.text(dir)
  local last = M.last[dir]
  if not last then
    return nil
  end
  local at = os.date("%H:%M:%S", last.at)
  if last.state == "started" then
    return "started when the chat was opened (" .. at .. ", sandboxes.prestart)"
  end
  return string.format("prestart %s at %s: %s", last.state, at, tostring(last.why))
end

return M
