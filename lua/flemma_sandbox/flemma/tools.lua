--- flemma-sandbox's tools as a Flemma tool module, registered by the user
--- with Flemma's `tools.modules = { "flemma_sandbox.flemma.tools" }` or
--- `require("flemma.tools").register("flemma_sandbox.flemma.tools")`.
---
--- git: reads run through Flemma's sandbox for the buffer (whichever
--- backend Flemma picks; Flemma's approvals decide whether it runs), where
--- every git folder is read-only. Repository writes, fetch, pull and a
--- clone outside the playground run on the host with the user's git config
--- and hooks off, and always ask: through Flemma's approval (see
--- flemma_sandbox.flemma.approval), or in the question window when the
--- call runs past Flemma's resolvers (:Flemma tool:execute). clone,
--- fetch and pull need the network, so they are refused with the reason
--- when Flemma's policy has it off; a clone without a destination lands in
--- the playground, which that call may write.
local approval = require("flemma_sandbox.flemma.approval")
local git = require("flemma_sandbox.tools.git")
local git_args = require("flemma_sandbox.tools.git_args")
local surroundings = require("flemma_sandbox.base.surroundings")
local sandbox = require("flemma_sandbox")
local questions = require("flemma_sandbox.questions")

local M = {}

local start

--- Whether Flemma's sandbox leaves the network on for the buffer (an
--- unsandboxed command has the host's).
---@param bufnr integer
---@return boolean
local function network_allowed(bufnr)
  -- without Flemma's sandbox module its policy cannot be read: no network
  local loaded, fs = pcall(require, "flemma.sandbox")
  if not loaded or type(fs) ~= "table" then
    return false
  end
  local ok, cfg = pcall(fs.resolve_config, bufnr)
  if not ok or type(cfg) ~= "table" or not cfg.enabled then
    return true
  end
  local got, policy = pcall(fs.get_policy, bufnr)
  return got and type(policy) == "table" and policy.network ~= false
end

--- The text the model gets back, as Flemma's bash tool shapes it.
---@param r flemma_sandbox.JobResult
---@param plan flemma_sandbox.GitPlan
---@param timeout integer seconds
---@param ctx table Flemma's ExecutionContext
---@return table result Flemma's ExecutionResult
local function to_result(r, plan, timeout, ctx)
  if r.error then
    return { success = false, error = r.error }
  end
  local parts = {}
  for _, stream in ipairs({ r.stdout, r.stderr }) do
    if stream:find("%S") then
      parts[#parts + 1] = (stream:gsub("%s+$", ""))
    end
  end
  local text = table.concat(parts, "\n")
  text = ctx.truncate.truncate_with_overflow(text, { direction = "tail" }).content
  if text == "" then
    text = "(no output)"
  end
  if r.timed_out then
    return { success = false, error = text .. string.format("\n\nCommand timed out after %d seconds.", timeout) }
  end
  if r.exit_code ~= 0 then
    return { success = false, error = text .. string.format("\n\nCommand exited with code %d", r.exit_code) }
  end
  if plan.clone then
    text = text .. "\n\ncloned into " .. plan.clone.dest
  end
  return { success = true, output = text }
end

local function describe()
  local playground = surroundings.playground_path() or "the playground"
  return "Run git in the project. Reads run inside the sandbox: status, log, diff, show. "
    .. "Repository writes run outside it with the user's git config (no hooks), and the user is always asked: "
    .. "add, commit, branch, tag, checkout, switch, restore, stash, merge, rebase. "
    .. "Network subcommands (only when the sandbox allows network): clone, fetch, pull. "
    .. "clone goes to "
    .. playground
    .. "/<repo-name> unless you give a destination; elsewhere the user is always asked."
end

M.definitions = {
  {
    name = "git",
    description = describe(),
    input_schema = {
      type = "object",
      properties = {
        label = { type = "string", description = "A short human-readable label for this operation" },
        args = {
          type = "array",
          items = { type = "string" },
          description = 'git\'s arguments without "git", e.g. ["status"] or ["clone", "https://host/repo.git"]',
        },
      },
      required = { "label", "args" },
      additionalProperties = false,
    },
    async = true,
    format_preview = function(input)
      local args = type(input.args) == "table" and input.args or {}
      return { label = input.label, detail = "$ " .. git_args.shown(args) }
    end,
    execute = function(input, ctx, callback)
      -- after execute() returns: Flemma loses a result delivered before
      local function fail(message)
        vim.schedule(function()
          callback({ success = false, error = message })
        end)
      end
      -- the resolver's rule for the whole buffer, also for a call run by
      -- hand (the guard in Flemma's registry asks it too, once in place)
      local refused = approval.buffer_refusal(ctx.bufnr)
      if refused then
        return fail("flemma-sandbox: refused: " .. refused)
      end
      local plan, err = git.plan(input.args, ctx.cwd)
      if not plan then
        return fail(err)
      end
      if plan.wants_network and not network_allowed(ctx.bufnr) then
        return fail(
          "git " .. plan.sub .. " needs the network, and Flemma's sandbox.policy.network is off for this buffer"
        )
      end
      if not plan.on_host or approval.take_flemma_approval(ctx.bufnr, ctx.tool_id) then
        return M.run(plan, ctx, callback)
      end
      -- run past Flemma's resolvers (:Flemma tool:execute, Alt-Enter): a
      -- write on the host is still asked, in the question window
      local cancelled, cancel_run = false, nil
      questions.ask({
        title = "Allow this git call on the host?",
        lines = git.question_lines(input.args, plan, ctx.cwd),
        id = ctx.tool_id,
        bufnr = ctx.bufnr,
        tool = "git",
      }, function(answer)
        if cancelled then
          return
        end
        if answer == "once" or answer == "always" then
          cancel_run = M.run(plan, ctx, callback)
        else
          callback({ success = false, error = "not run: the user declined git " .. plan.sub .. " on the host" })
        end
      end)
      return function()
        cancelled = true
        if cancel_run then
          cancel_run()
        end
      end
    end,
  },
}

--- Runs a planned git call (sandboxed, or on the host) once direct mode's
--- checkpoint is taken (in the background), and hands Flemma its result.
---@param plan flemma_sandbox.GitPlan
---@param ctx table Flemma's ExecutionContext
---@param callback fun(result: table)
---@return fun() cancel
function M.run(plan, ctx, callback)
  local cancelled, cancel = false, nil
  local overrides = require("flemma_sandbox.flemma.tool_overrides")
  overrides.checkpoint_then(ctx, "git", function()
    if cancelled then
      return overrides.call_ended(ctx, { success = false, error = "cancelled before it ran" })
    end
    cancel = start(plan, ctx, function(result)
      overrides.call_ended(ctx, result, nil, function()
        callback(result)
      end)
    end)
  end, { args = vim.list_slice(plan.argv, 2) }) -- labelled by what it runs, when run by hand
  return function()
    cancelled = true
    if cancel then
      cancel()
    end
  end
end

--- Starts a planned git call.
---@param plan flemma_sandbox.GitPlan
---@param ctx table Flemma's ExecutionContext
---@param callback fun(result: table)
---@return fun()|nil cancel
start = function(plan, ctx, callback)
  local bridge = require("flemma_sandbox.flemma")
  local timeout = ctx.timeout or 30
  local handle, start_err = sandbox.run(plan.argv, {
    cwd = ctx.cwd,
    timeout_ms = timeout * 1000,
    env = plan.env,
    wrap = plan.on_host and git.unwrapped or function(argv)
      return bridge.wrap_for_call(ctx, "git", argv, {
        rw_paths = plan.clone and plan.clone.in_playground and { plan.clone.playground } or nil,
        env = plan.env,
      })
    end,
    on_exit = function(r)
      callback(to_result(r, plan, timeout, ctx))
    end,
  })
  if not handle then
    vim.schedule(function()
      callback({ success = false, error = "Sandbox error: " .. tostring(start_err) })
    end)
    return nil
  end
  return handle.cancel
end

return M
