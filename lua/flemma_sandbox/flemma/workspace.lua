--- Clone mode under Flemma (sandboxes.workspace = "clone" in Flemma's
--- sandbox.backends.flemma_sandbox, in setup() or a frontmatter). Flemma's
--- bash, grep and find already run through our backend, whose sandbox
--- shows the chat's copy at the project's path. Flemma's read, write, edit
--- and ls run in Neovim on the real tree, so their entries in Flemma's tool
--- registry are replaced, by name, with ones that keep Flemma's own for
--- every chat in direct mode and act on the copy in a chat in clone mode,
--- through flemma-sandbox's file tools (tools/files.lua, tools/search.lua:
--- no link followed out of the copy; Flemma's writable paths and our
--- rules both checked).
local backend = require("flemma_sandbox.flemma.backend")

local M = {}

--- Flemma's tools that act on files from Neovim.
M.FILE_TOOLS = { "read", "write", "edit", "ls" }

--- Set by the bridge (flemma/init.lua): its wrap_for_call, through which
--- ls runs in the sandbox as one of Flemma's calls.
---@type fun(ctx: table, tool_name: string, argv: string[], extra: table): string[]|nil, string|nil
M.wrap_for_call = function()
  return nil, "flemma-sandbox: the Flemma bridge is not attached"
end

--- The definitions this module put in Flemma's registry.
local ours = setmetatable({}, { __mode = "k" })

---@class flemma_sandbox.FlemmaWorkspaceScope
---@field resolved flemma_sandbox.ResolvedPolicy our backend's policy from Flemma's
---@field sandboxes flemma_sandbox.SandboxesConfig
---@field config flemma_sandbox.Config the effective config of our backend
---@field bwrap string

--- Whether Flemma runs the buffer's commands through our backend.
---@param bufnr integer
---@return boolean
local function ours_runs(bufnr)
  local fs = require("flemma.sandbox")
  local ok, cfg = pcall(fs.resolve_config, bufnr)
  if not ok or type(cfg) ~= "table" or not cfg.enabled then
    return false
  end
  local name = cfg.backend
  if name == "auto" or name == "required" then
    local got, detected = pcall(fs.detect_available_backend, bufnr)
    name = got and detected or nil
  end
  return name == backend.name
end

--- A Flemma chat's clone mode: nil for a buffer whose commands Flemma
--- does not run through our backend (no chat, Flemma not set up, its
--- sandbox off or another backend: the standalone config decides), false
--- for a chat in direct mode, else what its copies come from.
---@param bufnr integer|nil
---@return flemma_sandbox.FlemmaWorkspaceScope|false|nil
function M.scope(bufnr)
  if type(bufnr) ~= "number" or not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].filetype ~= "chat" then
    return nil
  end
  if not ours_runs(bufnr) then
    return nil
  end
  local sandboxes = backend.sandboxes_of(bufnr)
  if not (sandboxes and sandboxes.workspace == "clone") then
    return false
  end
  local ok, resolved, cfg = pcall(function()
    local flemma_cfg = require("flemma.config").materialize(bufnr)
    local backend_config = ((flemma_cfg.sandbox or {}).backends or {})[backend.name]
    local r, _, c = backend.resolve(require("flemma.sandbox").get_policy(bufnr), backend_config, { bufnr = bufnr })
    return r, c
  end)
  if not ok or not resolved or not cfg then
    return false
  end
  return { resolved = resolved, sandboxes = cfg.sandboxes, config = cfg, bwrap = cfg.backends.bwrap.path or "bwrap" }
end

--- Flemma's ExecutionResult from one of our tools' results.
---@param result table
---@return table
local function to_flemma(result)
  if result.error then
    return { success = false, error = result.error }
  end
  return { success = true, output = result.content or "" }
end

--- Runs one of Flemma's file tools on the chat's copies; done(result) gets
--- Flemma's ExecutionResult.
---@param name string
---@param input table
---@param ctx table Flemma's ExecutionContext
---@param scope flemma_sandbox.FlemmaWorkspaceScope
---@param done fun(result: table)
local function on_copy(name, input, ctx, scope, done)
  -- usually made while the model answered (FlemmaRequestSending)
  local specs, made_err = require("flemma_sandbox.workspaces").ensure_now(ctx.bufnr)
  if made_err then
    return done({ success = false, error = made_err })
  end
  local tools = require("flemma_sandbox.tools")
  local tool = tools.registry[name]
  local ours_input = vim.deepcopy(input)
  if type(input.path) == "string" and input.path ~= "" then
    ours_input.path = ctx.path.resolve(input.path) -- as Flemma's tool would
  end
  local bad = tools.check_input(tool.input_schema, ours_input)
  if bad then
    return done({ success = false, error = bad })
  end
  if (name == "write" or name == "edit") and not ctx.sandbox.is_path_writable(ours_input.path) then
    return done({
      success = false,
      error = name .. " to " .. input.path .. " refused: outside Flemma's writable paths (sandbox.policy.rw_paths)",
    })
  end
  local ours_ctx = {
    bufnr = ctx.bufnr,
    cwd = ctx.cwd,
    config = scope.config,
    resolved = scope.resolved,
    copies = specs,
    env_path = require("flemma_sandbox.surroundings").getenv("PATH"),
    on_job = function() end,
    wrap = function(argv)
      return M.wrap_for_call(ctx, name, argv, {})
    end,
  }
  local prepared, err = tool.prepare(ours_input, ours_ctx)
  if not prepared then
    return done({ success = false, error = err })
  end
  local ok, run_err = pcall(tool.run, ours_input, ours_ctx, function(result)
    done(to_flemma(result))
  end)
  if not ok then
    done({ success = false, error = "internal error: " .. tostring(run_err) })
  end
end

--- The definition that takes Flemma's place for one tool.
---@param name string
---@param original table Flemma's definition
---@return table
local function replacement(name, original)
  local def = {}
  for k, v in pairs(original) do
    def[k] = v
  end
  -- ls runs in the sandbox on a copy: a job, so an answer later
  local is_async = original.async == true or name == "ls"
  def.async = is_async
  def.execute = function(input, ctx, callback)
    local scope = M.scope(ctx.bufnr)
    if not scope then
      if original.async == is_async then
        return original.execute(input, ctx, callback)
      end
      local result = original.execute(input, ctx)
      -- after execute() returns: Flemma loses a result delivered before
      vim.schedule(function()
        callback(result)
      end)
      return nil
    end
    if is_async then
      on_copy(name, input, ctx, scope, function(result)
        vim.schedule(function()
          callback(result)
        end)
      end)
      return nil
    end
    local result
    on_copy(name, input, ctx, scope, function(r)
      result = r
    end)
    return result or { success = false, error = name .. " gave no result on the chat's copy" }
  end
  ours[def] = true
  return def
end

--- Puts the replacements in Flemma's registry unless they are there (Flemma
--- loads its own tools lazily and a reset registers them again: asked at
--- each chat buffer, request and approval). Flemma's entry is removed
--- first, so Flemma does not warn of a redefinition.
---@return boolean installed
function M.install()
  local ok, tools = pcall(require, "flemma.tools")
  if not ok then
    return false
  end
  local registry_ok, registry = pcall(require, "flemma.tools.registry")
  local all = true
  for _, name in ipairs(M.FILE_TOOLS) do
    local current = tools.get(name)
    if current and not ours[current] then
      local def = replacement(name, current)
      if registry_ok then
        registry.unregister(name)
      end
      tools.register(name, def)
    end
    local now = tools.get(name)
    all = all and (now == nil or ours[now] == true)
  end
  return all
end

--- Whether Flemma's file tool `name` is ours now (for the approval
--- resolver: a clone chat's call to Flemma's own is refused).
---@param name string
---@return boolean
function M.is_replaced(name)
  local ok, tools = pcall(require, "flemma.tools")
  local def = ok and tools.get(name) or nil
  return def == nil or ours[def] == true
end

return M
