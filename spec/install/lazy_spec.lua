-- Installing with lazy.nvim as a user does: a spec with `url = "file://..."`
-- naming a git repository of this tree and `build = "make"`, `Lazy! sync`
-- headless, then a second start. lazy.nvim comes from LAZY_DIR (a checkout
-- this machine holds, never committed); without it, or on Neovim older than
-- lazy's 0.8, the spec is pending with the reason.
local h = require("support.helpers")

local lazy_dir = os.getenv("LAZY_DIR")

local function nvim_at_least_0_8()
  local r = h.run({ "nvim", "--headless", "-u", "NONE", "-c", 'if has("nvim-0.8") | qa! | else | cquit 1 | endif' })
  return r.code == 0
end

describe("install with lazy.nvim", function()
  if not lazy_dir or not h.read(lazy_dir .. "/lua/lazy/init.lua") then
    pending("skipped: LAZY_DIR does not name a lazy.nvim checkout")
    return
  end
  if not nvim_at_least_0_8() then
    pending("skipped: lazy.nvim needs Neovim 0.8+")
    return
  end

  local t
  before_each(function()
    t = h.tmpdir()
  end)
  after_each(function()
    h.rmdir(t)
  end)

  local function vim_argv(args)
    local argv = { "timeout", "300", "nvim", "--headless", "-i", "NONE", "-u", t .. "/init.lua" }
    for _, a in ipairs(args) do
      argv[#argv + 1] = a
    end
    return argv
  end

  --- Runs Neovim as a fresh user of this temporary folder would.
  local function nvim(args)
    local env = {
      HOME = t .. "/home",
      XDG_CONFIG_HOME = t .. "/home/.config",
      XDG_DATA_HOME = t .. "/home/.local/share",
      XDG_STATE_HOME = t .. "/home/.local/state",
      XDG_CACHE_HOME = t .. "/home/.cache",
      T = t,
      LAZY_DIR = lazy_dir,
    }
    return h.run(vim_argv(args), env, t .. "/project")
  end

  it("builds the core on sync, has help tags, and the next start wraps commands", function()
    -- this tree as a git repository (what the user clones), built files left out
    h.sh("mkdir -p " .. t .. "/src " .. t .. "/project " .. t .. "/home")
    h.copy_tree(t .. "/src")
    h.sh(
      "cd "
        .. t
        .. "/src && git init -q && git add -A && "
        .. "git -c user.name=t -c user.email=t@t -c commit.gpgsign=false commit -qm tree"
    )
    assert.is_nil(h.read(t .. "/src/lua/flemma_sandbox/core.so"))
    h.write(
      t .. "/init.lua",
      [[
local t = os.getenv("T")
vim.opt.rtp:prepend(os.getenv("LAZY_DIR"))
require("lazy").setup({
  { url = "file://" .. t .. "/src", name = "flemma-sandbox", build = "make" },
}, {
  root = t .. "/plugins",
  lockfile = t .. "/lazy-lock.json",
  state = t .. "/lazy-state.json",
  rocks = { enabled = false },
  readme = { enabled = false },
  checker = { enabled = false },
  change_detection = { enabled = false },
  install = { colorscheme = {} },
})
]]
    )
    local sync = nvim({ "+Lazy! sync", "+qa" })
    local plugin = t .. "/plugins/flemma-sandbox"
    assert.truthy(h.read(plugin .. "/lua/flemma_sandbox/core.so"), "no core after sync:\n" .. sync.stderr)
    assert.truthy(h.read(plugin .. "/lua/flemma_sandbox/flemma-sandbox-host"), sync.stderr)
    assert.truthy(h.read(plugin .. "/doc/tags"), "no help tags:\n" .. sync.stderr)

    -- the next start: the command exists, help opens, a wrapped command runs
    -- sandboxed (a write outside the project fails; unwrapped it lands)
    h.write(
      t .. "/check.lua",
      [[
local t = os.getenv("T")
local out = {}
out[#out + 1] = "command=" .. vim.fn.exists(":FlemmaSandbox")
-- noautocmd: Neovim's help ftplugin raises where the vimdoc parser is not installed
local help_ok, help_err = pcall(vim.cmd, "noautocmd help flemma-sandbox")
out[#out + 1] = "help=" .. (help_ok and vim.fn.expand("%:t") or tostring(help_err))
local inner = { "sh", "-c", "echo ran; touch " .. t .. "/outside-wrapped" }
local argv = assert(require("flemma_sandbox").wrap_command(inner, 0))
out[#out + 1] = "wrapped=" .. tostring(argv[1] ~= "sh")
out[#out + 1] = "output=" .. vim.fn.system(argv):gsub("%s+$", "")
vim.fn.system({ "sh", "-c", "touch " .. t .. "/outside-plain" })
local f = assert(io.open(t .. "/result", "w"))
f:write(table.concat(out, "\n") .. "\n")
f:close()
vim.cmd("qa!")
]]
    )
    local run = nvim({ "-c", "luafile " .. t .. "/check.lua", "-c", "cquit 1" })
    local result = h.read(t .. "/result") or ("no result:\n" .. run.stderr .. run.stdout)
    assert.matches("command=2\n", result)
    assert.matches("help=flemma%-sandbox%.txt\n", result)
    assert.matches("wrapped=true\n", result)
    assert.matches("output=ran\n", result)
    assert.is_nil(h.read(t .. "/outside-wrapped"))
    assert.truthy(h.read(t .. "/outside-plain"), "control: the write outside lands when not wrapped")
  end)
end)
