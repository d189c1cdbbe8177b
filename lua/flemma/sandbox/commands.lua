--- :Flemma sandbox:enable | sandbox:disable | sandbox:status, or
--- :FlemmaSandbox enable | disable | status when another plugin owns :Flemma.
local sandbox = require("flemma.sandbox")
local status = require("flemma.sandbox.status")

local M = {}

local function notify(message, level)
  vim.notify("flemma-sandbox: " .. message, level)
end

---@type table<string, fun(bufnr: integer)>
M.actions = {
  enable = function(bufnr)
    local backend = sandbox.backend_status(bufnr)
    if not backend.available then
      notify("not enabled: " .. tostring(backend.error), vim.log.levels.ERROR)
      return
    end
    sandbox.set_enabled(true)
    notify("enabled for this session (backend " .. backend.name .. ")", vim.log.levels.INFO)
  end,
  disable = function()
    sandbox.set_enabled(false)
    notify("disabled for this session: tool commands run unsandboxed", vim.log.levels.WARN)
  end,
  status = function(bufnr)
    status.show(status.lines(bufnr))
  end,
}

local NAMES = { "enable", "disable", "status" }

--- Defines the command. Returns its name.
---@return string
function M.define()
  local own = vim.fn.exists(":Flemma") ~= 2
  local name = own and "Flemma" or "FlemmaSandbox"
  local prefix = own and "sandbox:" or ""
  vim.api.nvim_create_user_command(name, function(args)
    local sub = args.fargs[1] or ""
    local action = sub:sub(1, #prefix) == prefix and M.actions[sub:sub(#prefix + 1)]
    if not action then
      notify(
        string.format("unknown subcommand '%s'; use %s%s", sub, prefix, table.concat(NAMES, " | " .. prefix)),
        vim.log.levels.ERROR
      )
      return
    end
    action(vim.api.nvim_get_current_buf())
  end, {
    nargs = 1,
    desc = "flemma-sandbox: " .. table.concat(NAMES, ", "),
    complete = function(arglead)
      local out = {}
      for _, n in ipairs(NAMES) do
        local word = prefix .. n
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
