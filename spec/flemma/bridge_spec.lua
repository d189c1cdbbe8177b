-- flemma-sandbox as the backend of the real Flemma (FLEMMA_DIR), on Neovim
-- 0.11+. The runner sources plugin/flemma_sandbox.lua before these specs call
-- Flemma's setup(): the load order of lazy.nvim with flemma-sandbox among
-- Flemma's dependencies. The other order runs in a child Neovim below.
local h = require("support.helpers")

local uv = vim.uv or vim.loop
local flemma_dir = assert(os.getenv("FLEMMA_DIR"), "FLEMMA_DIR")
local repo = vim.fn.getcwd()

local function chat_lines(tool, id, input)
  return {
    "@You:",
    "go",
    "",
    "@Assistant:",
    "On it.",
    "",
    "**Tool Use:** `" .. tool .. "` (`" .. id .. "`)",
    "```json",
    vim.json.encode(input),
    "```",
  }
end

--- Opens a chat holding one tool use, runs :Flemma tool:execute on it and
--- waits for the result; returns the buffer's text.
local function execute(path, tool, input, frontmatter)
  local lines = chat_lines(tool, "toolu_" .. tostring(uv.hrtime()), input)
  if frontmatter then
    lines = vim.list_extend({ "```lua", frontmatter, "```" }, lines)
  end
  h.write(path, table.concat(lines, "\n") .. "\n")
  vim.cmd("edit! " .. vim.fn.fnameescape(path))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.api.nvim_win_set_cursor(0, { #lines - 3, 0 })
  vim.cmd("Flemma tool:execute")
  local text
  local done = vim.wait(30000, function()
    text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
    local result = text:match("%*%*Tool Result:%*%*[^\n]*\n(.*)$")
    local pending = require("flemma.tools.executor").get_pending(bufnr)[1]
    return result ~= nil and result:find("```", 1, true) ~= nil and not pending
  end, 20)
  assert(done, "no result: " .. tostring(text))
  return text, bufnr
end

describe("flemma-sandbox inside Flemma", function()
  local home, project, old_home, old_cwd
  local secret = "SECRET-" .. tostring(uv.hrtime())

  -- Flemma's LSP would write its log under the test's HOME
  local function setup_flemma(opts)
    require("flemma").setup(vim.tbl_deep_extend("force", { lsp = { enabled = false } }, opts or {}))
  end

  before_each(function()
    old_home, old_cwd = vim.env.HOME, vim.fn.getcwd()
    home = h.tmpdir()
    project = home .. "/project"
    vim.fn.mkdir(home .. "/.ssh", "p")
    -- as in a real home: Flemma's default rw_paths name them, and its own
    -- bwrap backend fails to start when they are missing
    vim.fn.mkdir(home .. "/.cache", "p")
    vim.fn.mkdir(home .. "/.local/share", "p")
    vim.fn.mkdir(project, "p")
    h.write(home .. "/.ssh/id_test", secret .. "\n")
    vim.env.HOME = home
    vim.cmd("cd " .. vim.fn.fnameescape(project))
    require("flemma.sandbox").reset_enabled()
  end)

  after_each(function()
    vim.cmd("silent! %bwipeout!")
    vim.env.HOME = old_home
    vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
    h.rmdir(home)
  end)

  it("is the backend Flemma picks, and :Flemma sandbox:status works", function()
    setup_flemma()
    assert.are.equal("flemma_sandbox", (require("flemma.sandbox").detect_available_backend()))
    vim.cmd("Flemma sandbox:status")
    local text = table.concat(require("flemma_sandbox.nvim.status").lines(0), "\n")
    assert.matches("backend:    flemma_sandbox", text)
    assert.matches("limits:     processes=4096", text)
  end)

  it("runs a bash call hardened: key hidden, limits from Flemma's config, writes outside refused", function()
    setup_flemma({ sandbox = { backends = { flemma_sandbox = { limits = { processes = 300 } } } } })
    local cmd = "cat ~/.ssh/id_test; ulimit -u; ulimit -d; "
      .. "grep Seccomp: /proc/self/status; echo hi > ~/outside; echo end"
    local text = execute(project .. "/a.chat", "bash", { label = "t", command = cmd, timeout = 20 })
    assert.is_nil(text:find(secret, 1, true), text)
    assert.matches("\n300\n", text)
    assert.matches("\n8388608\n", text) -- the other limits keep flemma-sandbox's defaults
    assert.matches("Seccomp:%s+2", text)
    assert.matches("Read%-only file system", text)
    assert.are.equal(0, vim.fn.filereadable(home .. "/outside"))
  end)

  it("control: with Flemma's own bwrap backend the key is readable", function()
    setup_flemma({ sandbox = { backend = "bwrap" } })
    local text = execute(project .. "/b.chat", "bash", { label = "t", command = "cat ~/.ssh/id_test", timeout = 20 })
    assert.truthy(text:find(secret, 1, true), text)
  end)

  it("returns the exit code as Flemma does, and a timeout leaves no process", function()
    setup_flemma()
    local text = execute(project .. "/c.chat", "bash", { label = "t", command = "echo out; exit 3", timeout = 20 })
    assert.matches("Command exited with code 3", text)
    -- sleep takes fractions: the marker makes the command lines unique
    local marker = tostring(uv.hrtime() % 100000000)
    local cmd = "sleep 1000." .. marker .. " & (sleep 1001." .. marker .. " &); sleep 1002." .. marker
    text = execute(project .. "/d.chat", "bash", { label = "t", command = cmd, timeout = 1 })
    assert.matches("timed out after 1 seconds", text)
    assert.truthy(vim.wait(5000, function()
      return vim.fn.system({ "pgrep", "-f", marker }) == ""
    end, 50), "processes left: " .. vim.fn.system({ "pgrep", "-af", marker }))
  end)

  it("honours Flemma's network = false and frontmatter enabled = false", function()
    setup_flemma({ sandbox = { policy = { network = false } } })
    local host_net = uv.fs_readlink("/proc/self/ns/net")
    local input = { label = "t", command = "readlink /proc/self/ns/net", timeout = 20 }
    local text = execute(project .. "/e.chat", "bash", input)
    assert.is_nil(text:find(host_net, 1, true), text)
    text = execute(
      project .. "/f.chat",
      "bash",
      { label = "t", command = "echo hi > ~/outside; cat ~/.ssh/id_test", timeout = 20 },
      "flemma.opt.sandbox.enabled = false"
    )
    assert.truthy(text:find(secret, 1, true), text)
    assert.are.equal(1, vim.fn.filereadable(home .. "/outside"))
  end)

  it("takes flemma-sandbox settings from Flemma's frontmatter", function()
    setup_flemma()
    local text = execute(
      project .. "/g.chat",
      "bash",
      { label = "t", command = "ulimit -u", timeout = 20 },
      "flemma.opt.sandbox.backends.flemma_sandbox = { limits = { processes = 77 } }"
    )
    assert.matches("\n77\n", text)
  end)

  it("passes Flemma's tools.bash.env, but not credential-like names", function()
    setup_flemma({ tools = { bash = { env = { PROJECT_MODE = "dev", DEPLOY_TOKEN = "t0k" } } } })
    local text = execute(project .. "/h.chat", "bash", {
      label = "t",
      command = 'echo "mode=$PROJECT_MODE token=${DEPLOY_TOKEN:-none}"',
      timeout = 20,
    })
    assert.matches("mode=dev token=none", text)
  end)

  it("denies read of a hidden path and write of a protected one, with the reason", function()
    setup_flemma()
    vim.cmd("edit " .. vim.fn.fnameescape(project .. "/i.chat"))
    local bufnr = vim.api.nvim_get_current_buf()
    local approval = require("flemma.tools.approval")
    local ctx = { bufnr = bufnr, tool_id = "toolu_x" }
    local notes, original = {}, vim.notify
    vim.notify = function(msg)
      notes[#notes + 1] = msg
    end
    local read = approval.resolve("read", { label = "r", path = home .. "/.ssh/id_test" }, ctx)
    local write = approval.resolve("write", { label = "w", path = ".envrc", content = "x" }, ctx)
    local fine = approval.resolve("read", { label = "r", path = "README.md" }, ctx)
    vim.wait(100)
    vim.notify = original
    assert.are.equal("deny", read)
    assert.are.equal("deny", write)
    assert.are_not.equal("deny", fine)
    local all = table.concat(notes, "\n")
    assert.truthy(all:find("blocked: hidden (deny_read ~/.ssh)", 1, true), all)
    assert.truthy(all:find(".envrc blocked: protected (deny_write .envrc)", 1, true), all)
    -- Flemma's own backend: Flemma's rules, not ours
    setup_flemma({ sandbox = { backend = "bwrap" } })
    assert.are_not.equal("deny", approval.resolve("read", { label = "r", path = home .. "/.ssh/id_test" }, ctx))
  end)

  it("other load order: Flemma set up in init.lua, flemma-sandbox's plugin file after it", function()
    local out = h.tmpdir()
    local init = out .. "/init.lua"
    h.write(
      init,
      table.concat({
        "vim.opt.rtp:prepend(" .. vim.inspect(flemma_dir) .. ")",
        "vim.opt.rtp:prepend(" .. vim.inspect(repo) .. ")",
        "vim.opt.swapfile = false",
        "require('flemma_sandbox').setup({ policy = { limits = { processes = 55 } } })",
        "require('flemma').setup({ lsp = { enabled = false } })",
      }, "\n")
    )
    local script = out .. "/check.lua"
    h.write(
      script,
      table.concat({
        "local fs = require('flemma.sandbox')",
        "local argv = assert(fs.wrap_command({ 'bash', '-c', 'ulimit -u' }, 0))",
        "local f = io.open(" .. vim.inspect(out .. "/result") .. ", 'w')",
        "f:write(tostring(fs.detect_available_backend()) .. ' ' .. vim.fn.system(argv))",
        "f:close()",
        "vim.cmd('qa!')",
      }, "\n")
    )
    local argv = { vim.v.progpath, "--headless", "-u", init, "-i", "NONE", "-c", "luafile " .. script, "-c", "cquit 1" }
    local r = h.run(argv, nil, old_cwd)
    local got = h.read(out .. "/result")
    h.rmdir(out)
    assert.are.equal("flemma_sandbox 55\n", got, r.stderr)
  end)
end)
