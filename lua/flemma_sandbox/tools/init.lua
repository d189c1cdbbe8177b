--- The tools a model calls, with Flemma's names and input schemas (bash,
--- read, write, edit, find, grep, ls) plus git. Each has a name, a JSON
--- schema for its input, a description made from the buffer's effective
--- policy, and an executor. run() checks the input, asks for approval as
--- configured, then executes.
local approval = require("flemma_sandbox.questions")
local around = require("flemma_sandbox.tools.around")
local files = require("flemma_sandbox.tools.files")
local surroundings = require("flemma_sandbox.base.surroundings")
local sandbox = require("flemma_sandbox")
local search = require("flemma_sandbox.tools.search")

local M = {}

M.registry = {
  bash = require("flemma_sandbox.tools.bash"),
  read = files.read,
  write = files.write,
  edit = files.edit,
  find = search.find,
  grep = search.grep,
  ls = search.ls,
  git = require("flemma_sandbox.tools.git"),
}

--- Names this plugin used before it took Flemma's.
M.RENAMED = { read_file = "read", write_file = "write" }

---@return string[]
function M.names()
  local names = vim.tbl_keys(M.registry)
  table.sort(names)
  return names
end

local JSON_TYPES = {
  string = "string",
  boolean = "boolean",
  integer = "number",
  number = "number",
  array = "table",
  object = "table",
}

--- Checks input against a tool's schema (required keys, types, unknown keys).
---@return string|nil err
function M.check_input(schema, input)
  if type(input) ~= "table" then
    return "input must be a JSON object"
  end
  for _, key in ipairs(schema.required or {}) do
    if input[key] == nil then
      return "missing required input: " .. key
    end
  end
  for key, value in pairs(input) do
    local prop = schema.properties[key]
    if not prop then
      return "unknown input: " .. tostring(key)
    end
    if value == vim.NIL then
      -- JSON null: Flemma's strict schemas send it for an unset nullable input
      if not prop.nullable then
        return string.format("input %s must be a %s, not null", key, prop.type)
      end
      input[key] = nil
      value = nil
    end
    local wrong = value ~= nil and (type(value) ~= JSON_TYPES[prop.type] or (prop.type == "integer" and value % 1 ~= 0))
    if wrong then
      return string.format("input %s must be a %s", key, prop.type)
    elseif value ~= nil and prop.type == "array" then
      for i, item in ipairs(value) do
        if type(item) ~= JSON_TYPES[prop.items.type] then
          return string.format("input %s[%d] must be a %s", key, i, prop.items.type)
        end
      end
    end
  end
end

--- What the descriptions say about a buffer's effective policy.
---@param bufnr integer|nil
function M.info(bufnr)
  local cfg = sandbox.resolve_config(bufnr)
  local policy = sandbox.get_policy(bufnr)
  local enabled = cfg.enabled and sandbox.backend_status(bufnr).available
  local network_text
  if not enabled then
    network_text = "The sandbox is off here: commands run with the user's full rights and network."
  elseif policy.network_mode == "host" then
    network_text = "The network is available."
  elseif policy.network_mode == "allowlist" or policy.network_mode == "ask" then
    local hosts = #policy.allow_domains > 0 and table.concat(policy.allow_domains, ", ") or "none"
    local other = policy.network_mode == "ask"
        and ". For any other host name the user is asked while the command waits; a refused one gets HTTP 403"
      or ". Anything else is refused (HTTP 403)"
    network_text = "The network goes through a proxy (HTTP_PROXY and HTTPS_PROXY are set) to these hosts: "
      .. hosts
      .. other
      .. "; there is no DNS inside, so tools that ignore the proxy fail."
  else
    network_text = "The network is off (curl, git clone, pip install fail) and cannot be requested."
  end
  return {
    cwd = surroundings.cwd(),
    writable = enabled and table.concat(policy.rw_paths, ", ") or "everything (sandbox off)",
    network_text = network_text,
    playground = surroundings.playground() or "(none)",
    private = enabled and table.concat(policy.private_paths or {}, ", ") or "",
    kept = enabled and table.concat(policy.persist_paths or {}, ", ") or "",
    shell = cfg.tools.shell,
    output_limit = cfg.tools.output_limit,
    timeout_ms = cfg.tools.timeout_ms,
    read_max_bytes = cfg.tools.read_max_bytes,
  }
end

--- A tool's definition for a model: name, description, input schema.
---@param name string
---@param bufnr integer|nil
function M.definition(name, bufnr)
  local tool = M.registry[name]
  return { name = name, description = tool.describe(M.info(bufnr)), input_schema = tool.input_schema }
end

--- Notes whether the call has a way out; a call that needs one (git clone)
--- where policy.network = false is told so. In "ask" mode the questions
--- come per host, from the run's proxy (questions/network.lua).
local function decide_network(request, ctx, cb)
  ctx.network = ctx.config.policy.network ~= false
  ctx.network_denied = request.wants_network and ctx.config.enabled and not ctx.network
  cb()
end

---@class flemma_sandbox.ToolRunOpts
---@field bufnr integer|nil the buffer whose policy and approvals apply
---@field cwd string|nil default: Neovim's working directory
---@field call_id string|nil the tool use's id, shown in its question
---@field owner string|nil key under which its questions can be cancelled
---@field approved boolean|nil the user already said yes (Flemma's "approved" placeholder)
---@field on_phase fun(phase: "waiting"|"running")|nil told when it waits for an answer and when it runs
---@field on_job fun(handle: flemma_sandbox.JobHandle|nil)|nil told of the running job (for cancel)
---@field set_by_frontmatter flemma_sandbox.SetByFrontmatter|nil what the chat's frontmatter sets (a restart's note)

--- Runs a tool call; done receives the result table ({ error = ... } on
--- failure; not_run = true when it never started).
---@param name string
---@param input table
---@param opts flemma_sandbox.ToolRunOpts
---@param done fun(result: table)
function M.run(name, input, opts, done)
  local refused = sandbox.tools_refusal(opts.bufnr)
  if refused then
    return done({ error = refused, not_run = true })
  end
  local tool = M.registry[name]
  if not tool then
    local renamed = M.RENAMED[name] and (" (its name is now " .. M.RENAMED[name] .. ", as in Flemma)") or ""
    return done({ error = "unknown tool: " .. tostring(name) .. renamed, not_run = true })
  end
  local bad = M.check_input(tool.input_schema, input)
  if bad then
    return done({ error = bad, not_run = true })
  end
  local ctx = {
    bufnr = opts.bufnr,
    config_opts = opts.bufnr,
    cwd = opts.cwd or surroundings.cwd(),
    config = sandbox.resolve_config(opts.bufnr),
    env_path = surroundings.getenv("PATH"),
    on_job = opts.on_job or function() end,
    set_by_frontmatter = opts.set_by_frontmatter,
  }
  local workspaces = require("flemma_sandbox.api.clone_mode")
  if workspaces.is_clone(opts.bufnr) then
    -- the chat's copies: the file tools act on them (tools/copy_paths.lua)
    ctx.copies = workspaces.specs(opts.bufnr)
  end
  local request, err = tool.prepare(input, ctx)
  if not request then
    return done({ error = err, not_run = true })
  end
  local on_phase = opts.on_phase or function() end
  local function go(allowed, why)
    if not allowed then
      return done({ error = "not run: " .. tostring(why), not_run = true })
    end
    on_phase("running")
    decide_network(request, ctx, function()
      around.before(name, request, opts.bufnr, function(call)
        local function finish(result)
          around.after(name, opts.bufnr, call, result, function()
            done(result)
          end)
        end
        local ok, run_err = pcall(tool.run, input, ctx, finish)
        if not ok then
          finish({ error = "internal error: " .. tostring(run_err) })
        end
      end)
    end)
  end
  local level = approval.level(name, opts.bufnr)
  local question = {
    title = "Allow this " .. name .. " call?",
    lines = request.lines,
    id = opts.call_id,
    bufnr = opts.bufnr,
    owner = opts.owner,
    tool = name,
  }
  if level == "deny" then
    go(false, "the approval setting for " .. name .. " is deny")
  elseif request.must_ask then
    -- repository writes on the host: asked even when approved in the buffer
    on_phase("waiting")
    approval.ask(question, function(answer)
      local why = answer == "cancelled" and "cancelled by the user" or "the user declined"
      go(answer == "once" or answer == "always", why)
    end)
  elseif opts.approved then
    go(true)
  else
    question.remember_key = request.remember_key
    approval.decide(question, level, on_phase, go)
  end
end

return M
