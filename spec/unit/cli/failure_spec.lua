--- cli/failure.lua: a command line failure is an error value carrying the
--- user's sentence and exit code 2, with no file or line prefix.
local failure = require("flemma_sandbox.cli.failure")

describe("cli.failure.fail", function()
  it("raises a table with the message and code 2", function()
    local ok, err = pcall(failure.fail, "unknown option --frob")
    assert.is_false(ok)
    assert.are.same({ cli_message = "unknown option --frob", code = 2 }, err)
  end)

  it("keeps the message as given, with no position added", function()
    local _, err = pcall(function()
      failure.fail("config key tools.timeout: a number")
    end)
    assert.are.equal("config key tools.timeout: a number", err.cli_message)
  end)
end)
