--- flemma/approval.lua's refusal and git_on_host (run in Neovim, Flemma's
--- sandbox and config modules stood in for: the resolver in Flemma's real
--- chain is spec/flemma's): Flemma's host-side file tools are refused
--- where flemma-sandbox's rules would refuse the sandboxed command (a read
--- of a hidden path, a write of a protected one or one outside the
--- writable roots), relative paths placed as Flemma places them, and a
--- git call that runs on the host is one the user is asked about.
local approval = require("flemma_sandbox.flemma.approval")
local h = require("support.helpers")

describe("flemma.approval", function()
  local dir, project, saved_sandbox, saved_config, fake, bufnr, old_cwd

  before_each(function()
    dir = h.tmpdir()
    project = dir .. "/project"
    vim.fn.mkdir(project .. "/secret", "p")
    vim.fn.mkdir(project .. "/chats", "p")
    vim.fn.mkdir(dir .. "/outside", "p")
    h.write(project .. "/secret/key", "k")
    saved_sandbox, saved_config = package.loaded["flemma.sandbox"], package.loaded["flemma.config"]
    fake = {
      config = { enabled = true, backend = "flemma_sandbox" },
      backend_config = { deny_read = { project .. "/secret" }, deny_write = { "protected.txt" } },
      tools = {},
    }
    package.loaded["flemma.sandbox"] = {
      resolve_config = function()
        return vim.tbl_extend("force", fake.config, { backends = { flemma_sandbox = fake.backend_config } })
      end,
      get_policy = function()
        return { rw_paths = { project }, network = false, allow_privileged = false }
      end,
    }
    package.loaded["flemma.config"] = {
      materialize = function()
        return { tools = fake.tools, sandbox = { backends = { flemma_sandbox = fake.backend_config } } }
      end,
    }
    old_cwd = vim.fn.getcwd()
    vim.cmd("cd " .. vim.fn.fnameescape(project))
    vim.cmd("edit " .. vim.fn.fnameescape(project .. "/chats/c.chat"))
    bufnr = vim.api.nvim_get_current_buf()
  end)

  after_each(function()
    -- this test's buffer only: another spec's, whose file is gone, would
    -- stop a wipe of the current one at E211
    if bufnr and vim.api.nvim_buf_is_valid(bufnr) then
      pcall(vim.api.nvim_buf_delete, bufnr, { force = true })
    end
    vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
    package.loaded["flemma.sandbox"], package.loaded["flemma.config"] = saved_sandbox, saved_config
    h.rmdir(dir)
  end)

  it("refuses a read of a hidden path, naming the tool, the path and the rule", function()
    for _, tool in ipairs({ "read", "ls", "find", "grep" }) do
      local why = approval.refusal(tool, { path = project .. "/secret/key" }, bufnr)
      assert.matches("^" .. tool .. " of " .. vim.pesc(project) .. "/secret/key blocked: hidden %(", why)
    end
    assert.is_nil(approval.refusal("read", { path = project .. "/chats/c.chat" }, bufnr))
  end)

  it("refuses a write of a protected path or one outside the writable roots", function()
    assert.matches(
      "^write of " .. vim.pesc(project) .. "/protected%.txt blocked: protected %(",
      approval.refusal("write", { path = project .. "/protected.txt" }, bufnr)
    )
    assert.are.equal(
      "edit of " .. dir .. "/outside/f blocked: not in rw_paths",
      approval.refusal("edit", { path = dir .. "/outside/f" }, bufnr)
    )
    assert.is_nil(approval.refusal("write", { path = project .. "/ok.txt" }, bufnr))
  end)

  it("places read's relative path in the chat file's folder, ls's in the working directory", function()
    h.write(project .. "/chats/secret", "")
    -- ../secret/key from the chat's folder is the hidden file
    assert.is_truthy(approval.refusal("read", { path = "../secret/key" }, bufnr))
    -- secret/key from the working directory (the project) is the hidden file
    assert.is_truthy(approval.refusal("ls", { path = "secret/key" }, bufnr))
    assert.is_nil(approval.refusal("ls", { path = "chats" }, bufnr))
  end)

  it("places ls's relative path where Flemma's tools.ls.cwd says", function()
    fake.tools = { ls = { cwd = "urn:flemma:buffer:path" } }
    assert.is_nil(approval.refusal("ls", { path = "secret" }, bufnr), "chats/secret does not exist: not hidden")
    assert.is_truthy(approval.refusal("ls", { path = "../secret" }, bufnr))
    fake.tools = { ls = { cwd = project .. "/secret" } }
    assert.is_truthy(approval.refusal("ls", { path = "key" }, bufnr))
  end)

  it("lets Flemma's truncated output in /tmp be read", function()
    fake.backend_config = { deny_read = { "/tmp" } }
    assert.is_nil(approval.refusal("read", { path = "/tmp/flemma_output_123.txt" }, bufnr))
    assert.is_truthy(approval.refusal("read", { path = "/tmp/other.txt" }, bufnr))
    assert.is_truthy(approval.refusal("read", { path = "/tmp/sub/flemma_output.txt" }, bufnr))
  end)

  it("passes on other tools, a bad path, and where our backend is not Flemma's", function()
    assert.is_nil(approval.refusal("bash", { command = "cat " .. project .. "/secret/key" }, bufnr))
    assert.is_nil(approval.refusal("read", { path = 3 }, bufnr))
    fake.config = { enabled = true, backend = "bwrap" }
    assert.is_nil(approval.refusal("read", { path = project .. "/secret/key" }, bufnr))
    fake.config = { enabled = false, backend = "flemma_sandbox" }
    assert.is_nil(approval.refusal("read", { path = project .. "/secret/key" }, bufnr))
  end)

  it("says a git call runs on the host for repository writes, not for reads or bad args", function()
    assert.is_true(approval.git_on_host({ args = { "commit", "-m", "x" } }, bufnr))
    assert.is_false(approval.git_on_host({ args = { "status" } }, bufnr))
    assert.is_false(approval.git_on_host({ args = "status" }, bufnr))
    assert.is_false(approval.git_on_host(nil, bufnr))
  end)

  it("asks Flemma's approval for a git call on the host and hands it over once", function()
    assert.is_false(approval.take_flemma_approval(bufnr, "toolu_x"))
    local context = { bufnr = bufnr, tool_id = "toolu_x" }
    assert.are.equal("require_approval", approval.resolve("git", { args = { "commit", "-m", "x" } }, context))
    assert.is_true(approval.take_flemma_approval(bufnr, "toolu_x"))
    assert.is_false(approval.take_flemma_approval(bufnr, "toolu_x"))
    assert.is_nil(approval.resolve("git", { args = { "status" } }, { bufnr = bufnr, tool_id = "toolu_y" }))
    assert.is_false(approval.take_flemma_approval(bufnr, "toolu_y"))
  end)

  it("denies in the chain what refusal refuses, and passes the rest on", function()
    local notes, restore = require("support.nvim").capture_notify()
    assert.are.equal("deny", approval.resolve("read", { path = project .. "/secret/key" }, { bufnr = bufnr }))
    assert.is_nil(approval.resolve("read", { path = project .. "/chats/c.chat" }, { bufnr = bufnr }))
    vim.wait(50)
    restore()
    assert.matches("^flemma%-sandbox: read of .*secret/key blocked: hidden", notes[1].msg)
  end)

  it("denies every call while tool calls are off", function()
    vim.env.FLEMMA_SANDBOX_TOOLS = "off"
    local got = approval.resolve("read", { path = project .. "/chats/c.chat" }, { bufnr = bufnr })
    vim.env.FLEMMA_SANDBOX_TOOLS = nil
    assert.are.equal("deny", got)
  end)
end)
