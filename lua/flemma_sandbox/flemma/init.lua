--- The Flemma bridge: registers flemma-sandbox with Flemma through Flemma's
--- documented extension points only (its sandbox backend registry, its
--- approval resolver chain, its tool registry, its User autocmds, its
--- config schema) and answers what the hardening is for a buffer under
--- Flemma's config. It never replaces a Flemma module or function; in
--- Flemma's tool registry it puts its own bash, read, write, edit and ls in
--- place of Flemma's (flemma/tool_overrides.lua), which run Flemma's.
-- loaded by attach(), when Flemma is there: standalone start-ups skip it
local backend = require("flemma_sandbox.base.util").lazy_require("flemma_sandbox.flemma.backend")

local M = {}

---@class flemma_sandbox.FlemmaCall
---@field bufnr integer
---@field tool_name string
---@field tool_id string
---@field env table<string, string>|nil Flemma's tools.<name>.env for this call
---@field rw_paths string[]|nil writable for this call beyond Flemma's rw_paths (flemma-sandbox's own tools)
--- given each wrap's record, when the caller takes the run's end
---@field on_wrap fun(record: flemma_sandbox.WrapRecord)|nil

--- Whether Flemma is installed (its modules are on the runtimepath).
---@return boolean
function M.flemma_present()
  local ok = pcall(require, "flemma.sandbox")
  return ok
end

local attached = false
local resolver_registered = false
---@type flemma_sandbox.FlemmaCall|nil
local current = nil

--- Flemma's config for a buffer, read through its config facade.
---@param bufnr integer|nil
---@return table|nil
local function flemma_config(bufnr)
  local ok, facade = pcall(require, "flemma.config")
  if not ok then
    return nil
  end
  local got, cfg = pcall(facade.materialize, bufnr)
  return got and cfg or nil
end

--- A Flemma tool call as our backend's wrap needs it: the buffer, the tool
--- and Flemma's tools.<name>.env.
---@param bufnr integer
---@param tool_name string
---@param tool_id string|nil
---@return flemma_sandbox.FlemmaCall
local function call_of(bufnr, tool_name, tool_id)
  local cfg = flemma_config(bufnr)
  local tool_cfg = cfg and cfg.tools and cfg.tools[tool_name]
  return {
    bufnr = bufnr,
    tool_name = tool_name,
    tool_id = tool_id,
    env = type(tool_cfg) == "table" and type(tool_cfg.env) == "table" and tool_cfg.env or nil,
  }
end

--- Runs fn as a Flemma tool call (one whose execute runs after the tick of
--- FlemmaToolExecuting: after its checkpoint, tool_overrides.lua);
--- on_wrap gets the record of each command our backend wraps for it.
---@param ctx table Flemma's ExecutionContext
---@param tool_name string
---@param fn fun(): any
---@param on_wrap? fun(record: flemma_sandbox.WrapRecord)
---@return any
function M.as_call(ctx, tool_name, fn, on_wrap)
  local saved = current
  current = call_of(ctx.bufnr, tool_name, ctx.tool_id)
  current.on_wrap = on_wrap
  local ok, out = pcall(fn)
  current = saved
  if not ok then
    error(out, 0)
  end
  return out
end

--- Flemma dispatches FlemmaToolExecuting right before it calls the tool's
--- execute(), which wraps its command in the same tick: remember that call
--- until the tick ends, so wrap() knows the buffer and the tool.
---@param data table ev.data of FlemmaToolExecuting
local function on_tool_executing(data)
  if type(data) ~= "table" or type(data.bufnr) ~= "number" then
    return
  end
  current = call_of(data.bufnr, data.tool_name, data.tool_id)
  local this = current
  local overrides = require("flemma_sandbox.flemma.tool_overrides")
  -- asked before install(): Flemma chose this call's execute already
  local ours = data.tool_name == "git" or overrides.is_replaced(data.tool_name)
  overrides.install() -- for the next call
  -- direct mode's checkpoint, before the call writes, when none of ours
  -- takes it first in the background (tool_overrides.lua; the git tool):
  -- Flemma runs its file tools on this thread right after this event, so
  -- it is taken now
  local sandboxes = require("flemma_sandbox.flemma.backend").sandboxes_of(data.bufnr)
  local off = sandboxes and (sandboxes.checkpoints == false or sandboxes.workspace == "clone")
  local name = data.tool_name
  if require("flemma_sandbox.api.checkpoints").WRITING_TOOLS[name] and not off and not ours then
    overrides.say_failed(require("flemma_sandbox.api.checkpoints").take_now(data.bufnr, overrides.label_of(data, name)))
  end
  vim.schedule(function()
    if current == this then
      current = nil
    end
  end)
end

--- Wraps argv for one of flemma-sandbox's own Flemma tools with Flemma's
--- ctx.sandbox.wrap_command (so Flemma's enabled, backend and policy
--- decide), telling our backend what this call needs beyond Flemma's
--- policy: extra writable paths and environment. Flemma's wrap is
--- synchronous, so the call is known only for its duration.
---@param ctx table Flemma's ExecutionContext
---@param tool_name string
---@param argv string[]
---@param extra { rw_paths: string[]|nil, env: table<string, string>|nil }
--- The third value is our backend's record of the wrap (job.lua takes the
--- run's end with it).
---@return string[]|nil argv, string|nil err, flemma_sandbox.WrapRecord|nil record
function M.wrap_for_call(ctx, tool_name, argv, extra)
  local saved = current
  local env = vim.deepcopy(saved and saved.bufnr == ctx.bufnr and saved.env or {})
  for k, v in pairs(extra.env or {}) do
    env[k] = v
  end
  current = { bufnr = ctx.bufnr, tool_name = tool_name, tool_id = ctx.tool_id, env = env, rw_paths = extra.rw_paths }
  local sandbox = type(ctx.sandbox) == "table" and ctx.sandbox or {}
  local ok, wrapped, err, record = pcall(sandbox.wrap_command, argv)
  current = saved
  if not ok then
    return nil, tostring(wrapped)
  end
  return wrapped, err, record
end

--- Registers the backend with its schema. Before Flemma's setup() Flemma's
--- config is not initialised and its register() raises after adding the
--- entry; the entry is what Flemma's setup() needs to resolve
--- sandbox.backends.flemma_sandbox, so that error is expected here.
---@return boolean registered
local function register_backend()
  local fs = require("flemma.sandbox")
  local definition = {
    available = backend.available,
    wrap = backend.wrap,
    priority = backend.priority,
    description = backend.description,
    config_schema = backend.config_schema(),
  }
  local ok = pcall(fs.register, backend.name, definition)
  return ok or fs.has(backend.name)
end

--- Registers backend, approval resolver and event listener with Flemma.
--- Safe to call any number of times, before or after Flemma's setup().
---@return boolean attached false when Flemma is not installed
function M.attach()
  if not M.flemma_present() then
    return false
  end
  require("flemma_sandbox.base.hooks").bridge = M.facade()
  -- the tool call whose command the backend wraps (a proxy cannot take a field)
  require("flemma_sandbox.flemma.backend").current_call = function()
    return current
  end
  require("flemma_sandbox.flemma.clone_tools").wrap_for_call = M.wrap_for_call
  require("flemma_sandbox.flemma.tool_overrides").as_call = M.as_call
  require("flemma_sandbox.flemma.tool_overrides").refusal = function(...)
    return require("flemma_sandbox.flemma.approval").refusal(...)
  end
  require("flemma_sandbox.flemma.tool_overrides").denial = function(bufnr)
    return require("flemma_sandbox.flemma.approval").buffer_refusal(bufnr)
  end
  local fs = require("flemma.sandbox")
  if not fs.has(backend.name) then
    local registration = require("flemma_sandbox.flemma.registration")
    registration.before_first()
    register_backend()
    registration.say_when_dropped()
  end
  if not resolver_registered then
    local ok = pcall(function()
      local approval = require("flemma_sandbox.flemma.approval")
      require("flemma.tools.approval").register(approval.NAME, {
        description = approval.DESCRIPTION,
        priority = approval.PRIORITY,
        resolve = approval.resolve,
      })
    end)
    resolver_registered = ok
  end
  if not attached then
    attached = true
    local group = vim.api.nvim_create_augroup("flemma_sandbox_bridge", { clear = true })
    vim.api.nvim_create_autocmd("User", {
      group = group,
      pattern = "FlemmaRequestSending",
      callback = function(ev)
        -- while the model answers: the checkpoints its tool calls will
        -- wait for (on_tool_executing) then only look at what changed, or
        -- in clone mode the chat's copies are made
        if type(ev.data) == "table" and type(ev.data.bufnr) == "number" then
          local bufnr = ev.data.bufnr
          local sandboxes = require("flemma_sandbox.flemma.backend").sandboxes_of(bufnr)
          require("flemma_sandbox.flemma.tool_overrides").install()
          if require("flemma_sandbox.flemma.clone_tools").scope(bufnr) then
            require("flemma_sandbox.api.clone_mode").ensure(bufnr, function(errors)
              if #errors > 0 then
                require("flemma_sandbox.base.notice").say(errors[1], vim.log.levels.WARN)
              end
            end)
          elseif not (sandboxes and sandboxes.checkpoints == false) then
            pcall(require("flemma_sandbox.api.checkpoints").warm, bufnr)
          end
        end
      end,
    })
    vim.api.nvim_create_autocmd("User", {
      group = group,
      pattern = "FlemmaToolFinished",
      callback = function(ev)
        -- clone mode: the copy's work into the user's repository as
        -- refs/remotes/sandbox-NAME/*, after each call that can write
        local data = ev.data
        if type(data) == "table" and type(data.bufnr) == "number" then
          local writing = require("flemma_sandbox.api.checkpoints").WRITING_TOOLS[data.tool_name]
          if writing and require("flemma_sandbox.flemma.clone_tools").scope(data.bufnr) then
            require("flemma_sandbox.tools.around").sync(data.tool_name, data.bufnr)
          end
        end
      end,
    })
    -- every chat: our definitions are put in Flemma's registry before
    -- any call (one run by hand with :Flemma tool:execute asks no
    -- resolver first), so a chat whose frontmatter loosens the sandbox,
    -- not trusted, runs nothing whatever it set, and a chat its
    -- frontmatter puts in clone mode acts on its copies
    for event, pattern in pairs({ FileType = "chat", BufEnter = "*.chat" }) do
      vim.api.nvim_create_autocmd(event, {
        group = group,
        pattern = pattern,
        callback = function()
          require("flemma_sandbox.flemma.tool_overrides").install()
        end,
      })
    end
    vim.api.nvim_create_autocmd("User", {
      group = group,
      pattern = "FlemmaToolExecuting",
      callback = function(ev)
        on_tool_executing(ev.data)
      end,
    })
  end
  return true
end

--- Saves Flemma's own config for flemma-sandbox (not a chat's
--- frontmatter) for the command line, which applies it after setup()'s
--- (config/saved.lua); nothing is written when it did not change.
function M.save_for_command_line()
  local global = flemma_config(nil)
  local backends = global and global.sandbox and global.sandbox.backends or {}
  require("flemma_sandbox.api.hosted").save_for_command_line(backend.plain(backends[backend.name]), backend.CONFIG_KEY)
end

--- Starts the backend's test sandbox in the background (for the first
--- chat in a session): Flemma's setup() at start-up was answered from
--- cheap checks; when the test fails, a new registration makes Flemma's
--- detection ask again (its cache is kept per registry generation), so
--- "auto" moves on as Flemma documents.
---@param bufnr integer
function M.check_in_background(bufnr)
  local cfg = flemma_config(bufnr)
  local sandbox_cfg = cfg and cfg.sandbox or {}
  local backend_config = (sandbox_cfg.backends or {})[backend.name]
  require("flemma_sandbox.api.hosted").check_in_background(
    backend.plain(backend_config),
    backend.CONFIG_KEY,
    function(ok)
      if not ok and M.flemma_present() then
        local fs = require("flemma.sandbox")
        fs.unregister(backend.name)
        register_backend()
      end
    end
  )
end

--- What a chat's prestart (nvim/prestart.lua) needs under Flemma: the
--- chat's policy as our backend resolves it, and a wrap of a command as a
--- bash call of the chat (Flemma's wrap_command with the bridge's call),
--- so it starts the sandbox the chat's first call joins. nil with why when
--- Flemma does not run the chat's commands with our backend, or refuses them.
---@param bufnr integer
---@return flemma_sandbox.PrestartPlan|nil plan, string|nil why
function M.prestart_plan(bufnr)
  local view = M.view(bufnr)
  if not (view.enabled and view.ours and view.resolved and view.config) then
    return nil, view.error or "Flemma's sandbox does not use flemma_sandbox here"
  end
  -- a frontmatter that loosens, not trusted yet: its calls are refused
  -- until it is, and then they may run with another policy
  local refused = require("flemma_sandbox.flemma.approval").buffer_refusal(bufnr)
    or require("flemma_sandbox.flemma.frontmatter_check").refusal(bufnr)
  if refused then
    return nil, refused
  end
  local fs = require("flemma.sandbox")
  local cfg = flemma_config(bufnr)
  local backend_config = cfg and cfg.sandbox and (cfg.sandbox.backends or {})[backend.name]
  return {
    policy = view.resolved,
    sandboxes = view.config.sandboxes,
    wrap = function(argv)
      local out = M.as_call({ bufnr = bufnr }, "bash", function()
        return { fs.wrap_command(argv, bufnr) }
      end)
      return out[1], out[2], out[3]
    end,
    ready = function(done)
      require("flemma_sandbox.api.hosted").check_in_background(backend.plain(backend_config), backend.CONFIG_KEY, done)
    end,
  }
end

--- What the standalone UI may ask of the bridge (hooks.lua): it never
--- requires the bridge, nor the bridge the UI.
---@return flemma_sandbox.BridgeFacade
function M.facade()
  local trust = require("flemma_sandbox.flemma.frontmatter_check")
  return {
    is_attached = M.is_attached,
    view = M.view,
    refusal = trust.refusal,
    set_trust = trust.set,
    check_in_background = M.check_in_background,
    prestart_plan = M.prestart_plan,
    save_for_command_line = M.save_for_command_line,
    workspace_scope = function(bufnr)
      return require("flemma_sandbox.flemma.clone_tools").scope(bufnr)
    end,
    unguarded = function()
      return require("flemma_sandbox.flemma.tool_overrides").unguarded()
    end,
    calls_running = function(bufnr)
      local count = 0
      for _, call in pairs(require("flemma_sandbox.flemma.tool_overrides").calls) do
        count = count + ((call.bufnr == bufnr) and 1 or 0)
      end
      return count
    end,
    tools_in_place = function()
      local overrides = require("flemma_sandbox.flemma.tool_overrides")
      for _, name in ipairs(overrides.NAMES) do
        if not overrides.is_replaced(name) then
          return false
        end
      end
      return true
    end,
    enable = function(bufnr)
      local fs = require("flemma.sandbox")
      local ok, err = fs.validate_backend(bufnr)
      if ok then
        fs.set_enabled(true)
      end
      return ok, err
    end,
    disable = function()
      require("flemma.sandbox").set_enabled(false)
    end,
  }
end

---@return boolean
function M.is_attached()
  return attached
end

--- What Flemma does with a buffer's commands (flemma/view.lua).
---@param bufnr integer
---@return flemma_sandbox.FlemmaView
function M.view(bufnr)
  return require("flemma_sandbox.flemma.view").view(bufnr)
end

return M
