--- Whether Flemma knew flemma-sandbox's backend when its setup() read its
--- config. Flemma resolves `sandbox.backends.NAME` by the registered
--- backends when setup() runs and drops a key it cannot resolve ("unknown
--- config keys: sandbox.backends.flemma_sandbox"), value and all: a backend
--- registered after that gets no setting from setup() (frontmatter keys,
--- read per buffer later, still work). With packages and no plugin manager,
--- Neovim loads plugin files after init.lua, so a require("flemma").setup()
--- there ran before our plugin file unless require("flemma_sandbox").setup()
--- came first (it loads the plugin file at once). Nothing can give the
--- dropped values back: this says so, once, and :checkhealth names it.
local M = {}

M.KEY = "sandbox.backends.flemma_sandbox"

---@class flemma_sandbox.FlemmaRegistration
---@field registered boolean our backend is in Flemma's registry, with its schema
---@field late boolean|nil Flemma's setup() had run when we first registered (nil: not yet registered)
---@field dropped string|nil Flemma's message that it dropped our key, when Neovim's message history holds it

---@type boolean|nil
local late = nil
local checked = false

--- Whether Flemma's setup() has run (its config is initialised).
---@return boolean
function M.flemma_set_up()
  local ok, facade = pcall(require, "flemma.config")
  return ok and (pcall(facade.materialize)) or false
end

--- Called right before our first registration with Flemma.
function M.before_first()
  if late == nil then
    late = M.flemma_set_up()
  end
end

--- Flemma's message that it dropped our key, from Neovim's message
--- history (nil: not there; with a notification plugin in place of
--- vim.notify it never is).
---@return string|nil
function M.dropped_message()
  if not (vim.api.nvim_exec2 and late) then
    return nil
  end
  local ok, out = pcall(vim.api.nvim_exec2, "messages", { output = true })
  if not ok or type(out) ~= "table" then
    return nil
  end
  for line in (out.output or ""):gmatch("[^\n]+") do
    if line:find("unknown config keys:", 1, true) and line:find(M.KEY, 1, true) then
      return line
    end
  end
  return nil
end

--- What :checkhealth reports.
---@param name string our backend's name
---@return flemma_sandbox.FlemmaRegistration
function M.state(name)
  local ok, fs = pcall(require, "flemma.sandbox")
  local entry = ok and fs.get(name) or nil
  local registered = entry ~= nil and entry.config_schema ~= nil
  return { registered = registered, late = late, dropped = M.dropped_message() }
end

--- After a late first registration: once Flemma's own warning is out
--- (it is scheduled), one notice that names the cause.
function M.say_when_dropped()
  if not late or checked then
    return
  end
  checked = true
  local function check()
    vim.schedule(function()
      if M.dropped_message() then
        -- after Flemma's line, which names the key
        require("flemma_sandbox.base.notice").say(
          "Flemma dropped these: :checkhealth flemma_sandbox",
          vim.log.levels.WARN
        )
      end
    end)
  end
  if vim.v.vim_did_enter == 1 then
    check()
  else
    vim.api.nvim_create_autocmd("VimEnter", { once = true, callback = check })
  end
end

return M
