--- The command line's library side (bin/flemma-sandbox is its thin main):
--- the arguments, the help, and each command. It runs in a headless
--- Neovim started without the user's init; the config is the one the
--- user's Neovim saved (config/saved.lua). For `run` it writes the plan
--- the main runs on descriptor 3: "exec" COUNT WORDS... (the wrapped
--- command) and "after" COUNT WORDS... (this library again afterwards).
-- before anything else is loaded: the working directory is the user's
-- project, and package.cpath's "./?.so" would find a core.so planted there
require("flemma_sandbox.base.installed").guard()
local fail = require("flemma_sandbox.cli.failure").fail

local M = {}

M.USAGE = [==[
usage: flemma-sandbox COMMAND [ARGS]

  run [--direct] [--raw-terminal] NAME [-- CMD [ARGS...]]
                  run CMD (or your $SHELL, interactive) in this project's
                  sandbox NAME: made if missing, joined if running. In a
                  git repository it works on the sandbox's own copy of
                  the repository (see diff, apply) unless --direct. It
                  gets a terminal of its own, never yours; what it shows
                  there loses clipboard writes (OSC 52) and terminal
                  queries unless --raw-terminal.
  list [--all]    this project's sandboxes (every project's with --all),
                  the command line's and the chats'
  status [NAME]   the policy a run of NAME gets, and where it comes from
  diff NAME       what NAME's copy changed that is not applied
  apply NAME      bring those changes into your working tree
  discard [--force] NAME
                  throw NAME's copy away; its commits and uncommitted
                  work are kept 14 days under refs/flemma-sandbox/
                  discarded/ in your repository (it says how to get them
                  back). It asks first when the copy has work not
                  applied (--force, -f: do not ask)
  reset NAME      empty NAME's /tmp and home folders (its copy stays)
  delete [--force] NAME
                  stop NAME and remove its folders (--force: also when
                  its copy has work not applied, kept as discard keeps it)
  gc [--force]    remove the sandboxes whose project folder or chat is
                  gone, and work kept by discard over 14 days ago
  log NAME [N]    NAME's timeline: each call, its exit code, the files it
                  changed, the hosts it reached, what was refused or
                  moved; with N, call N's diff
  help            this text

The project is the git repository (or else the folder) you are in. The
policy is your Neovim's: its setup() and Flemma's config for
flemma-sandbox, as Neovim saved them last (start Neovim once after you
change them). :help flemma-sandbox-cli has the whole story.
]==]

--- The arguments the main passed (FLEMMA_SANDBOX_CLI_ARGC and _ARG1..).
---@return string[]
function M.args()
  local out = {}
  local count = tonumber(os.getenv("FLEMMA_SANDBOX_CLI_ARGC") or "0") or 0
  for i = 1, count do
    out[i] = os.getenv("FLEMMA_SANDBOX_CLI_ARG" .. i) or ""
  end
  return out
end

local COMMANDS = {
  run = function(args)
    return require("flemma_sandbox.cli.run").run(args)
  end,
  ["after-run"] = function(args)
    return require("flemma_sandbox.cli.run").after(args)
  end,
  log = function(args)
    return require("flemma_sandbox.cli.log").log(args)
  end,
}
for _, name in ipairs({ "list", "status", "diff", "apply", "discard", "reset", "delete", "gc" }) do
  COMMANDS[name] = function(args)
    return require("flemma_sandbox.cli.manage")[name](args)
  end
end

--- Runs the command the arguments name; its exit code.
---@param args string[]
---@return integer
function M.dispatch(args)
  local name = args[1]
  if name == nil or name == "help" or name == "--help" or name == "-h" then
    io.stdout:write(M.USAGE)
    return name == nil and 2 or 0
  end
  local command = COMMANDS[name]
  if not command then
    fail("unknown command '" .. name .. "' (flemma-sandbox help lists them)")
  end
  return command({ unpack(args, 2) }) or 0
end

--- The entry: runs the arguments' command and ends Neovim with its code.
function M.main()
  local ok, result = xpcall(M.dispatch, function(err)
    if type(err) == "table" and err.cli_message then
      return err
    end
    return { cli_message = "flemma-sandbox: internal error: " .. debug.traceback(tostring(err), 2), code = 70 }
  end, M.args())
  local code = ok and result or result.code
  if not ok then
    local message = result.cli_message
    io.stderr:write((message:match("^flemma%-sandbox") and "" or "flemma-sandbox: ") .. message .. "\n")
  end
  io.stdout:flush()
  vim.cmd(code == 0 and "qall!" or ("cquit " .. code))
end

return M
