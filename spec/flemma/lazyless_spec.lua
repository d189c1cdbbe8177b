--- Neovim's own packages, no plugin manager: Flemma and flemma-sandbox in
--- pack/*/start, the user's init.lua calls the setup() functions, and
--- Neovim loads the plugin files after init.lua. Flemma drops a
--- sandbox.backends key of a backend it does not know when its setup()
--- runs: require("flemma_sandbox").setup() before Flemma's registers the
--- backend at once, so Flemma's settings for it take effect (a limit seen
--- by a command); with Flemma's setup() alone (the control: Flemma drops
--- them) flemma-sandbox says so once and :checkhealth names the cause.
local h = require("support.helpers")

local flemma_dir = assert(os.getenv("FLEMMA_DIR"), "FLEMMA_DIR")

--- What the child reports at the end of its start-up.
local REPORT = [[
vim.api.nvim_create_autocmd("VimEnter", { callback = function()
  -- after Flemma's scheduled warning and flemma-sandbox's check of it
  vim.defer_fn(function()
    local out = {}
    local buf = vim.api.nvim_get_current_buf()
    local argv, err = require("flemma.sandbox").wrap_command({ "cat", "/proc/self/limits" }, buf)
    out[#out + 1] = "wrapped=" .. tostring(argv and argv[1] or err)
    if argv then
      out[#out + 1] = vim.fn.system(argv)
    end
    out[#out + 1] = "messages=" .. vim.api.nvim_exec2("messages", { output = true }).output
    vim.cmd("checkhealth flemma_sandbox")
    out[#out + 1] = "health=" .. table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    local f = io.open(os.getenv("T") .. "/result", "w")
    f:write(table.concat(out, "\n") .. "\n")
    f:close()
    vim.cmd("qa!")
  end, 500)
end })
]]

--- Starts Neovim as a user's with init.lua holding `lines`; the report.
---@param t string
---@param lines string[]
---@return string
local function start(t, lines)
  local start_dir = t .. "/data/nvim/site/pack/plugins/start"
  h.sh("mkdir -p " .. h.shell_quote(start_dir) .. " " .. h.shell_quote(t .. "/config/nvim") .. " " .. t .. "/home")
  h.sh("ln -s " .. h.shell_quote(flemma_dir) .. " " .. h.shell_quote(start_dir .. "/flemma.nvim"))
  h.sh("ln -s " .. h.shell_quote(vim.fn.getcwd()) .. " " .. h.shell_quote(start_dir .. "/flemma-sandbox"))
  h.write(t .. "/config/nvim/init.lua", table.concat(lines, "\n") .. "\n" .. REPORT)
  local env = {
    HOME = t .. "/home",
    T = t,
    XDG_CONFIG_HOME = t .. "/config",
    XDG_DATA_HOME = t .. "/data",
    XDG_STATE_HOME = t .. "/state",
    XDG_CACHE_HOME = t .. "/cache",
  }
  local r = h.run({ "timeout", "120", "nvim", "--headless", "-i", "NONE" }, env, t .. "/home")
  return h.read(t .. "/result") or ("no result:\n" .. r.stderr .. r.stdout)
end

local FLEMMA_SETUP = "require('flemma').setup({ lsp = { enabled = false }, sandbox = { backends = { "
  .. "flemma_sandbox = { limits = { open_files = 333 }, sandboxes = { live = false } } } } })"

describe("packages without a plugin manager", function()
  local t
  before_each(function()
    t = h.tmpdir()
  end)
  after_each(function()
    h.rmdir(t)
  end)

  it("flemma-sandbox's setup() first: Flemma keeps sandbox.backends.flemma_sandbox and it takes effect", function()
    local got = start(t, { "require('flemma_sandbox').setup({})", FLEMMA_SETUP })
    assert.matches("wrapped=[^\n]*flemma%-sandbox%-host", got)
    assert.matches("Max open files%s+333%s+333", got)
    assert.is_nil(got:find("unknown config keys", 1, true), got)
    assert.is_nil(got:find("WARNING", 1, true), got)
  end)

  it("Flemma's setup() alone (control: Flemma drops the settings): one notice, and :checkhealth names it", function()
    local got = start(t, { FLEMMA_SETUP })
    assert.matches("unknown config keys: sandbox%.backends%.flemma_sandbox", got)
    assert.is_nil(got:find("Max open files%s+333"), got)
    local _, notices = got:gsub("flemma%-sandbox: Flemma dropped these", "")
    assert.are.equal(1, notices, got)
    assert.matches("WARNING Flemma's setup%(%) ran before flemma%-sandbox registered its backend", got)
    assert.matches("require%('flemma_sandbox'%)%.setup%({}%) before require%('flemma'%)%.setup%(%)", got)
  end)

  it(":checkhealth says when the backend is no longer in Flemma's registry", function()
    local got = start(t, {
      "require('flemma_sandbox').setup({})",
      FLEMMA_SETUP,
      "vim.api.nvim_create_autocmd('VimEnter', { callback = function()",
      "  require('flemma.sandbox').unregister('flemma_sandbox')",
      "end })",
    })
    assert.matches("ERROR backend flemma_sandbox is not in Flemma's sandbox backend registry", got)
    assert.is_nil(got:find("OK registered with Flemma", 1, true), got)
  end)
end)
