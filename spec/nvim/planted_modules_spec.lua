--- A file a sandboxed command plants in the project never runs at the next
--- Neovim start there (issue 38, item 1): module names of ours and
--- Flemma's are looked up where they are installed, never in the working
--- directory (package.path's "./?.lua", package.cpath's "./?.so").
local h = require("support.helpers")
local planted = require("support.planted")

local ROOT = vim.fn.getcwd()

--- What a user does in a project: start Neovim there (standalone, no
--- Flemma), ask for the status and the health check, open a chat, run a
--- command in the sandbox. init_lines go first in init.lua.
---@param t string
---@param init_lines string[]
---@return { code: integer, result: string }
local function start_in_project(t, init_lines, plugin_root, after_rtp)
  local init = vim.list_extend(vim.deepcopy(init_lines), {
    "vim.opt.rtp:prepend(" .. string.format("%q", plugin_root or ROOT) .. ")",
  })
  vim.list_extend(init, after_rtp or {})
  h.write(t .. "/init.lua", table.concat(init, "\n") .. "\n")
  local check = table.concat({
    "local out = {}",
    "out[#out + 1] = 'flemma_present=' .. tostring(require('flemma_sandbox.flemma').flemma_present())",
    "pcall(vim.cmd, 'FlemmaSandbox status')",
    "pcall(vim.cmd, 'checkhealth flemma_sandbox')",
    "pcall(vim.cmd, 'edit x.chat')",
    "local ok, argv = pcall(require('flemma_sandbox').wrap_command, { 'sh', '-c', 'echo ran' })",
    "out[#out + 1] = 'output=' .. (ok and vim.fn.system(argv) or tostring(argv))",
    "local f = io.open(os.getenv('T') .. '/result', 'w') f:write(table.concat(out, '\\n')) f:close()",
  }, "\n")
  h.write(t .. "/check.lua", check)
  local r = h.run({
    "timeout",
    "90",
    "nvim",
    "--headless",
    "-i",
    "NONE",
    "-u",
    t .. "/init.lua",
    "-c",
    "luafile " .. t .. "/check.lua",
    "-c",
    "qa!",
  }, {
    HOME = t .. "/home",
    XDG_STATE_HOME = t .. "/state",
    XDG_CACHE_HOME = t .. "/cache",
    T = t,
  }, t .. "/proj")
  return { code = r.code, result = h.read(t .. "/result") or ("no result:\n" .. r.stderr .. r.stdout) }
end

describe("planted modules, standalone Neovim", function()
  local t
  before_each(function()
    t = h.tmpdir()
    h.sh("mkdir -p " .. h.shell_quote(t .. "/home") .. " " .. h.shell_quote(t .. "/proj"))
    planted.plant(ROOT, t .. "/proj", t .. "/marks")
  end)
  after_each(function()
    h.rmdir(t)
  end)

  it("nothing planted in the project runs at start, status, health, a chat or a call", function()
    local got = start_in_project(t, {})
    assert.matches("flemma_present=false", got.result)
    assert.matches("output=ran", got.result)
    assert.are.equal("", planted.marks(t .. "/marks"))
  end)

  it("control: with the guard switched off, the same start runs the planted files", function()
    local got = start_in_project(t, { planted.unguarded(ROOT) })
    local marks = planted.marks(t .. "/marks")
    -- Flemma is looked up at start: the project's flemma/sandbox.lua ran
    assert.matches("flemma.sandbox", marks, 1, true)
    assert.matches("flemma_present=true", got.result)
  end)

  it("a first start without a built core loads no core.so from the project", function()
    -- a plugin folder as a plugin manager leaves it when `make` did not run
    -- and cannot run (no Makefile): the core is missing
    local plugin = t .. "/plugin"
    h.sh("mkdir -p " .. h.shell_quote(plugin))
    h.sh(
      "cd "
        .. h.shell_quote(ROOT)
        .. " && tar -c --exclude='*.so' lua plugin doc | tar -x --no-same-owner -C "
        .. h.shell_quote(plugin)
    )
    start_in_project(t, {}, plugin)
    assert.are.equal("", planted.marks(t .. "/marks"))
    -- setup() in init.lua, before the plugin file runs
    local setup_first = { "pcall(function() require('flemma_sandbox').setup({}) end)" }
    start_in_project(t, {}, plugin, setup_first)
    assert.are.equal("", planted.marks(t .. "/marks"))
    -- control: the same start with the guard off loads the project's core.so
    start_in_project(t, { planted.unguarded(plugin) }, plugin, setup_first)
    assert.matches("core.so", planted.marks(t .. "/marks"), 1, true)
  end)
end)
