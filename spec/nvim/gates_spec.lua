--- The switches that turn every tool call off: FLEMMA_SANDBOX_TOOLS=off in
--- Neovim's environment and tools.enabled = false (config/gates.lua).
local h = require("support.helpers")
local sandbox = require("flemma_sandbox")

local run = require("support.nvim").run_tool

describe("tool calls off", function()
  local dir, old_cwd
  before_each(function()
    dir = h.tmpdir()
    old_cwd = vim.fn.getcwd()
    vim.cmd("cd " .. vim.fn.fnameescape(dir))
    vim.env.FLEMMA_SANDBOX_TOOLS = nil
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD" }, network = false },
      approval = { bash = "allow", write = "allow" },
    })
  end)
  after_each(function()
    vim.env.FLEMMA_SANDBOX_TOOLS = nil
    vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
    sandbox.setup()
    h.rmdir(dir)
  end)

  it("FLEMMA_SANDBOX_TOOLS=off refuses every tool call, naming the variable; nothing runs", function()
    vim.env.FLEMMA_SANDBOX_TOOLS = "off"
    local r = run("bash", { command = "echo ran > bash.txt" })
    assert.are.equal("tool calls are off: FLEMMA_SANDBOX_TOOLS=off in Neovim's environment", r.error)
    assert.is_true(r.not_run)
    r = run("write", { path = dir .. "/write.txt", content = "x" })
    assert.matches("FLEMMA_SANDBOX_TOOLS=off", r.error)
    assert.is_nil(h.read(dir .. "/bash.txt"))
    assert.is_nil(h.read(dir .. "/write.txt"))
    local argv, err = sandbox.wrap_command({ "true" })
    assert.is_nil(argv)
    assert.matches("^refused: tool calls are off: FLEMMA_SANDBOX_TOOLS=off", err)
    -- also with the sandbox itself disabled: the switch is about tool calls
    sandbox.setup({ enabled = false })
    assert.is_nil((sandbox.wrap_command({ "true" })))
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(0), "\n")
    assert.matches("tool calls: tool calls are off: FLEMMA_SANDBOX_TOOLS=off", status)
    -- control: without it the same calls run
    vim.env.FLEMMA_SANDBOX_TOOLS = nil
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { "$CWD" } }, approval = { bash = "allow" } })
    r = run("bash", { command = "echo ran > bash.txt" })
    assert.is_nil(r.error)
    assert.are.equal("ran\n", h.read(dir .. "/bash.txt"))
    status = table.concat(require("flemma_sandbox.nvim.status").lines(0), "\n")
    assert.matches("tool calls: on", status)
  end)

  it("tools.enabled = false does the same, naming the key; a wrong type is an error naming it", function()
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { "$CWD" } }, tools = { enabled = false } })
    local r = run("bash", { command = "echo ran > bash.txt" })
    assert.are.equal("tool calls are off: tools.enabled = false", r.error)
    assert.is_nil(h.read(dir .. "/bash.txt"))
    assert.are.equal("tool calls are off: tools.enabled = false", sandbox.tools_refusal(0))
    assert.has_error(function()
      sandbox.setup({ tools = { enabled = "no" } })
    end, "flemma-sandbox: sandbox.tools.enabled: expected boolean, got string")
  end)
end)
