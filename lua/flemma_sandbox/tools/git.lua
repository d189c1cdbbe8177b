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

--- The clone's url and destination (the playground by default).
local function clone_target(args, ctx)
  local words = {}
  for i = 2, #args do
    if args[i]:sub(1, 1) ~= "-" then
      words[#words + 1] = { i = i, word = args[i] }
    end
  end
  if not words[1] then
    return nil, "git clone needs a repository"
  end
  local playground, err = host.playground()
  if not playground then
    return nil, err
  end
  local dest = words[2] and core.resolve(words[2].word, ctx.cwd) or (playground .. "/" .. M.repo_name(words[1].word))
  return { url_index = words[1].i, dest_index = words[2] and words[2].i, dest = dest, playground = playground }
end

function M.prepare(input, ctx)
  local sub = input.args[1]
  if not sub or not (LOCAL[sub] or NETWORK[sub]) then
    return nil,
      "unsupported git subcommand: "
        .. tostring(sub)
        .. " (local: status, log, diff, show, add, commit, "
        .. "branch; network: clone, fetch, pull)"
  end
  local request = {
    lines = { "$ git " .. table.concat(input.args, " "), "in " .. ctx.cwd },
    wants_network = NETWORK[sub] == true,
  }
  if sub == "clone" then
    local target, err = clone_target(input.args, ctx)
    if not target then
      return nil, err
    end
    request.lines[#request.lines + 1] = "into " .. target.dest
    -- outside the playground, a clone needs the user's explicit yes
    request.must_ask = not core.is_within(target.dest, target.playground)
    ctx.clone = target
  end
  return request
end

function M.run(input, ctx, done)
  local argv = { "git" }
  for _, a in ipairs(input.args) do
    argv[#argv + 1] = a
  end
  if ctx.clone and not ctx.clone.dest_index then
    argv[#argv + 1] = ctx.clone.dest
  end
  bash.run_argv(argv, ctx, { env = { GIT_TERMINAL_PROMPT = "0" } }, function(result, notes)
    if ctx.clone and result.exit_code == 0 then
      notes[#notes + 1] = "cloned into " .. ctx.clone.dest
    end
  end, done)
end

return M
