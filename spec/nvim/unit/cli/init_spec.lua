--- cli/init.lua (run in Neovim): the command line's arguments come from
--- the main as FLEMMA_SANDBOX_CLI_ARGC and _ARG1..; help prints the usage
--- (exit 0, 2 without a command); an unknown command fails naming it.
local cli = require("flemma_sandbox.cli")

describe("cli", function()
  local printed, real_stdout

  before_each(function()
    printed = {}
    real_stdout = io.stdout
    -- dispatch writes through io.stdout: a stand-in that keeps the text
    rawset(io, "stdout", {
      write = function(_, ...)
        for _, s in ipairs({ ... }) do
          printed[#printed + 1] = s
        end
      end,
      flush = function() end,
    })
  end)

  after_each(function()
    rawset(io, "stdout", real_stdout)
    for _, name in ipairs({ "FLEMMA_SANDBOX_CLI_ARGC", "FLEMMA_SANDBOX_CLI_ARG1", "FLEMMA_SANDBOX_CLI_ARG3" }) do
      vim.env[name] = nil
    end
  end)

  it("reads the arguments the main passed, an unset one as empty, none without a count", function()
    assert.are.same({}, cli.args())
    vim.env.FLEMMA_SANDBOX_CLI_ARGC = "3"
    vim.env.FLEMMA_SANDBOX_CLI_ARG1 = "run"
    vim.env.FLEMMA_SANDBOX_CLI_ARG3 = "with space;$(x)"
    assert.are.same({ "run", "", "with space;$(x)" }, cli.args())
    vim.env.FLEMMA_SANDBOX_CLI_ARGC = "not a number"
    assert.are.same({}, cli.args())
  end)

  it("prints the usage for help, --help and -h (0) and without a command (2)", function()
    for _, word in ipairs({ "help", "--help", "-h" }) do
      printed = {}
      assert.are.equal(0, cli.dispatch({ word }))
      assert.are.equal(cli.USAGE, table.concat(printed))
    end
    printed = {}
    assert.are.equal(2, cli.dispatch({}))
    assert.are.equal(cli.USAGE, table.concat(printed))
  end)

  it("lists every command it dispatches in the usage", function()
    for _, name in ipairs({ "run", "list", "status", "diff", "apply", "discard", "reset", "delete", "gc", "log" }) do
      assert.matches("\n  " .. name .. " ", cli.USAGE, 1, true)
    end
  end)

  it("fails an unknown command naming it, with code 2", function()
    local ok, err = pcall(cli.dispatch, { "frobnicate", "x" })
    assert.is_false(ok)
    assert.are.same({ cli_message = "unknown command 'frobnicate' (flemma-sandbox help lists them)", code = 2 }, err)
  end)

  it("hands a command its arguments without its name", function()
    local ok, err = pcall(cli.dispatch, { "log", "demo", "--bad" })
    assert.is_false(ok)
    assert.are.equal("log: unknown option '--bad' (flemma-sandbox help)", err.cli_message)
  end)
end)
