local h = require("support.helpers")
local n = require("support.nvim")
local autocmds = require("flemma_sandbox.nvim.autocmds")
local commands = require("flemma_sandbox.nvim.commands")
local sandbox = require("flemma_sandbox")
local status = require("flemma_sandbox.nvim.status")

describe(":FlemmaSandbox", function()
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
      { "tool:execute", "tool:execute-all", "tool:cancel" },
      vim.fn.getcompletion("FlemmaSandbox tool:", "cmdline")
    )
    assert.are.same(
      { "delete", "diff", "discard", "disable", "deny" },
      vim.fn.getcompletion("FlemmaSandbox d", "cmdline")
    )
  end)

  it("disable and enable set the session override for all buffers", function()
    vim.cmd("FlemmaSandbox disable")
    n.flush_notices()
    assert.is_false(sandbox.get_override())
    assert.is_false(sandbox.is_enabled(vim.api.nvim_get_current_buf()))
    vim.cmd("FlemmaSandbox enable")
    assert.is_true(sandbox.get_override())
    n.flush_notices()
    assert.are.equal(vim.log.levels.INFO, notes[#notes].level)
  end)

  it("enable refuses, with the reason, when no backend works", function()
    sandbox.setup({ backend = "nope" })
    vim.cmd("FlemmaSandbox enable")
    assert.is_nil(sandbox.get_override())
    n.flush_notices()
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
    -- a project (not a shared temp folder) gets its protected paths, each with the rule behind it
    local proj = vim.fn.resolve(vim.fn.expand("~")) .. "/.cache/flemma-status-" .. vim.fn.getpid()
    vim.fn.mkdir(proj, "p")
    sandbox.setup({ policy = { rw_paths = { proj } } })
    local with_proj = table.concat(status.lines(buf), "\n")
    -- an .envrc that is there is protected; a missing one is only counted as watched
    assert.truthy(with_proj:find("watched: %d+ protected names that do not exist now"), with_proj)
    h.write(proj .. "/.envrc", "x")
    with_proj = table.concat(status.lines(buf), "\n")
    vim.fn.delete(proj, "rf")
    assert.truthy(with_proj:find("    " .. proj .. "/.envrc  (deny_write .envrc)", 1, true), with_proj)
    assert.matches("seccomp:    on %([%w_]+%)", text)
    assert.matches("abstract sockets: host ones out of reach", text)
    assert.matches("limits:     processes=4096 memory_mb=8192 cpu_seconds=600 file_size_mb=8192 open_files=8192", text)
    sandbox.set_enabled(false)
    assert.matches("enabled:    no %(from runtime override%)", table.concat(status.lines(buf), "\n"))
    sandbox.setup({ policy = { network = "ask" } })
    assert.matches(
      "network:    ask %(through the proxy to api%.anthropic%.com, [^;]*; any other name is asked about%)",
      table.concat(status.lines(buf), "\n")
    )
  end)

  it("status says when commands would run unsandboxed", function()
    h.only_unavailable_backend("bwrap", "pretend it is missing")
    local text = table.concat(status.lines(vim.api.nvim_get_current_buf()), "\n")
    assert.matches("unavailable: No sandbox backend available %(bwrap: pretend it is missing%)", text)
    assert.matches("commands run UNSANDBOXED", text)
    vim.cmd("FlemmaSandbox status") -- headless: printed, must not raise
  end)

  it("warns once per session when backend = required finds nothing", function()
    h.only_unavailable_backend("bwrap", "pretend it is missing")
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

  it("shows the status with no subcommand (Neovim 0.7 passes one empty word)", function()
    vim.cmd("messages clear")
    vim.cmd("FlemmaSandbox")
    assert.are.same({}, notes)
    -- headless, the status goes to the message history
    assert.matches("backend:    bwrap", vim.fn.execute("messages"))
  end)

  it("rejects an unknown subcommand", function()
    vim.cmd("FlemmaSandbox explode")
    n.flush_notices()
    assert.matches("unknown subcommand 'explode'", notes[#notes].msg, 1, true)
  end)

  it("never defines :Flemma, which is Flemma's command", function()
    assert.is_nil(vim.api.nvim_get_commands({}).Flemma)
    assert.are.equal("FlemmaSandbox", commands.define())
    assert.is_nil(vim.api.nvim_get_commands({}).Flemma)
    vim.cmd("FlemmaSandbox disable")
    assert.is_false(sandbox.get_override())
    assert.are.same({ "status" }, vim.fn.getcompletion("FlemmaSandbox st", "cmdline"))
  end)
end)

describe(":checkhealth flemma_sandbox", function()
  it("reports the core, a real test sandbox, and the Neovim features", function()
    vim.cmd("checkhealth flemma_sandbox")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    vim.cmd("bwipeout!")
    assert.matches("OK:? flemma_sandbox%.core %d+%.%d+%.%d+ loaded", text)
    assert.matches("OK:? backend bwrap", text)
    assert.matches("OK:? a test sandbox started and exited cleanly", text)
    assert.matches("health API: ", text)
    assert.matches("OK:? Neovim 0.7 or newer", text)
    assert.matches("OK:? a question window opens and closes without taking focus", text)
    assert.matches("OK:? tool inputs decode", text)
  end)

  it("gives advice for the usual reasons bwrap cannot start", function()
    local advice = require("flemma_sandbox.health").advice
    assert.matches("user namespaces", table.concat(advice("bwrap: No permission to create new namespace"), " "))
    assert.matches(
      "loopback",
      table.concat(advice("bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted"), " ")
    )
    assert.are.same({}, advice("something else"))
  end)

  it("names a /proc mount failure as such, not user namespaces; never advises the backend it already has", function()
    local health = require("flemma_sandbox.health")
    --- bwrap's test sandbox inside a user namespace whose /proc has a
    --- covered part (as in a Docker or Podman container): what it says
    local function nested(cover)
      local argv = { "bwrap", "--unshare-user", "--dev-bind", "/", "/" }
      if cover then
        vim.list_extend(argv, { "--tmpfs", "/proc/fs" })
      end
      return h.run(vim.list_extend(argv, {
        "--",
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-all",
        "--die-with-parent",
        "--",
        "true",
      }))
    end
    local r = nested(true)
    assert.are_not.equal(0, r.code)
    assert.matches("Can't mount proc", r.stderr)
    local said = table.concat(health.advice(r.stderr), " ")
    assert.is_nil(said:find("user namespaces may be disabled", 1, true), said)
    assert.truthy(said:find("could not mount a new /proc", 1, true), said)
    -- control: the same nested sandbox with nothing over /proc starts, so user namespaces work
    assert.are.equal(0, nested(false).code)
    -- Flemma's backend "auto" that picked another: why, never 'set sandbox.backend = "auto"'
    local why = "bubblewrap cannot start a sandbox here: " .. r.stderr
    said = table.concat(health.flemma_backend_advice({ mode = "auto", backend = "bwrap" }, why), " ")
    assert.is_nil(said:find('set sandbox.backend = "auto"', 1, true), said)
    assert.truthy(said:find('already "auto"', 1, true), said)
    assert.truthy(said:find("could not mount a new /proc", 1, true), said)
    said = table.concat(health.flemma_backend_advice({ mode = "auto", backend = "bwrap" }, nil), " ")
    assert.truthy(said:find('sandbox.backend = "flemma_sandbox"', 1, true), said)
    -- control: another backend named in the config gets the advice to change it
    said = table.concat(health.flemma_backend_advice({ mode = "bwrap", backend = "bwrap" }, nil), " ")
    assert.truthy(said:find('set sandbox.backend = "auto"', 1, true), said)
  end)
end)

describe(":FlemmaSandbox status", function()
  it("puts what is in effect first, on one screen, and lists no path that does not exist", function()
    local lines = require("flemma_sandbox.nvim.status").lines(0)
    assert.is_true(lines.details_from <= 20, "the part in effect is " .. lines.details_from .. " lines")
    local first = table.concat(lines, "\n", 1, lines.details_from)
    for _, word in ipairs({ "enabled:", "backend:", "network:", "writable:", "seccomp:", "limits:" }) do
      assert.truthy(first:find(word, 1, true), word)
    end
    for _, line in ipairs(lines) do
      local path = line:match("^    (/%S+)")
      if path and not line:find(" -> ", 1, true) then
        assert.truthy((vim.uv or vim.loop).fs_stat((path:gsub("/$", ""))), path .. " is listed but does not exist")
      end
    end
  end)
end)

describe("standalone mappings and filetype", function()
  it("defines the <Plug> mappings and the Lua functions, and sets filetype chat", function()
    for lhs in pairs(commands.PLUGS) do
      assert.are_not.equal("", vim.fn.maparg(lhs, "n"), lhs)
    end
    for _, name in ipairs({ "execute", "execute_all", "cancel", "approve", "approve_always", "deny", "approval" }) do
      assert.are.equal("function", type(sandbox[name]), name)
    end
    local dir = h.tmpdir()
    h.write(dir .. "/x.chat", "@You:\nhi\n")
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/x.chat"))
    assert.are.equal("chat", vim.bo.filetype)
    -- the mapping runs the subcommand: nothing to run here, and it says so
    n.flush_notices() -- what earlier specs said
    local said
    local notify = vim.notify
    vim.notify = function(msg)
      said = msg
    end
    vim.cmd([[execute "normal \<Plug>(FlemmaSandboxExecuteAll)"]])
    n.flush_notices()
    vim.notify = notify
    vim.cmd("bwipeout!")
    h.rmdir(dir)
    assert.matches("no tool use to run in this buffer", said)
  end)
end)
