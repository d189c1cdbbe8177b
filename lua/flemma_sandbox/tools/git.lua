--- The git tool. Reads (status, log, diff, show) run in the buffer's
--- sandbox, where every git folder is read-only. Repository writes (add,
--- commit, branch, checkout, ...) run on the host, with the user's own
--- config but no hooks and no fsmonitor (they would run on the host what
--- the model wrote), and always ask first. clone, fetch and pull are
--- network operations; a clone goes to the playground (in the sandbox)
--- unless the user agrees to another place (then on the host). Options
--- are an allowlist per subcommand (tools/git_args.lua).
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local bash = require("flemma_sandbox.tools.bash")
local git_args = require("flemma_sandbox.tools.git_args")
local command_notes = require("flemma_sandbox.tools.command_notes")

local M = {
  name = "git",
  input_schema = {
    type = "object",
    properties = {
      label = command_notes.LABEL,
      args = { type = "array", items = { type = "string" }, description = 'git\'s arguments, e.g. ["status"]' },
    },
    required = { "args" },
  },
}

local READ = { status = true, log = true, diff = true, show = true }
--- Repository writes: on the host, after the user agrees.
M.WRITE = {
  add = true,
  commit = true,
  branch = true,
  tag = true,
  checkout = true,
  switch = true,
  restore = true,
  stash = true,
  merge = true,
  rebase = true,
}
local NETWORK = { clone = true, fetch = true, pull = true }

--- In front of every git the tool runs: no hook and no fsmonitor command
--- of a tree the sandbox wrote runs on the host.
M.SAFE_CONFIG = { "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false" }

--- The transports git may use; "file" is added for a local repository in
--- the project or the playground (git_args.check_url).
M.REMOTE_PROTOCOLS = "https:http:ssh:git"

function M.describe(info)
  return "Run git. Read: status, log, diff, show (in the sandbox). "
    .. "Repository writes: add, commit, branch, tag, checkout, switch, restore, stash, merge, rebase "
    .. "(outside the sandbox with the user's git config, hooks off; the user is always asked). "
    .. "Network (the user is asked): clone, fetch, pull. clone goes to "
    .. info.playground
    .. "/<repo-name> unless you give a destination (outside the playground the user must agree)."
end

--- "https://host/a/b.git/" -> "b"
function M.repo_name(url)
  local name = url:gsub("/+$", ""):match("([^/:]+)$") or "repo"
  return (name:gsub("%.git$", ""))
end

local SUBCOMMANDS = "read: status, log, diff, show; write: add, commit, branch, tag, checkout, switch, "
  .. "restore, stash, merge, rebase; network: clone, fetch, pull"

---@class flemma_sandbox.GitPlan
---@field argv string[] what runs, destination of a clone included
---@field sub string the subcommand
---@field wants_network boolean
---@field clone { dest: string, playground: string, in_playground: boolean }|nil
---@field on_host boolean runs outside the sandbox (a repository write, a clone outside the playground)
---@field env table<string, string> git's environment: M.ENV and the transports it may use

--- What a git call does, shared by the standalone tool and the Flemma one:
--- the argv (a clone without a destination goes to the playground), whether
--- it needs the network, and where a clone lands.
---@param args any the tool input's args
---@param cwd string
---@return flemma_sandbox.GitPlan|nil plan, string|nil err
function M.plan(args, cwd)
  if type(args) ~= "table" or #args == 0 then
    return nil, 'git: "args" must be a non-empty list of strings, e.g. ["status"]'
  end
  for i, a in ipairs(args) do
    if type(a) ~= "string" then
      return nil, string.format('git: "args"[%d] must be a string', i)
    end
  end
  local sub = args[1]
  if not (READ[sub] or M.WRITE[sub] or NETWORK[sub]) then
    return nil, "unsupported git subcommand: " .. sub .. " (" .. SUBCOMMANDS .. ")"
  end
  local words, perr = git_args.parse(sub, args)
  if not words then
    return nil, perr
  end
  local argv = { "git" }
  for _, word in ipairs(M.SAFE_CONFIG) do
    argv[#argv + 1] = word
  end
  for _, word in ipairs(args) do
    argv[#argv + 1] = word
  end
  local env = { GIT_ALLOW_PROTOCOL = M.REMOTE_PROTOCOLS }
  for k, v in pairs(M.ENV) do
    env[k] = v
  end
  local plan = { argv = argv, sub = sub, wants_network = NETWORK[sub] == true, env = env }
  -- fetch and pull write the repository too
  plan.on_host = M.WRITE[sub] == true or sub == "fetch" or sub == "pull"
  if not NETWORK[sub] then
    return plan
  end
  for _, word in ipairs(words) do
    if word:sub(1, 1) == "-" then
      return nil,
        string.format("git %s: %s after -- is not allowed (an address or name never starts with -)", sub, word)
    end
  end
  local playground, err = surroundings.playground()
  if not playground then
    return nil, err
  end
  -- the repository: clone's first word; fetch's and pull's unless it is a
  -- remote's name (its address is in the repository's own config)
  local address = words[1]
  if address and (sub == "clone" or address:find("[/:]")) then
    local roots = { core.resolve(cwd, "/") or cwd, playground }
    local uerr, is_local = git_args.check_url(address, function(path)
      return core.resolve(path, cwd)
    end, roots)
    if uerr then
      return nil, uerr
    end
    if is_local then
      env.GIT_ALLOW_PROTOCOL = M.REMOTE_PROTOCOLS .. ":file"
    end
  end
  if sub ~= "clone" then
    return plan
  end
  local dest = words[2] and core.resolve(words[2], cwd) or (playground .. "/" .. M.repo_name(words[1]))
  if not words[2] then
    plan.argv[#plan.argv + 1] = dest
  end
  plan.clone = { dest = dest, playground = playground, in_playground = core.is_within(dest, playground) }
  -- elsewhere the new .git would go to the quarantine after a sandboxed run
  plan.on_host = not plan.clone.in_playground
  return plan
end

--- What the question about a git call shows: the command, where, whether
--- it needs the network, and that it runs on the host when it does.
---@param args string[]
---@param plan flemma_sandbox.GitPlan
---@param cwd string
---@return string[]
function M.question_lines(args, plan, cwd)
  local lines = {
    "$ " .. git_args.shown(args),
    "folder: " .. cwd,
    "network: " .. (plan.wants_network and "yes" or "no"),
  }
  if plan.clone then
    lines[#lines + 1] = "into " .. plan.clone.dest
  end
  if plan.on_host then
    lines[#lines + 1] = "runs OUTSIDE the sandbox, with your git config (hooks and fsmonitor off)"
  end
  return lines
end

function M.prepare(input, ctx)
  local plan, err = M.plan(input.args, ctx.cwd)
  if not plan then
    return nil, err
  end
  if ctx.copies and #ctx.copies > 0 then
    -- clone mode: the chat's copy is the sandbox's own repository, written
    -- in the sandbox; nothing of git runs on the host or in the user's tree
    if plan.clone and not plan.clone.in_playground then
      return nil, 'git clone outside the playground is not available with sandboxes.workspace = "clone"'
    end
    plan.on_host = false
  end
  ctx.git = plan
  -- on the host: the user's explicit yes, whatever approval.git says
  return {
    lines = M.question_lines(input.args, plan, ctx.cwd),
    wants_network = plan.wants_network,
    must_ask = plan.on_host or nil,
  }
end

--- The environment git gets: never a prompt nobody sees, never an editor
--- that would wait for ever.
M.ENV = { GIT_TERMINAL_PROMPT = "0", GIT_EDITOR = "true" }

--- Runs argv as it is, on the host (job.run's wrap).
---@param argv string[]
---@return string[]
function M.unwrapped(argv)
  return argv
end

function M.run(_, ctx, done)
  local plan = ctx.git
  local extra = { env = plan.env, wrap = plan.on_host and M.unwrapped or nil }
  bash.run_argv(plan.argv, ctx, extra, function(result, notes)
    if plan.clone and result.exit_code == 0 then
      notes[#notes + 1] = "cloned into " .. plan.clone.dest
    end
  end, done)
end

return M
