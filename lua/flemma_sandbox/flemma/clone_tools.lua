--- Clone mode under Flemma (sandboxes.workspace = "clone" in Flemma's
--- sandbox.backends.flemma_sandbox, in setup() or a frontmatter): which
--- chats, and Flemma's file tools on a chat's copy. Flemma's bash, grep and
--- find already run through our backend, whose sandbox shows the copy at
--- the project's path; read, write, edit and ls run in Neovim, so they are
--- put in our place (flemma/tool_overrides.lua) and come here: they act on
--- the copy through flemma-sandbox's file tools (tools/files.lua,
--- tools/search.lua: no link followed out of the copy; Flemma's writable
--- paths and our rules both checked).
local backend = require("flemma_sandbox.flemma.backend")

local M = {}

--- Flemma's tools that act on files from Neovim.
M.FILE_TOOLS = { read = true, write = true, edit = true, ls = true }

--- Set by the bridge (flemma/init.lua): its wrap_for_call, through which
--- ls runs in the sandbox as one of Flemma's calls.
---@type fun(ctx: table, tool_name: string, argv: string[], extra: table): string[]|nil, string|nil
M.wrap_for_call = function()
  return nil, "flemma-sandbox: the Flemma bridge is not attached"
end

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
function M.on_copy(name, input, ctx, scope, done)
  -- usually made while the model answered (FlemmaRequestSending)
  local specs, made_err = require("flemma_sandbox.api.clone_mode").ensure_now(ctx.bufnr)
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
    env_path = require("flemma_sandbox.base.surroundings").getenv("PATH"),
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

return M
