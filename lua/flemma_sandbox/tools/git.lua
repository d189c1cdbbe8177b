--- The git tool: local operations in the buffer's sandbox; clone, fetch and
--- pull are network operations, and clone goes to the playground unless the
--- user agrees to another place.
local core = require("flemma_sandbox.core")
local host = require("flemma_sandbox.host")
local bash = require("flemma_sandbox.tools.bash")

local M = {
  name = "git",
  input_schema = {
    type = "object",
    properties = {
      args = { type = "array", items = { type = "string" }, description = 'git\'s arguments, e.g. ["status"]' },
    },
    required = { "args" },
  },
}

local LOCAL = { status = true, log = true, diff = true, show = true, add = true, commit = true, branch = true }
local NETWORK = { clone = true, fetch = true, pull = true }

function M.describe(info)
  return "Run git. Local: status, log, diff, show, add, commit, branch. "
    .. "Network (the user is asked): clone, fetch, pull. clone goes to "
    .. info.playground
    .. "/<repo-name> unless you give a destination (outside the playground the user must agree)."
end

--- "https://host/a/b.git/" -> "b"
function M.repo_name(url)
  local name = url:gsub("/+$", ""):match("([^/:]+)$") or "repo"
  return (name:gsub("%.git$", ""))
end

local SUBCOMMANDS = "local: status, log, diff, show, add, commit, branch; network: clone, fetch, pull"

---@class flemma_sandbox.GitPlan
---@field argv string[] what runs, destination of a clone included
---@field sub string the subcommand
---@field wants_network boolean
---@field clone { dest: string, playground: string, in_playground: boolean }|nil

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
  if not (LOCAL[sub] or NETWORK[sub]) then
    return nil, "unsupported git subcommand: " .. sub .. " (" .. SUBCOMMANDS .. ")"
  end
  local plan = { argv = { "git", unpack(args) }, sub = sub, wants_network = NETWORK[sub] == true }
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
  return plan
end

function M.prepare(input, ctx)
  local plan, err = M.plan(input.args, ctx.cwd)
  if not plan then
    return nil, err
  end
  ctx.git = plan
  local request = {
    lines = { "$ git " .. table.concat(input.args, " "), "in " .. ctx.cwd },
    wants_network = plan.wants_network,
  }
  if plan.clone then
    request.lines[#request.lines + 1] = "into " .. plan.clone.dest
    -- outside the playground, a clone needs the user's explicit yes
    request.must_ask = not plan.clone.in_playground
  end
  return request
end

function M.run(_, ctx, done)
  local plan = ctx.git
  bash.run_argv(plan.argv, ctx, { env = { GIT_TERMINAL_PROMPT = "0" } }, function(result, notes)
    if plan.clone and result.exit_code == 0 then
      notes[#notes + 1] = "cloned into " .. plan.clone.dest
    end
  end, done)
end

return M
