--- An approval resolver for Flemma's chain: denies every tool call while
--- tool calls are off (FLEMMA_SANDBOX_TOOLS=off, tools.enabled = false);
--- denies Flemma's host-side file tools where flemma-sandbox's rules would
--- refuse the sandboxed command —
--- read, ls, find and grep of a hidden path, write and edit of a protected
--- one or one outside the writable roots — and asks before flemma-sandbox's
--- git tool clones outside the playground. It runs above Flemma's own
--- resolvers, so an auto_approve list cannot let such a call through, and
--- passes (nil) on everything else.
local sandbox = require("flemma_sandbox")

local M = {}

M.NAME = "flemma_sandbox:hidden_and_protected"
M.DESCRIPTION = "flemma-sandbox: deny reads of hidden paths and writes of protected ones"
--- Above Flemma's config resolver (100).
M.PRIORITY = 150

local READS = { read = true, ls = true, find = true, grep = true }
local WRITES = { write = true, edit = true }
--- Tools whose relative paths Flemma resolves against the chat file's folder
--- (ctx.path.resolve); the others run in the tool's working directory.
local FROM_BUFFER_DIR = { read = true, write = true, edit = true }

--- The folder Flemma resolves a tool's relative path against.
---@param tool_name string
---@param bufnr integer
---@return string
local function base_dir(tool_name, bufnr)
  local name = vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_buf_get_name(bufnr) or ""
  local buffer_dir = name ~= "" and vim.fn.fnamemodify(name, ":p:h") or nil
  if FROM_BUFFER_DIR[tool_name] then
    return buffer_dir or vim.fn.getcwd()
  end
  local ok, facade = pcall(require, "flemma.config")
  local cfg = ok and select(2, pcall(facade.materialize, bufnr)) or nil
  local cwd = type(cfg) == "table" and cfg.tools and type(cfg.tools[tool_name]) == "table" and cfg.tools[tool_name].cwd
  if cwd == "urn:flemma:buffer:path" then
    return buffer_dir or vim.fn.getcwd()
  end
  if type(cwd) == "string" and cwd ~= "urn:flemma:cwd" and cwd:sub(1, 1) == "/" then
    return cwd
  end
  return vim.fn.getcwd()
end

--- Why flemma-sandbox refuses this call, or nil.
---@param tool_name string
---@param input table
---@param bufnr integer
---@return string|nil reason
function M.refusal(tool_name, input, bufnr)
  if not (READS[tool_name] or WRITES[tool_name]) then
    return nil
  end
  local path = type(input) == "table" and input.path or nil
  if path ~= nil and type(path) ~= "string" then
    return nil -- Flemma reports a bad input itself
  end
  local view = require("flemma_sandbox.flemma.view").view(bufnr)
  if not (view.enabled and view.ours and view.resolved) then
    return nil -- Flemma's own rules apply
  end
  local real = sandbox.real_path(path or ".", base_dir(tool_name, bufnr))
  if not real then
    return nil
  end
  if READS[tool_name] then
    local rule = sandbox.hidden_rule(real, view.resolved)
    -- Flemma keeps a truncated result's whole output in $TMPDIR or /tmp
    -- (tools.truncate.output_path_format) and tells the model to read it:
    -- the host's own temp folder, out of the sandbox's view but not a secret
    local flemma_output = rule
      and rule.path ~= real
      and (rule.path == "/tmp" or rule.rule:match("%$TMPDIR"))
      and real:match("^(.*)/flemma_[^/]*$") == rule.path
    if rule and not flemma_output then
      return string.format("%s of %s blocked: hidden (%s)", tool_name, real, rule.rule)
    end
    return nil
  end
  local ok, why = sandbox.writable_in(real, view.resolved)
  if not ok then
    return string.format("%s of %s blocked: %s", tool_name, real, (why:gsub("^" .. vim.pesc(real) .. " is ", "")))
  end
  return nil
end

--- flemma-sandbox's git tool running on the host (a repository write, a
--- clone outside the playground): the user is asked even when an
--- auto_approve rule covers git.
---@param input table
---@param bufnr integer
---@return boolean
function M.git_on_host(input, bufnr)
  local plan = require("flemma_sandbox.tools.git").plan(type(input) == "table" and input.args, base_dir("git", bufnr))
  return plan ~= nil and plan.on_host == true
end

---@type table<string, boolean> "bufnr:tool_id" of git calls this resolver made Flemma ask about
local flemma_asked = {}

--- Whether Flemma's own approval was required for this git call (the
--- resolver said so when the chain ran): then the user approved it there,
--- and the tool does not ask again. Forgets it (one answer, one run).
---@param bufnr integer
---@param tool_id string|nil
---@return boolean
function M.take_flemma_approval(bufnr, tool_id)
  local key = tostring(bufnr) .. ":" .. tostring(tool_id)
  local asked = flemma_asked[key] == true
  flemma_asked[key] = nil
  return asked
end

local notified = {}

--- One notification per buffer and reason, not one per tool call.
---@param bufnr integer
---@param message string
local function notify_once(bufnr, message)
  if notified[bufnr] == message then
    return
  end
  notified[bufnr] = message
  vim.schedule(function()
    vim.notify("flemma-sandbox: " .. message, vim.log.levels.WARN)
  end)
end

--- Why a clone-mode chat's call is refused, or nil: its file tools are
--- put in place first (flemma/clone_tools.lua); should Flemma's own read,
--- write, edit or ls still be there, it would act on the real tree.
---@param tool_name string
---@param bufnr integer
---@return string|nil
function M.clone_refusal(tool_name, bufnr)
  local workspace = require("flemma_sandbox.flemma.clone_tools")
  if not workspace.scope(bufnr) or not workspace.FILE_TOOLS[tool_name] then
    return nil
  end
  local overrides = require("flemma_sandbox.flemma.tool_overrides")
  overrides.install()
  if overrides.is_replaced(tool_name) then
    return nil
  end
  return "Flemma's "
    .. tool_name
    .. ' would act on your real tree, not the chat\'s copy (sandboxes.workspace = "clone"): refused'
end

--- Why every call of the buffer is refused, whichever way it comes (this
--- resolver, or run by hand past the resolvers: our definitions in
--- Flemma's tool registry ask it too, flemma/tool_overrides.lua): tool
--- calls are off, or the buffer's frontmatter loosens the sandbox and the
--- user has not trusted it (flemma/frontmatter_check.lua). Nil when neither holds.
---@param bufnr integer|nil
---@return string|nil reason
function M.buffer_refusal(bufnr)
  local refused = sandbox.tools_refusal(type(bufnr) == "number" and bufnr or nil)
  if refused or type(bufnr) ~= "number" then
    return refused
  end
  return (require("flemma_sandbox.flemma.frontmatter_check").refusal(bufnr))
end

--- Flemma's resolver contract: "deny", "require_approval", or nil to let
--- the chain go on.
---@param tool_name string
---@param input table
---@param context table { bufnr, tool_id }
---@return "deny"|"require_approval"|nil
function M.resolve(tool_name, input, context)
  local bufnr = context and context.bufnr
  if context and type(context.tool_id) == "string" and type(input) == "table" then
    -- what the call does, for its checkpoint's label (flemma/init.lua)
    local overrides = require("flemma_sandbox.flemma.tool_overrides")
    overrides.labels[context.tool_id] = overrides.label_for(tool_name, input) or (tool_name .. ": ")
  end
  local refused = M.buffer_refusal(bufnr)
  if refused then
    -- Flemma gives the model its own denial text: the notice names why
    notify_once(type(bufnr) == "number" and bufnr or 0, refused)
    return "deny"
  end
  if type(bufnr) ~= "number" then
    return nil
  end
  local no_clone = M.clone_refusal(tool_name, bufnr)
  if no_clone then
    notify_once(bufnr, no_clone)
    return "deny"
  end
  if tool_name == "git" and M.git_on_host(input, bufnr) then
    if context.tool_id then
      flemma_asked[tostring(bufnr) .. ":" .. tostring(context.tool_id)] = true
    end
    return "require_approval"
  end
  local reason = M.refusal(tool_name, input, bufnr)
  if not reason then
    return nil
  end
  vim.schedule(function()
    vim.notify("flemma-sandbox: " .. reason, vim.log.levels.WARN)
  end)
  return "deny"
end

return M
