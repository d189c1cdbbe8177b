-- The command line applies Flemma's config for flemma-sandbox (the real
-- Flemma, FLEMMA_DIR): a chat buffer saves it (config/saved.lua), and
-- `flemma-sandbox run` reads it. Control: before Flemma's config names
-- the setting, the command line does not apply it.
local cli = require("support.cli")
local h = require("support.helpers")
local project = require("support.project")

describe("the command line under Flemma", function()
  local p, old_home

  --- The command line with this Neovim's home and folders.
  local function run(args)
    local env = {
      HOME = p.dir .. "/home",
      XDG_CACHE_HOME = os.getenv("XDG_CACHE_HOME"),
      XDG_STATE_HOME = os.getenv("XDG_STATE_HOME"),
    }
    return h.run(vim.list_extend({ cli.BIN }, args), env, p.proj)
  end

  before_each(function()
    old_home = vim.env.HOME
    p = project.enter("true")
    vim.env.HOME = p.dir .. "/home"
    vim.fn.mkdir(p.dir .. "/home/.agent", "p")
    h.write(p.dir .. "/home/.agent/settings", "agent settings\n")
    vim.fn.mkdir(p.dir .. "/chats", "p")
  end)

  after_each(function()
    -- its sandbox has no owner: stopped here, also when an assertion failed
    run({ "delete", "--force", "flemma-cli" })
    vim.cmd("silent! %bwipeout!")
    vim.env.HOME = old_home
    project.leave(p)
  end)

  local function open_chat(config)
    require("flemma").setup({ lsp = { enabled = false }, sandbox = { backends = { flemma_sandbox = config } } })
    vim.cmd("edit " .. vim.fn.fnameescape(p.dir .. "/chats/c.chat"))
    assert.are.equal("chat", vim.bo.filetype)
  end

  it("applies Flemma's sandbox.backends.flemma_sandbox saved by a chat", function()
    local read = { "run", "--direct", "flemma-cli", "--", "cat", p.dir .. "/home/.agent/settings" }
    -- control: Flemma's config without the setting
    open_chat({})
    local r = run(read)
    assert.are_not.equal(0, r.code)
    vim.cmd("silent! %bwipeout!")
    open_chat({ home_overlay = { "~/.agent" } })
    local saved = vim.json.decode(h.read(os.getenv("XDG_STATE_HOME") .. "/flemma-sandbox/config.json"))
    assert.are.same({ "~/.agent" }, saved.flemma.policy.home_overlay)
    r = run(read)
    assert.are.equal("agent settings\n", r.stdout, r.stderr)
  end)
end)
