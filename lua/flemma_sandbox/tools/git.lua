--- The git tool. Reads (status, log, diff, show) run in the buffer's
--- sandbox, where every git folder is read-only. Repository writes (add,
--- commit, branch, checkout, ...) run on the host, with the user's own
--- config and hooks, and always ask first. clone, fetch and pull are
--- network operations; a clone goes to the playground (in the sandbox)
--- unless the user agrees to another place (then on the host).
local core = require("flemma_sandbox.core")
local host = require("flemma_sandbox.host")
local bash = require("flemma_sandbox.tools.bash")
local shell = require("flemma_sandbox.tools.shell")

local M = {
  name = "git",
  input_schema = {
    type = "object",
    properties = {
      label = shell.LABEL,
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

--- Options that would make git on the host run a command the model chose.
local HOST_REFUSED = {
  rebase = { "-x", "--exec" },
  clone = { "-u", "--upload-pack", "--template", "-c", "--config", "--separate-git-dir" },
}

function M.describe(info)
  return "Run git. Read: status, log, diff, show (in the sandbox). "
    .. "Repository writes: add, commit, branch, tag, checkout, switch, restore, stash, merge, rebase "
    .. "(outside the sandbox with the user's git config and hooks; the user is always asked). "
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
  local plan = { argv = { "git", unpack(args) }, sub = sub, wants_network = NETWORK[sub] == true }
  -- fetch and pull write the repository too
  plan.on_host = M.WRITE[sub] == true or sub == "fetch" or sub == "pull"
  for i = 2, #args do
    for _, option in ipairs(HOST_REFUSED[sub] or {}) do
      if args[i] == option or args[i]:sub(1, #option + 1) == option .. "=" then
        return nil, string.format("git %s %s is not allowed: it would run a command on the host", sub, option)
      end
    end
  end
  if sub ~= "clone" then
    return plan
  end
  local words = {}
  for i = 2, #args do
    if args[i]:sub(1, 1) ~= "-" then
      words[#words + 1] = args[i]
    end
  end
  if not words[1] then
    return nil, "git clone needs a repository"
  end
  local playground, err = host.playground()
  if not playground then
    return nil, err
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

function M.prepare(input, ctx)
  local plan, err = M.plan(input.args, ctx.cwd)
  if not plan then
    return nil, err
  end
  ctx.git = plan
  local request = {
    lines = {
      "$ git " .. table.concat(input.args, " "),
      "folder: " .. ctx.cwd,
      "network: " .. (plan.wants_network and "yes" or "no"),
    },
    wants_network = plan.wants_network,
  }
  if plan.clone then
    request.lines[#request.lines + 1] = "into " .. plan.clone.dest
  end
  if plan.on_host then
    request.lines[#request.lines + 1] = "runs OUTSIDE the sandbox, with your git config and hooks"
    -- the user's explicit yes, whatever approval.git says
    request.must_ask = true
  end
  return request
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
  local extra = { env = M.ENV, wrap = plan.on_host and M.unwrapped or nil }
  bash.run_argv(plan.argv, ctx, extra, function(result, notes)
    if plan.clone and result.exit_code == 0 then
      notes[#notes + 1] = "cloned into " .. plan.clone.dest
    end
  end, done)
end

return M
