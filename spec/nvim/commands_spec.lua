local h = require("support.helpers")
local n = require("support.nvim")
local autocmds = require("flemma.sandbox.autocmds")
local commands = require("flemma.sandbox.commands")
local sandbox = require("flemma.sandbox")
local status = require("flemma.sandbox.status")

describe(":Flemma sandbox:*", function()
  local dir, notes, restore
  before_each(function()
    dir = h.tmpdir()
    sandbox.reset_enabled()
    sandbox.setup({ policy = { rw_paths = { "$CWD", "$NOT_SET_ANYWHERE/x", dir .. "/missing" }, network = false } })
    notes, restore = n.capture_notify()
  end)
  after_each(function()
    restore()
    vim.cmd("silent! %bwipeout!")
    sandbox.clear()
    sandbox.setup()
    sandbox.reset_enabled()
    autocmds.reset()
    h.rmdir(dir)
  end)

  it("completes the subcommands", function()
    assert.are.same(
      { "sandbox:enable", "sandbox:disable", "sandbox:status" },
      vim.fn.getcompletion("Flemma sandbox:", "cmdline")
    )
    assert.are.same({ "sandbox:disable" }, vim.fn.getcompletion("Flemma sandbox:d", "cmdline"))
  end)

  it("disable and enable set the session override for all buffers", function()
    vim.cmd("Flemma sandbox:disable")
    assert.is_false(sandbox.get_override())
    assert.is_false(sandbox.is_enabled(vim.api.nvim_get_current_buf()))
    vim.cmd("Flemma sandbox:enable")
    assert.is_true(sandbox.get_override())
    assert.are.equal(vim.log.levels.INFO, notes[#notes].level)
  end)

  it("enable refuses, with the reason, when no backend works", function()
    sandbox.setup({ backend = "nope" })
    vim.cmd("Flemma sandbox:enable")
    assert.is_nil(sandbox.get_override())
    assert.are.equal(vim.log.levels.ERROR, notes[1].level)
    assert.matches("Unknown sandbox backend: nope", notes[1].msg, 1, true)
  end)

  it("status shows state, backend, paths and why entries were skipped", function()
    local buf = n.open_chat(dir .. "/s.chat", { "```lua", "flemma.opt.sandbox = { enabled = true }", "```" })
    local text = table.concat(status.lines(buf), "\n")
    assert.matches("enabled:    yes %(from frontmatter%)", text)
    assert.matches("backend:    bwrap %(auto%), available, bubblewrap %d+%.%d+", text)
    assert.matches("network:    off", text)
    assert.truthy(text:find("    " .. vim.fn.getcwd(), 1, true))
    assert.truthy(text:find("$NOT_SET_ANYWHERE/x: variable NOT_SET_ANYWHERE is not set", 1, true))
    assert.truthy(text:find(dir .. "/missing: " .. dir .. "/missing does not exist", 1, true))
    sandbox.set_enabled(false)
    assert.matches("enabled:    no %(from runtime override%)", table.concat(status.lines(buf), "\n"))
    sandbox.setup({ policy = { network = "ask" } })
    assert.matches("network:    ask %(off unless", table.concat(status.lines(buf), "\n"))
  end)

  it("status says when commands would run unsandboxed", function()
    sandbox.clear()
    sandbox.register("bwrap", {
      available = function()
        return false, "pretend it is missing"
      end,
      wrap = function() end,
    })
    local text = table.concat(status.lines(vim.api.nvim_get_current_buf()), "\n")
    assert.matches("unavailable: No sandbox backend available %(bwrap: pretend it is missing%)", text)
    assert.matches("commands run UNSANDBOXED", text)
    vim.cmd("Flemma sandbox:status") -- headless: printed, must not raise
  end)

  it("warns once per session when backend = required finds nothing", function()
    sandbox.clear()
    sandbox.register("bwrap", {
      available = function()
        return false, "pretend it is missing"
      end,
      wrap = function() end,
    })
    sandbox.setup({ backend = "required" })
    assert.matches("commands are refused", table.concat(status.lines(vim.api.nvim_get_current_buf()), "\n"))
    n.open_chat(dir .. "/one.chat", { "@You: hi" })
    n.open_chat(dir .. "/two.chat", { "@You: hi" })
    local warnings = vim.tbl_filter(function(note)
      return note.msg:find('backend = "required"', 1, true) ~= nil
    end, notes)
    assert.are.equal(1, #warnings)
    assert.are.equal(vim.log.levels.WARN, warnings[1].level)
  end)

  it("rejects an unknown subcommand", function()
    vim.cmd("Flemma sandbox:explode")
    assert.matches("unknown subcommand 'sandbox:explode'", notes[1].msg, 1, true)
  end)

  it("uses :FlemmaSandbox when another plugin owns :Flemma", function()
    vim.api.nvim_del_user_command("Flemma")
    vim.api.nvim_create_user_command("Flemma", function() end, { nargs = "*" })
    assert.are.equal("FlemmaSandbox", commands.define())
    vim.cmd("FlemmaSandbox disable")
    assert.is_false(sandbox.get_override())
    assert.are.same({ "status" }, vim.fn.getcompletion("FlemmaSandbox st", "cmdline"))
    vim.api.nvim_del_user_command("Flemma")
    vim.api.nvim_del_user_command("FlemmaSandbox")
    assert.are.equal("Flemma", commands.define())
  end)
end)

describe("the approval question", function()
  it("opens a window, takes a key, and closes", function()
    local approval = require("flemma.sandbox.approval")
    for key, expected in pairs({ y = "once", a = "always", n = "deny" }) do
      local answer
      local before = #vim.api.nvim_list_wins()
      approval.prompt({ title = "Allow?", lines = { "$ ls" }, can_remember = true }, function(a)
        answer = a
      end)
      assert.are.equal(before + 1, #vim.api.nvim_list_wins())
      local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
      assert.truthy(text:find("$ ls", 1, true) and text:find("[a] always", 1, true))
      vim.api.nvim_feedkeys(key, "x", false)
      assert.truthy(vim.wait(1000, function()
        return answer ~= nil
      end))
      assert.are.equal(expected, answer)
      assert.are.equal(before, #vim.api.nvim_list_wins())
    end
  end)

  it("counts a closed window as no, and offers no 'always' unless asked to", function()
    local approval = require("flemma.sandbox.approval")
    local answer
    approval.prompt({ title = "Allow?", lines = { "$ ls | sh" }, can_remember = false }, function(a)
      answer = a
    end)
    assert.is_nil(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"):find("always", 1, true))
    vim.api.nvim_feedkeys("a", "x", false) -- not mapped here: nothing happens
    assert.is_nil(answer)
    vim.cmd("close")
    assert.truthy(vim.wait(1000, function()
      return answer ~= nil
    end))
    assert.are.equal("deny", answer)
  end)
end)

describe(":checkhealth flemma_sandbox", function()
  it("reports the core, a real test sandbox, and the Neovim features", function()
    vim.cmd("checkhealth flemma_sandbox")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("bwipeout!")
    assert.matches("OK:? flemma%.sandbox%.core %d+%.%d+%.%d+ loaded", text)
    assert.matches("OK:? backend bwrap", text)
    assert.matches("OK:? a test sandbox started and exited cleanly", text)
    assert.matches("health API: ", text)
  end)

  it("gives advice for the usual reasons bwrap cannot start", function()
    local advice = require("flemma.sandbox.health").advice
    assert.matches("user namespaces", table.concat(advice("bwrap: No permission to create new namespace"), " "))
    assert.matches(
      "loopback",
      table.concat(advice("bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted"), " ")
    )
    assert.are.same({}, advice("something else"))
  end)
end)
