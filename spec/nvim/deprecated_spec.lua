-- Neovim 0.11+ records every deprecated API a session calls and reports it
-- in :checkhealth vim.deprecated. After the main paths ran (wrap_command, a
-- job, :FlemmaSandbox status, :checkhealth flemma_sandbox) that report must
-- name nothing.
local n = require("support.nvim")
local sandbox = require("flemma_sandbox")

describe("deprecated Neovim API", function()
  if vim.fn.has("nvim-0.11") ~= 1 then
    pending("skipped: :checkhealth vim.deprecated reports from Neovim 0.11")
    return
  end

  it("none is used on the main paths", function()
    sandbox.setup()
    local argv = assert(sandbox.wrap_command({ "true" }, 0))
    vim.fn.system(argv)
    local r = n.run_job({ "sh", "-c", "echo hi" }, { timeout_ms = 10000 })
    assert.are.equal("hi\n", r.stdout)
    vim.cmd("silent FlemmaSandbox status")
    vim.cmd("checkhealth flemma_sandbox")
    vim.cmd("bwipeout!")
    vim.cmd("checkhealth vim.deprecated")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("bwipeout!")
    assert.matches("No deprecated functions detected", text)
    -- control: a deprecated call is reported
    vim.deprecate("flemma_sandbox_spec_old()", "flemma_sandbox_spec_new()", "0.99")
    vim.cmd("checkhealth vim.deprecated")
    text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("bwipeout!")
    assert.matches("flemma_sandbox_spec_old", text)
  end)
end)
