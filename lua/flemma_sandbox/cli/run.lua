--- `flemma-sandbox run [--direct] [--raw-terminal] NAME [-- CMD...]`: the plan of one run
--- in the sandbox NAME, and the step after it (clone mode's sync).
local chat_dirs = require("flemma_sandbox.policy.chat_dirs")
local cli = require("flemma_sandbox.cli.failure")
local core = require("flemma_sandbox.core")
local prompt = require("flemma_sandbox.cli.prompt")
local sandbox = require("flemma_sandbox.cli.sandbox")

local M = {}

--- The options, NAME and the command after "--" (nil: none given).
---@param args string[]
---@return string name, { direct: boolean, raw_terminal: boolean } opts, string[]|nil cmd
local function parse(args)
  local opts, name, cmd = { direct = false, raw_terminal = false }, nil, nil
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--" then
      cmd = { unpack(args, i + 1) }
      if #cmd == 0 then
        cli.fail("run: nothing after '--' (leave it out for your shell)")
      end
      break
    elseif a == "--direct" then
      opts.direct = true
    elseif a == "--raw-terminal" then
      opts.raw_terminal = true
    elseif a:sub(1, 1) == "-" then
      cli.fail("run: unknown option '" .. a .. "' (flemma-sandbox help)")
    elseif name == nil then
      name = a
    else
      cli.fail("run: put the command after '--': flemma-sandbox run " .. name .. " -- " .. a)
    end
    i = i + 1
  end
  return sandbox.check_name(name), opts, cmd
end

--- Writes the plan's records to descriptor 3 (the main's pipe).
---@param records { [1]: string, [2]: string[] }[]
local function write_plan(records)
  local out = io.open("/dev/fd/3", "wb")
  if not out then
    cli.fail("no plan descriptor: run this through bin/flemma-sandbox")
  end
  for _, r in ipairs(records) do
    out:write(r[1], "\0", tostring(#r[2]), "\0")
    for _, word in ipairs(r[2]) do
      out:write(word, "\0")
    end
  end
  out:close()
end

--- The environment a run adds to the policy's: the terminal's kind, the
--- shell, and the sandbox's name (for a prompt).
---@param name string
---@param shell string
---@return table<string, string>
local function run_env(name, shell)
  local env = { SHELL = shell, FLEMMA_SANDBOX = name }
  for _, var in ipairs({ "TERM", "COLORTERM" }) do
    local value = os.getenv(var)
    if value and value ~= "" then
      env[var] = value
    end
  end
  return env
end

--- The "copy" record: the main skips the sync after a run that changed
--- nothing in the copy (csrc/cli/cli_print.c); one copy only (none: the
--- sync runs after every run).
---@param specs flemma_sandbox.WorkspaceSpec[]|nil
---@param name string
---@param record? flemma_sandbox.WrapRecord the wrap's record (its live folder)
---@return { [1]: string, [2]: string[] }|nil
local function copy_record(specs, name, record)
  if not specs or #specs ~= 1 then
    return nil
  end
  local parent, base = specs[1].clone:match("^(.*)/([^/]+)$")
  if not parent then
    return nil
  end
  -- the live folder of the chat's sandbox: the main skips only when it
  -- says "quiet" after the run (nothing left running); "" for a run of
  -- its own
  local live_dir = type(record) == "table" and record.live_dir or ""
  return { "copy", { parent, base, specs[1].top .. "/.git", name, live_dir } }
end

---@param args string[]
---@return integer
function M.run(args)
  local name, opts, cmd = parse(args)
  local bufnr, info = sandbox.open(name, opts.direct)
  local fs = require("flemma_sandbox")
  if not fs.is_enabled(bufnr) then
    cli.fail("the sandbox is off in your config (enabled = false): the command line runs nothing unsandboxed")
  end
  local shell = os.getenv("SHELL")
  if not shell or shell == "" then
    shell = "/bin/sh"
  end
  -- no command: the user's shell, interactive, its prompt naming the sandbox
  cmd = cmd or prompt.command(shell, name)
  local workspaces = require("flemma_sandbox.api.clone_mode")
  local clone = workspaces.is_clone(bufnr)
  local specs
  if clone then
    local made, err = workspaces.ensure_now(bufnr)
    if err then
      cli.fail("cannot make the sandbox's copy of " .. info.project .. ": " .. err)
    end
    specs = made
  end
  -- the folder is the command line's (chat_dirs.CLI_CHAT), kept until
  -- its project is gone; made before the policy is, which protects it:
  -- every run finds the same (and joins the running sandbox)
  if core.file_type(info.dir) == nil then
    core.make_dirs(info.dir, 448)
  end
  local marker = io.open(info.dir .. "/" .. chat_dirs.CLI_CHAT, "ab")
  if marker then
    marker:close()
  end
  -- the sandbox outlives this run (until its idle time), so a second run
  -- joins it; Neovim's chats stop theirs with Neovim
  require("flemma_sandbox.backends.live").owner_pid = 0
  local argv, err, wrapped =
    fs.wrap_command(cmd, bufnr, { bufnr = bufnr, env = run_env(name, shell), time_limit = false })
  if not argv then
    cli.fail(err)
  end
  if argv == cmd then
    cli.fail("no sandbox backend here (:checkhealth flemma_sandbox): the command line runs nothing unsandboxed")
  end
  local records = { { "exec", argv } }
  if clone then
    records[#records + 1] = { "after", { "after-run", name } }
    local copy = copy_record(specs, name, wrapped)
    if copy then
      records[#records + 1] = copy
    end
  end
  if opts.raw_terminal then
    -- the main passes the command's terminal output as it comes
    records[#records + 1] = { "terminal", { "raw" } }
  end
  write_plan(records)
  return 0
end

--- After a run in clone mode: the copy synced into the user's repository
--- (refs/remotes/sandbox-NAME/*), and a word when it has changes.
---@param args string[]
---@return integer
function M.after(args)
  local name = sandbox.check_name(args[1])
  local bufnr = sandbox.open(name, false)
  local workspaces = require("flemma_sandbox.api.clone_mode")
  -- changes syncs first (once)
  local changes, errors = sandbox.wait(function(done)
    workspaces.changes(bufnr, done)
  end)
  if errors and #errors > 0 then
    io.stderr:write("flemma-sandbox: the copy's sync failed: " .. table.concat(errors, "; ") .. "\n")
    return 1
  end
  if changes and #changes > 0 then
    io.stderr:write(
      string.format(
        "flemma-sandbox: %s's copy has %d changed file(s) not in your tree: flemma-sandbox diff %s, apply %s\n",
        name,
        #changes,
        name,
        name
      )
    )
  end
  return 0
end

return M
