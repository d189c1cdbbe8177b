--- Flemma's built-in bash, read, write, edit and ls, put in our place in
--- Flemma's tool registry (by name; Flemma's description, inputs and
--- preview kept) for chats whose commands run in our backend:
---   - in a chat in clone mode, read, write, edit and ls act on the chat's
---     copy (flemma/clone_tools.lua);
---   - otherwise read, write, edit and ls are refused where the approval
---     resolver would deny them (a hidden path read, a protected one
---     written: also for a call run by hand, which asks no resolver), and
---     bash, write and edit run once the checkpoint is taken, off the
---     editor's thread (checkpoints.lua), then Flemma's own execute; bash's
---     result gets the run's `[sandbox]` notes (flemma/notes.lua).
--- Every other tool in the registry (Flemma's grep, find, ...; ours) gets
--- a guard in its place. All of them, in every chat, whatever runs its
--- commands, first ask the rule the approval resolver asks of the whole
--- buffer (tool calls off; a frontmatter that loosens the sandbox, not
--- trusted): a call run by hand (:Flemma tool:execute, Alt-Enter) skips
--- the resolvers, and such a frontmatter may have turned Flemma's sandbox
--- off. They are put there at every chat buffer, request and call.
local calls = require("flemma_sandbox.api.calls")
local notes = require("flemma_sandbox.flemma.notes")
local workspace = require("flemma_sandbox.flemma.clone_tools")

local M = {}

M.NAMES = { "bash", "read", "write", "edit", "ls" }

--- What each call does, for its checkpoint's label, by tool id (set by
--- the approval resolver, which sees the input).
---@type table<string, string>
M.labels = {}

--- Set by the bridge (flemma/init.lua): runs fn as the Flemma call of ctx,
--- so our backend's wrap knows the buffer, the tool and its environment
--- when Flemma's bash wraps its command after the checkpoint.
---@type fun(ctx: table, tool_name: string, fn: fun(): any, on_wrap: fun(record: flemma_sandbox.WrapRecord)|nil): any
M.as_call = function(_, _, fn)
  return fn()
end

--- Set by the bridge (flemma/init.lua): the approval resolver's rule for
--- the whole buffer (approval.lua's buffer_refusal), asked before any call
--- of the buffer runs, by hand too.
---@type fun(bufnr: integer): string|nil
M.denial = function()
  return nil
end

--- Set by the bridge (flemma/init.lua): the approval resolver's check (a
--- read of a hidden path, a write of a protected one), asked again here
--- because a call run by hand (:Flemma tool:execute) skips the resolvers.
---@type fun(tool_name: string, input: table, bufnr: integer): string|nil
M.refusal = function()
  return nil
end

--- The definitions this module put in Flemma's registry.
local ours = setmetatable({}, { __mode = "k" })

local checkpoint_warned = false

--- Says a failed checkpoint, once per session (the call runs either way).
---@param errors string[]
function M.say_failed(errors)
  if #errors > 0 and not checkpoint_warned then
    checkpoint_warned = true
    require("flemma_sandbox.base.notice").say("no checkpoint before this call: " .. errors[1], vim.log.levels.WARN)
  end
end

--- What a call does, from its input: its command, path or git arguments.
---@param tool_name string
---@param input table|nil
---@return string|nil
function M.label_for(tool_name, input)
  if type(input) ~= "table" then
    return nil
  end
  local what = input.command or input.path or (type(input.args) == "table" and table.concat(input.args, " "))
  return what and (tool_name .. ": " .. tostring(what):gsub("\n.*", " ..."):sub(1, 200)) or nil
end

--- The label of a call's checkpoint and timeline entry (taken once): the
--- approval resolver's, or for a call run by hand (no resolver saw it)
--- one made from input.
---@param ctx table Flemma's ExecutionContext
---@param tool_name string
---@param input? table
---@return string
function M.label_of(ctx, tool_name, input)
  local label = M.labels[ctx.tool_id] or M.label_for(tool_name, input) or (tool_name .. ": " .. tostring(ctx.tool_id))
  M.labels[ctx.tool_id] = nil
  return label
end

--- The calls started here and not ended yet, by tool id (calls.lua).
---@type table<string, flemma_sandbox.Call>
M.calls = {}

--- Starts a call (calls.lua: its number in the chat, and in direct mode the
--- checkpoint before a writing call, taken in the background); go() once
--- it is. A failed checkpoint is said once per session; the call runs
--- either way. checkpoint_then's call ends with M.call_ended.
---@param ctx table Flemma's ExecutionContext
---@param tool_name string
---@param go fun()
---@param input? table the call's input (its label when run by hand)
function M.checkpoint_then(ctx, tool_name, go, input)
  local sandboxes = require("flemma_sandbox.flemma.backend").sandboxes_of(ctx.bufnr)
  local off = sandboxes and (sandboxes.checkpoints == false or sandboxes.workspace == "clone")
  calls.start(ctx.bufnr, tool_name, M.label_of(ctx, tool_name, input), not off, function(call, errors)
    M.say_failed(errors)
    if ctx.tool_id then
      M.calls[ctx.tool_id] = call
    end
    go()
  end)
end

--- Ends the call of ctx started by checkpoint_then (the checkpoint after
--- it, its timeline entry); extra: what its runs reported.
---@param ctx table Flemma's ExecutionContext
---@param result table|nil
---@param extra flemma_sandbox.FlemmaRun[]|nil
---@param delivered? fun() called once the checkpoint after it is taken
function M.call_ended(ctx, result, extra, delivered)
  local call = ctx.tool_id and M.calls[ctx.tool_id]
  if ctx.tool_id then
    M.calls[ctx.tool_id] = nil
  end
  calls.ended(call or nil, result, extra, delivered)
end

--- Runs Flemma's own execute for a call our definition took: its result
--- reaches callback after execute() returned (Flemma loses one delivered
--- before), with the `[sandbox]` notes of the commands our backend wrapped
--- for it; returns its cancel function.
---@return fun()|nil
local function run_original(original, name, input, ctx, callback)
  local runs = notes.runs()
  local deliver = function(result)
    runs.finish(result, ctx, function(r, reported)
      -- the result goes to Flemma once the checkpoint after the call is taken
      M.call_ended(ctx, r, reported, function()
        callback(r)
      end)
    end)
  end
  local ok, result = pcall(M.as_call, ctx, name, function()
    if original.async then
      return original.execute(input, ctx, deliver)
    end
    return original.execute(input, ctx)
  end, runs.add)
  if ok and original.async then
    if type(result) ~= "function" then
      return nil
    end
    return function()
      result()
      runs.drop() -- Flemma gives no result for a cancelled call
      vim.defer_fn(function()
        M.call_ended(ctx, { success = false, error = "cancelled" })
      end, notes.DROP_AFTER_MS)
    end
  end
  -- a sync tool's result, or an error raised where Flemma cannot catch it
  -- (after the checkpoint, outside its pcall): the call must still end
  if not ok then
    runs.drop()
    result = { success = false, error = tostring(result) }
  end
  vim.schedule(function()
    result = result or { success = false, error = "Tool returned no result" }
    M.call_ended(ctx, result, nil, function()
      callback(result)
    end)
  end)
  return nil
end

--- A refused call's result: returned (a sync tool), or given to callback
--- after execute() returned.
---@param is_async boolean
---@param callback fun(result: table)|nil
---@param reason string
---@return table|nil
local function refuse(is_async, callback, reason)
  local result = { success = false, error = "flemma-sandbox: " .. reason }
  if not is_async then
    return result
  end
  vim.schedule(function()
    callback(result)
  end)
  return nil
end

--- Why a call of the buffer is refused before anything of it runs (the
--- approval resolver's rule for the whole buffer), said once as a notice.
---@param bufnr integer
---@return string|nil
local function denied(bufnr)
  local reason = M.denial(bufnr)
  if reason then
    require("flemma_sandbox.base.notice").say(reason, vim.log.levels.WARN)
    return "refused: " .. reason
  end
  return nil
end

--- A copy of Flemma's definition for our registry entry.
---@param original table
---@return table
local function copy(original)
  local def = {}
  for k, v in pairs(original) do
    def[k] = v
  end
  return def
end

--- The guard put in place of a tool that is not one of M.NAMES: the
--- buffer's rule first, then the tool's own execute as it is.
---@param original table
---@return table
local function guard(original)
  local def = copy(original)
  local is_async = original.async == true
  def.execute = function(input, ctx, callback)
    local reason = denied(ctx.bufnr)
    if reason then
      return refuse(is_async, callback, reason)
    end
    return original.execute(input, ctx, callback)
  end
  ours[def] = true
  return def
end

--- The definition that takes Flemma's place for one tool.
---@param name string
---@param original table Flemma's definition
---@return table
local function replacement(name, original)
  local def = copy(original)
  -- read stays as Flemma has it (no checkpoint; the copy is read at once)
  local is_async = name ~= "read" or original.async == true
  def.async = is_async
  def.execute = function(input, ctx, callback)
    local reason = denied(ctx.bufnr)
    if reason then
      return refuse(is_async, callback, reason)
    end
    local scope = workspace.scope(ctx.bufnr)
    local refused = scope == false and M.refusal(name, input, ctx.bufnr)
    if refused then
      return refuse(is_async, callback, refused)
    end
    if scope and workspace.FILE_TOOLS[name] then
      local result
      workspace.on_copy(name, input, ctx, scope, function(r)
        if not is_async then
          result = r
        else
          vim.schedule(function()
            callback(r)
          end)
        end
      end)
      return not is_async and (result or { success = false, error = name .. " gave no result on the copy" }) or nil
    end
    if not is_async then
      return original.execute(input, ctx)
    end
    local cancelled, cancel = false, nil
    M.checkpoint_then(ctx, name, function()
      if not cancelled then
        cancel = run_original(original, name, input, ctx, callback)
      else
        M.call_ended(ctx, { success = false, error = "cancelled before it ran" })
      end
    end, input)
    return function()
      cancelled = true
      if type(cancel) == "function" then
        cancel()
      end
    end
  end
  ours[def] = true
  return def
end

local REPLACED = {}
for _, name in ipairs(M.NAMES) do
  REPLACED[name] = true
end

--- The names of the tools in Flemma's registry that run (M.NAMES first).
---@param registry table|nil flemma.tools.registry
---@return string[]
local function executable_names(registry)
  local names = vim.deepcopy(M.NAMES)
  local got, all = pcall(function()
    return registry.get_all({ include_disabled = true })
  end)
  local others = {}
  for name in pairs(got and type(all) == "table" and all or {}) do
    if not REPLACED[name] and registry.is_executable(name) then
      others[#others + 1] = name
    end
  end
  table.sort(others)
  return vim.list_extend(names, others)
end

--- Puts our definitions in Flemma's registry unless they are there (Flemma
--- loads its own tools lazily, and a new setup() registers them again: so
--- asked at each chat buffer, request and call): M.NAMES replaced, every
--- other tool that runs guarded. Flemma's entry is removed first, so
--- Flemma does not warn of a redefinition.
function M.install()
  local ok, tools = pcall(require, "flemma.tools")
  if not ok then
    return
  end
  local registry_ok, registry = pcall(require, "flemma.tools.registry")
  for _, name in ipairs(executable_names(registry_ok and registry or nil)) do
    local current = tools.get(name)
    if current and not ours[current] then
      local def = REPLACED[name] and replacement(name, current) or guard(current)
      if registry_ok then
        registry.unregister(name)
      end
      tools.register(name, def)
    end
  end
end

--- The tools in Flemma's registry that run and are neither ours nor
--- guarded (a call of theirs run by hand would not ask the buffer's rule).
---@return string[]
function M.unguarded()
  local ok, tools = pcall(require, "flemma.tools")
  local registry_ok, registry = pcall(require, "flemma.tools.registry")
  if not ok or not registry_ok then
    return {}
  end
  local out = {}
  for _, name in ipairs(executable_names(registry)) do
    local def = tools.get(name)
    if def and not ours[def] then
      out[#out + 1] = name
    end
  end
  return out
end

--- Whether Flemma's tool `name` is ours now (or there is none of that name).
---@param name string
---@return boolean
function M.is_replaced(name)
  local ok, tools = pcall(require, "flemma.tools")
  local def = ok and tools.get(name) or nil
  return def == nil or ours[def] == true
end

return M
