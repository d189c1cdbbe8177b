--- :FlemmaSandbox status | enable | disable | trust | untrust |
--- tool:execute | tool:execute-all | tool:cancel | approve | approve-always |
--- deny | approval, and their <Plug> mappings. flemma-sandbox never defines :Flemma:
--- that command is Flemma's. With Flemma installed, enable and disable are
--- Flemma's session switch and the tool subcommands are Flemma's
--- (:Flemma tool:execute).
local util = require("flemma_sandbox.base.util")
-- defined at start-up; what the subcommands need loads when one runs
local sandbox = util.lazy_require("flemma_sandbox")
local status = util.lazy_require("flemma_sandbox.nvim.status")

local M = {}

M.NAME = "FlemmaSandbox"

--- One line per action, joined with a question it opened (notice.lua).
local function notify(message, level)
  require("flemma_sandbox.base.notice").say(message, level)
end

--- What the Flemma bridge offers when Flemma is installed (hooks.lua).
---@return flemma_sandbox.BridgeFacade|nil
local function flemma_bridge()
  return require("flemma_sandbox.base.hooks").bridge
end

--- Whether tool calls of the buffer's chat run now (standalone, or
--- Flemma's through our definitions): undo and redo wait for them, since
--- they stop the chat's sandbox and a call's end is part of its change.
---@param bufnr integer
---@return boolean
local function calls_running(bufnr)
  local bridge = flemma_bridge()
  if bridge then
    return bridge.calls_running ~= nil and bridge.calls_running(bufnr) > 0
  end
  return next(require("flemma_sandbox.chat").running(bufnr)) ~= nil
end

local function standalone_only(run)
  return function(bufnr)
    if flemma_bridge() then
      notify("Flemma runs the tool calls and reads the frontmatter here: use :Flemma", vim.log.levels.INFO)
      return
    end
    run(bufnr)
  end
end

--- Trust for the buffer's frontmatter: Flemma's (its tool calls are
--- refused while it loosens the sandbox untrusted) or ours.
---@param bufnr integer
---@param trusted boolean
---@return boolean ok, string message
local function set_trust(bufnr, trusted)
  local bridge = flemma_bridge()
  if bridge then
    return bridge.set_trust(bufnr, trusted)
  end
  return require("flemma_sandbox.chat.frontmatter").set_trust(bufnr, trusted)
end

--- The chats' own folders (nvim/sandboxes.lua): removed, then said.
---@param dirs string[]
---@param what string
local function remove_and_say(dirs, what, force)
  local unapplied = require("flemma_sandbox.nvim.sandboxes").unapplied(force and {} or dirs)
  if #unapplied > 0 then
    notify(
      "not removed: work in a chat's copy is not applied (add ! to drop it, or apply or discard it in that chat): "
        .. table.concat(unapplied, "; "),
      vim.log.levels.ERROR
    )
    return
  end
  if #dirs == 0 then
    notify("nothing to remove: " .. what, vim.log.levels.INFO)
    return
  end
  require("flemma_sandbox.nvim.sandboxes").remove(dirs, function(errors, kept)
    if #errors > 0 then
      notify("not all removed: " .. table.concat(errors, "; "), vim.log.levels.WARN)
    else
      notify(string.format("removed %d folder(s): %s", #dirs, what), vim.log.levels.INFO)
    end
    if #kept > 0 then
      status.show(require("flemma_sandbox.backends.workspace_keep").how_to(kept))
    end
  end)
end

---@type table<string, fun(bufnr: integer, arg: string|nil, bang: boolean|nil)>
M.actions = {
  enable = function(bufnr)
    local bridge = flemma_bridge()
    if bridge then
      local ok, err = bridge.enable(bufnr)
      if not ok then
        notify("not enabled: " .. tostring(err), vim.log.levels.ERROR)
        return
      end
      notify("Flemma's sandbox enabled for this session", vim.log.levels.INFO)
      return
    end
    local backend = sandbox.backend_status(bufnr)
    if not backend.available then
      notify("not enabled: " .. tostring(backend.error), vim.log.levels.ERROR)
      return
    end
    sandbox.set_enabled(true)
    notify("enabled for this session (backend " .. backend.name .. ")", vim.log.levels.INFO)
  end,
  disable = function()
    local bridge = flemma_bridge()
    if bridge then
      bridge.disable()
    else
      sandbox.set_enabled(false)
    end
    notify("disabled for this session: tool commands run unsandboxed", vim.log.levels.WARN)
  end,
  status = function(bufnr)
    status.show(status.lines(bufnr))
  end,
  list = function()
    status.show(require("flemma_sandbox.nvim.sandboxes").list_lines())
  end,
  reset = function(bufnr)
    local sandboxes = require("flemma_sandbox.nvim.sandboxes")
    local chat = sandboxes.chat_of(bufnr)
    if not chat then
      notify("this buffer's chat has no folders to reset", vim.log.levels.INFO)
      return
    end
    if not flemma_bridge() and next(require("flemma_sandbox.chat").running(bufnr)) then
      notify("tool calls of this chat are running: :FlemmaSandbox tool:cancel first", vim.log.levels.WARN)
      return
    end
    remove_and_say(sandboxes.reset_targets(chat), "this chat's /tmp and home folders (" .. chat.name .. ")")
  end,
  delete = function(_, name, bang)
    local sandboxes = require("flemma_sandbox.nvim.sandboxes")
    local project_dir = sandboxes.current_project_dir()
    for _, e in ipairs(project_dir and sandboxes.entries(project_dir) or {}) do
      if e.name == name then
        return remove_and_say({ e.dir }, "chat " .. name, bang)
      end
    end
    notify("no chat folder named " .. tostring(name) .. " here (see :FlemmaSandbox list)", vim.log.levels.ERROR)
  end,
  undo = function(bufnr, arg, bang)
    local n = arg and arg ~= "" and tonumber(arg) or nil
    if arg and arg ~= "" and (not n or n < 1 or n % 1 ~= 0) then
      local why = "undo: N must be a call's number (see :FlemmaSandbox checkpoints), not '" .. arg .. "'"
      notify(why, vim.log.levels.ERROR)
      return
    end
    require("flemma_sandbox.nvim.undo").undo(bufnr, calls_running(bufnr), { n = n, bang = bang })
  end,
  redo = function(bufnr, _, bang)
    require("flemma_sandbox.nvim.undo").undo(bufnr, calls_running(bufnr), { redo = true, bang = bang })
  end,
  diff = function(bufnr)
    require("flemma_sandbox.nvim.review_ui").diff(bufnr)
  end,
  apply = function(bufnr)
    local running = not flemma_bridge() and next(require("flemma_sandbox.chat").running(bufnr)) ~= nil
    require("flemma_sandbox.nvim.review_ui").apply(bufnr, running)
  end,
  discard = function(bufnr, _, bang)
    local running = not flemma_bridge() and next(require("flemma_sandbox.chat").running(bufnr)) ~= nil
    require("flemma_sandbox.nvim.review_ui").discard(bufnr, running, bang)
  end,
  checkpoints = function(bufnr)
    status.show(require("flemma_sandbox.nvim.undo").list_lines(bufnr))
  end,
  log = function(bufnr)
    require("flemma_sandbox.nvim.log").open(bufnr)
  end,
  gc = function(_, _, bang)
    local pruned, errors = require("flemma_sandbox.nvim.sandboxes").prune_kept()
    if #pruned + #errors > 0 then
      local said = string.format("pruned %d ref(s) of discarded work older than 14 days", #pruned)
      notify(table.concat(vim.list_extend({ said }, errors), "; "), errors[1] and vim.log.levels.WARN or nil)
    end
    remove_and_say(require("flemma_sandbox.nvim.sandboxes").gc_targets(), "chats whose file or project is gone", bang)
  end,
  trust = function(bufnr)
    local ok, message = set_trust(bufnr, true)
    notify(message, ok and vim.log.levels.INFO or vim.log.levels.WARN)
  end,
  untrust = function(bufnr)
    local ok, message = set_trust(bufnr, false)
    notify(message, ok and vim.log.levels.INFO or vim.log.levels.WARN)
  end,
  ["tool:execute"] = standalone_only(function(bufnr)
    local ok, err = require("flemma_sandbox.chat").execute_at(bufnr, vim.api.nvim_win_get_cursor(0)[1] - 1)
    if not ok then
      notify(err, vim.log.levels.WARN)
    end
  end),
  ["tool:execute-all"] = standalone_only(function(bufnr)
    local cfg = sandbox.resolve_config(bufnr)
    local started, skipped = require("flemma_sandbox.chat").execute_all(bufnr, cfg.tools.max_parallel)
    local rest = skipped > 0 and string.format(" (%d not run: answered or filled in by the user)", skipped) or ""
    if started == 0 then
      notify("no tool use to run in this buffer" .. rest, vim.log.levels.INFO)
    elseif rest ~= "" then
      notify(string.format("running %d tool call(s)%s", started, rest), vim.log.levels.INFO)
    end
  end),
  ["tool:cancel"] = standalone_only(function(bufnr)
    notify("cancelled " .. require("flemma_sandbox.chat").cancel(bufnr) .. " tool call(s)", vim.log.levels.INFO)
  end),
}

--- Answers the approval question on screen.
local function answer(value)
  return function()
    local ok, why = require("flemma_sandbox.questions").answer(value)
    if not ok then
      notify(why, vim.log.levels.WARN)
    end
  end
end

M.actions.approve = answer("once")
M.actions["approve-always"] = answer("always")
M.actions.deny = answer("deny")
M.actions.approval = function()
  if not require("flemma_sandbox.questions").focus() then
    notify("no question is waiting", vim.log.levels.INFO)
  end
end

--- <Plug> mappings, each running a subcommand in the current buffer.
M.PLUGS = {
  ["<Plug>(FlemmaSandboxExecute)"] = "tool:execute",
  ["<Plug>(FlemmaSandboxExecuteAll)"] = "tool:execute-all",
  ["<Plug>(FlemmaSandboxCancel)"] = "tool:cancel",
  ["<Plug>(FlemmaSandboxApprove)"] = "approve",
  ["<Plug>(FlemmaSandboxApproveAlways)"] = "approve-always",
  ["<Plug>(FlemmaSandboxDeny)"] = "deny",
  ["<Plug>(FlemmaSandboxApproval)"] = "approval",
}

--- Runs a subcommand for the current buffer (the Lua side of the mappings).
---@param sub string
function M.run(sub)
  M.actions[sub](vim.api.nvim_get_current_buf())
end

M.SUBCOMMANDS = {
  "status",
  "list",
  "reset",
  "delete",
  "gc",
  "undo",
  "redo",
  "checkpoints",
  "log",
  "diff",
  "apply",
  "discard",
  "enable",
  "disable",
  "trust",
  "untrust",
  "tool:execute",
  "tool:execute-all",
  "tool:cancel",
  "approve",
  "approve-always",
  "deny",
  "approval",
}

--- Defines :FlemmaSandbox (replacing an earlier definition of ours).
---@return string name
function M.define()
  vim.api.nvim_create_user_command(M.NAME, function(args)
    -- Neovim 0.7 gives { "" } for no argument
    local sub, bang = args.fargs[1], args.bang
    if sub == nil or sub == "" then
      sub = "status"
    end
    -- `undo!`, `discard!`, ... as the docs write them: :FlemmaSandbox! undo
    if sub:sub(-1) == "!" and M.actions[sub:sub(1, -2)] then
      sub, bang = sub:sub(1, -2), true
    end
    local action = M.actions[sub]
    if not action then
      local known = table.concat(M.SUBCOMMANDS, " | ")
      notify(string.format("unknown subcommand '%s'; use %s", sub, known), vim.log.levels.ERROR)
      return
    end
    action(vim.api.nvim_get_current_buf(), args.fargs[2], bang)
  end, {
    nargs = "*",
    bang = true,
    desc = "flemma-sandbox: status, enable, disable and standalone tool calls",
    complete = function(arglead, line)
      local out = {}
      if line:match("^%S+%s+delete%s+") then
        local sandboxes = require("flemma_sandbox.nvim.sandboxes")
        local project_dir = sandboxes.current_project_dir()
        for _, e in ipairs(project_dir and sandboxes.entries(project_dir) or {}) do
          if e.name:sub(1, #arglead) == arglead then
            out[#out + 1] = e.name
          end
        end
        return out
      end
      for _, word in ipairs(M.SUBCOMMANDS) do
        if word:sub(1, #arglead) == arglead then
          out[#out + 1] = word
        end
      end
      return out
    end,
  })
  for lhs, sub in pairs(M.PLUGS) do
    vim.keymap.set("n", lhs, function()
      M.run(sub)
    end, { desc = "flemma-sandbox: " .. sub })
  end
  -- behind the API's execute(), approve(), ...
  require("flemma_sandbox.base.hooks").subcommand = M.run
  return M.NAME
end

return M
