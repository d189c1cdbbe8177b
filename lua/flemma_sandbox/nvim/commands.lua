--- :Flemma sandbox:enable | sandbox:disable | sandbox:status and
--- :Flemma tool:execute | tool:execute-all | tool:cancel, or :FlemmaSandbox
--- with the same subcommands when another plugin owns :Flemma.
local sandbox = require("flemma_sandbox")
local status = require("flemma_sandbox.nvim.status")

local M = {}

local function notify(message, level)
  vim.notify("flemma-sandbox: " .. message, level)
end

---@type table<string, fun(bufnr: integer)>
M.actions = {
  ["sandbox:enable"] = function(bufnr)
    local backend = sandbox.backend_status(bufnr)
    if not backend.available then
      notify("not enabled: " .. tostring(backend.error), vim.log.levels.ERROR)
      return
    end
    sandbox.set_enabled(true)
    notify("enabled for this session (backend " .. backend.name .. ")", vim.log.levels.INFO)
  end,
  ["sandbox:disable"] = function()
    sandbox.set_enabled(false)
    notify("disabled for this session: tool commands run unsandboxed", vim.log.levels.WARN)
  end,
  ["sandbox:status"] = function(bufnr)
    status.show(status.lines(bufnr))
  end,
  ["tool:execute"] = function(bufnr)
    local ok, err = require("flemma_sandbox.chat").execute_at(bufnr, vim.api.nvim_win_get_cursor(0)[1] - 1)
    if not ok then
      notify(err, vim.log.levels.WARN)
    end
  end,
  ["tool:execute-all"] = function(bufnr)
    local cfg = sandbox.resolve_config(bufnr)
    if require("flemma_sandbox.chat").execute_all(bufnr, cfg.tools.max_parallel) == 0 then
      notify("no tool use without a result in this buffer", vim.log.levels.INFO)
    end
  end,
  ["tool:cancel"] = function(bufnr)
    notify("cancelled " .. require("flemma_sandbox.chat").cancel(bufnr) .. " tool call(s)", vim.log.levels.INFO)
  end,
}

local NAMES = {
  "sandbox:enable",
  "sandbox:disable",
  "sandbox:status",
  "tool:execute",
  "tool:execute-all",
  "tool:cancel",
}

--- Defines the command. Returns its name. Under :FlemmaSandbox the
--- "sandbox:" prefix is dropped (`:FlemmaSandbox status`).
---@return string
function M.define()
  local own = vim.fn.exists(":Flemma") ~= 2
  local name = own and "Flemma" or "FlemmaSandbox"
  local function shown(full)
    return own and full or (full:gsub("^sandbox:", ""))
  end
  local by_shown = {}
  for _, full in ipairs(NAMES) do
    by_shown[shown(full)] = M.actions[full]
  end
  vim.api.nvim_create_user_command(name, function(args)
    local sub = args.fargs[1] or ""
    local action = by_shown[sub]
    if not action then
      local words = vim.tbl_map(shown, NAMES)
      notify(string.format("unknown subcommand '%s'; use %s", sub, table.concat(words, " | ")), vim.log.levels.ERROR)
      return
    end
    action(vim.api.nvim_get_current_buf())
  end, {
    nargs = 1,
    desc = "flemma-sandbox: sandbox and tool commands",
    complete = function(arglead)
      local out = {}
      for _, full in ipairs(NAMES) do
        local word = shown(full)
        if word:sub(1, #arglead) == arglead then
          out[#out + 1] = word
        end
      end
      return out
    end,
  })
  return name
end

return M
