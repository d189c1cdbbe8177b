--- A chat and the command line share a sandbox by its name: a chat whose
--- config sets sandboxes.name to NAME uses the command line's sandbox
--- NAME (its folders), and :FlemmaSandbox list shows it once.
local cli = require("support.cli")
local h = require("support.helpers")
local sandbox = require("flemma_sandbox")

describe("a chat and the command line", function()
  local w, cwd, bufnr
  before_each(function()
    w = cli.world()
    cwd = vim.fn.getcwd()
    vim.cmd("cd " .. vim.fn.fnameescape(w.proj))
    sandbox.setup({})
    bufnr = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(bufnr, w.proj .. "/talk.chat")
  end)
  after_each(function()
    vim.api.nvim_buf_delete(bufnr, { force = true })
    vim.cmd("cd " .. vim.fn.fnameescape(cwd))
    require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
    sandbox.setup({})
    cli.destroy(w)
  end)

  --- A command of the chat, as Flemma's runner runs a wrapped one.
  local function chat_run(cmd)
    local argv = assert(sandbox.wrap_command({ "sh", "-c", cmd }, bufnr))
    return h.run(argv, nil, w.proj)
  end

  --- The command line with this Neovim's own folders (and so its config).
  local function cli_run(args)
    local env = {
      HOME = os.getenv("HOME"),
      XDG_CACHE_HOME = os.getenv("XDG_CACHE_HOME"),
      XDG_STATE_HOME = os.getenv("XDG_STATE_HOME"),
    }
    return cli.run(w, args, { env = env })
  end

  it("share the sandbox a chat names (sandboxes.name), and list shows it", function()
    assert.is_true(sandbox.set_buffer_config(bufnr, { sandboxes = { name = "shared" } }))
    local r = chat_run("echo from-chat > /tmp/note")
    assert.are.equal(0, r.code, r.stderr)
    r = cli_run({ "run", "--direct", "shared", "--", "sh", "-c", "cat /tmp/note; echo from-cli > /tmp/back" })
    assert.are.equal("from-chat\n", r.stdout, r.stderr)
    assert.are.equal("from-cli\n", chat_run("cat /tmp/back").stdout)
    local lines = table.concat(require("flemma_sandbox.nvim.sandboxes").list_lines(), "\n")
    local _, count = lines:gsub("\n  shared ", "")
    assert.are.equal(1, count, lines)
    assert.matches("shared .*%(%+1%)", lines)
    -- control: a chat without the name has its own sandbox
    assert.is_true(sandbox.set_buffer_config(bufnr, nil))
    assert.are_not.equal(0, chat_run("cat /tmp/note").code)
  end)
end)
