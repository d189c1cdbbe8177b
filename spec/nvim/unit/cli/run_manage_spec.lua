--- cli/run.lua and cli/manage.lua (run in Neovim): each command refuses
--- its wrong arguments naming them, with exit code 2, before it opens a
--- sandbox (a sandbox's runs are spec/cli's); status's lines name the
--- sandbox and the command line's own subcommands, not a chat's.
local run = require("flemma_sandbox.cli.run")
local manage = require("flemma_sandbox.cli.manage")

--- The command line failure fn raises: its message (code 2).
local function failure(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  assert.are.equal("table", type(err), tostring(err))
  assert.are.equal(2, err.code)
  return err.cli_message
end

describe("cli.run's arguments", function()
  it("refuses an unknown option, naming it", function()
    assert.are.equal("run: unknown option '--frob' (flemma-sandbox help)", failure(run.run, { "--frob", "demo" }))
  end)

  it("wants the command after --, and something after it", function()
    assert.are.equal(
      "run: put the command after '--': flemma-sandbox run demo -- ls",
      failure(run.run, { "demo", "ls", "-la" })
    )
    assert.are.equal("run: nothing after '--' (leave it out for your shell)", failure(run.run, { "demo", "--" }))
  end)

  it("wants a plain name, options before it", function()
    assert.matches("^NAME: expected a sandbox name .* got none$", failure(run.run, {}))
    assert.matches("^NAME: expected a sandbox name .* got none$", failure(run.run, { "--direct", "--", "ls" }))
    assert.matches("got '%.%./x'$", failure(run.run, { "--raw-terminal", "../x" }))
  end)

  it("takes the command's own options after -- as its words", function()
    -- the name is checked after parsing: a bad one shows parsing went past the command
    assert.matches("got 'a/b'$", failure(run.run, { "a/b", "--", "--frob", "--", "x" }))
  end)
end)

describe("cli.manage's arguments", function()
  it("refuses an option a command does not take, naming command and option", function()
    assert.are.equal("list: unknown option '--frob' (flemma-sandbox help)", failure(manage.list, { "--frob" }))
    assert.are.equal("delete: unknown option '-f' (flemma-sandbox help)", failure(manage.delete, { "-f", "demo" }))
    assert.are.equal("reset: unknown option '--force' (flemma-sandbox help)", failure(manage.reset, { "--force", "d" }))
    assert.are.equal("discard: unknown option '-x' (flemma-sandbox help)", failure(manage.discard, { "-x", "demo" }))
  end)

  it("refuses a word a command does not take", function()
    assert.are.equal("list: unexpected argument 'demo' (flemma-sandbox help)", failure(manage.list, { "demo" }))
    assert.are.equal("gc: unexpected argument 'now' (flemma-sandbox help)", failure(manage.gc, { "now" }))
    assert.are.equal("status: unexpected argument 'b' (flemma-sandbox help)", failure(manage.status, { "a", "b" }))
    assert.are.equal("diff: unexpected argument 'b' (flemma-sandbox help)", failure(manage.diff, { "a", "b" }))
  end)

  it("asks which sandbox when a command needs one", function()
    for name, fn in pairs({
      diff = manage.diff,
      apply = manage.apply,
      discard = manage.discard,
      reset = manage.reset,
      delete = manage.delete,
    }) do
      assert.are.equal(
        name .. ": which sandbox? flemma-sandbox " .. name .. " NAME (flemma-sandbox list)",
        failure(fn, {})
      )
    end
  end)

  it("refuses a bad name before it opens anything", function()
    assert.matches("^NAME: expected a sandbox name", failure(manage.delete, { "--force", "a b" }))
  end)
end)

describe("cli.manage.command_line_status", function()
  it("names the sandbox and the command line's subcommands instead of the chat's", function()
    local lines = manage.command_line_status({
      "flemma-sandbox, buffer 3: /home/u/.cache/flemma-sandbox/p/demo/cli.chat",
      "sandbox of chat demo: running",
      "review: :FlemmaSandbox diff, apply, discard",
      "empty its folders: :FlemmaSandbox reset; stop it: :FlemmaSandbox stop",
      "this chat's timeline: :FlemmaSandbox log",
      "of chat demo2 is another one",
    }, "demo", "/home/u/p")
    assert.are.same({
      "flemma-sandbox, sandbox demo of /home/u/p",
      "sandbox of sandbox demo: running",
      "review: flemma-sandbox diff|apply|discard demo",
      "empty its folders: flemma-sandbox reset demo; stop it: :FlemmaSandbox stop",
      "this sandbox's timeline: flemma-sandbox log demo",
      "of chat demo2 is another one",
    }, lines)
  end)

  it("reads a name with pattern characters as it is", function()
    local lines = manage.command_line_status({ "x", "of chat a.b-c", "of chat aXb-c" }, "a.b-c", "/p")
    assert.are.same({ "x", "of sandbox a.b-c", "of chat aXb-c" }, lines)
  end)
end)
