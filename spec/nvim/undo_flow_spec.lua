--- Undo takes back exactly one call's change (call_undo.lua): what the
--- user did by hand between the call and the undo (a new file, an edit of
--- a file the call did not touch, the chat saved with a new message,
--- another chat's file) is left as it is; a path both the call and the
--- user changed is kept and listed; redo puts back what undo took; a path
--- no call may write is never written, and neither is a file with unsaved
--- changes in Neovim. Controls show each of those paths would be written
--- without its rule.
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")

local undo = n.undo_call

local function paths_of(list)
  local out = {}
  for _, e in ipairs(list) do
    out[#out + 1] = e.path
  end
  table.sort(out)
  return out
end

local function bash(bufnr, command)
  local r = n.run_tool("bash", { command = command }, { bufnr = bufnr, approved = true })
  assert.are.equal(0, r.exit_code, vim.inspect(r))
  return r
end

describe("undo of one call", function()
  local p, proj

  before_each(function()
    p = project.enter(
      "mkdir -p src && git init -q . && printf 'main\\n' > src/main.py && printf 'util\\n' > src/util.py"
        .. " && printf 'readme\\n' > README.md && printf 'vim.g.a = 1\\n' > .nvim.lua"
        .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
    )
    proj = p.proj
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
      approval = { bash = "allow", write = "allow", edit = "allow" },
    })
  end)

  after_each(function()
    project.leave(p)
  end)

  it("brings back only what the call removed: the user's work since is left as the user left it", function()
    local chat = proj .. "/u.chat"
    local bufnr = n.open_chat(chat, { "@You:", "clean up" })
    vim.cmd("silent write")
    bash(bufnr, "rm -rf src; echo removed")
    assert.is_nil(h.read(proj .. "/src/main.py"), "control: the call removed src")
    -- the user, by hand: a new file, an edit of a file the call did not
    -- touch, the chat saved with a new message, another chat's file
    h.write(proj .. "/TODO.md", "mine\n")
    h.write(proj .. "/README.md", "readme, edited by the user\n")
    vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { "", "@You:", "thanks" })
    vim.cmd("silent write")
    h.write(proj .. "/other.chat", "@You:\nanother chat\n")
    local chat_text = h.read(chat)
    local report, err = undo(bufnr)
    assert.is_nil(err)
    assert.are.same({}, report.errors)
    assert.are.same({ "src/main.py", "src/util.py" }, paths_of(report.written))
    assert.are.equal("main\n", h.read(proj .. "/src/main.py"))
    assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
    assert.are.equal("mine\n", h.read(proj .. "/TODO.md"))
    assert.are.equal("readme, edited by the user\n", h.read(proj .. "/README.md"))
    assert.are.equal(chat_text, h.read(chat))
    assert.are.equal("@You:\nanother chat\n", h.read(proj .. "/other.chat"))
    assert.is_false(vim.bo[bufnr].modified)
  end)

  it("keeps a path the user changed since and lists it; redo puts back what undo took", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "printf 'call\\n' > src/main.py && printf 'call\\n' > src/util.py && printf 'new\\n' > made.txt")
    h.write(proj .. "/src/main.py", "the user's\n")
    local report = undo(bufnr)
    assert.are.same({ "made.txt", "src/util.py" }, paths_of(report.written))
    assert.are.same({ "src/main.py" }, paths_of(report.conflicts))
    assert.are.equal("changed since", report.conflicts[1].why)
    assert.are.equal("the user's\n", h.read(proj .. "/src/main.py"), "never overwritten")
    assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
    assert.is_nil(h.read(proj .. "/made.txt"))
    -- the user edits a file undo wrote: redo leaves it, and puts back the rest
    h.write(proj .. "/src/util.py", "the user again\n")
    report = undo(bufnr, { redo = true })
    assert.are.same({ "made.txt" }, paths_of(report.written))
    assert.are.same({ "src/util.py" }, paths_of(report.conflicts))
    assert.are.equal("new\n", h.read(proj .. "/made.txt"))
    assert.are.equal("the user again\n", h.read(proj .. "/src/util.py"))
    local _, err = undo(bufnr, { redo = true })
    assert.matches("nothing to redo", err)
    -- control: with the user's edits gone, the same undo writes them all
    h.write(proj .. "/src/main.py", "call\n")
    h.write(proj .. "/src/util.py", "call\n")
    report = undo(bufnr)
    assert.are.same({ "made.txt", "src/main.py", "src/util.py" }, paths_of(report.written))
    assert.are.equal("main\n", h.read(proj .. "/src/main.py"))
  end)

  it("keeps what a call that ran at the same time changed (control: it is in the call's recorded change)", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    n.run_together(bufnr, { "sleep 1.5; rm src/util.py", "sleep 0.3; printf 'two\\n' > two.txt" })
    local spec = require("flemma_sandbox.api.checkpoints").scope(bufnr).specs[1]
    local shadow = require("flemma_sandbox.run.shadow")
    local first = shadow.list(spec)[2]
    assert.are.equal(1, first.n)
    local recorded = shadow.call_paths(spec, 1)
    table.sort(recorded)
    assert.are.same({ "src/util.py", "two.txt" }, recorded, "control: call 2's file is in call 1's change")
    local report = undo(bufnr, { n = 1 })
    assert.are.same({ "src/util.py" }, paths_of(report.written))
    assert.are.same({ "two.txt" }, paths_of(report.conflicts))
    assert.matches("call 2, which ran at the same time", report.conflicts[1].why)
    assert.are.equal("two\n", h.read(proj .. "/two.txt"))
    assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
  end)

  it("waits while a call of the chat runs under Flemma (control: with none running it undoes)", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "rm src/util.py")
    local hooks = require("flemma_sandbox.base.hooks")
    local saved, running = hooks.bridge, 1
    hooks.bridge = {
      calls_running = function(b)
        return b == bufnr and running or 0
      end,
    }
    local notes, restore = n.capture_notify()
    local ok, err = pcall(function()
      vim.cmd("FlemmaSandbox! undo")
      n.pause(500)
      n.flush_notices()
      assert.is_nil(h.read(proj .. "/src/util.py"), "nothing written while a call runs")
      assert.matches("tool calls of this chat are running", notes[#notes].msg)
      running = 0
      vim.cmd("FlemmaSandbox! undo")
      assert(vim.wait(20000, function()
        return h.read(proj .. "/src/util.py") ~= nil
      end, 10))
    end)
    hooks.bridge = saved
    restore()
    assert(ok, err)
  end)

  it("takes back call N of the log, leaving the calls after it", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "printf 'one\\n' > one.txt")
    bash(bufnr, "printf 'two\\n' > two.txt")
    local report = undo(bufnr, { n = 1 })
    assert.are.same({ "one.txt" }, paths_of(report.written))
    assert.is_nil(h.read(proj .. "/one.txt"))
    assert.are.equal("two\n", h.read(proj .. "/two.txt"))
    local _, err = undo(bufnr, { n = 7 })
    assert.matches("call 7 has no checkpoint", err)
    _, err = undo(bufnr, { n = 1 })
    assert.matches("call 1 is undone already", err)
    report = undo(bufnr)
    assert.are.same({ "two.txt" }, paths_of(report.written), "the newest call not undone")
  end)

  it("never writes a protected name or over unsaved changes (controls: a plain name, a saved buffer)", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    -- the user edits .nvim.lua and makes plain.txt while the call runs: both
    -- are in the call's change, and undo would take them back
    local result
    require("flemma_sandbox.tools").run(
      "bash",
      { command = "sleep 1; printf 'call\\n' > src/main.py; printf 'call\\n' > src/util.py" },
      { bufnr = bufnr, approved = true },
      function(r)
        result = r
      end
    )
    n.pause(400)
    h.write(proj .. "/.nvim.lua", "vim.g.mine = 1\n")
    h.write(proj .. "/plain.txt", "plain\n")
    assert(vim.wait(20000, function()
      return result ~= nil
    end, 10))
    -- unsaved changes of src/main.py in a buffer
    vim.cmd("edit " .. vim.fn.fnameescape(proj .. "/src/main.py"))
    local edited = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(edited, 0, -1, false, { "unsaved" })
    vim.cmd("buffer " .. bufnr)
    local report = undo(bufnr)
    assert.are.same({ ".nvim.lua" }, paths_of(report.skipped), vim.inspect(report))
    assert.matches("protected", report.skipped[1].why)
    assert.are.equal("vim.g.mine = 1\n", h.read(proj .. "/.nvim.lua"))
    assert.are.same({ "src/main.py" }, paths_of(report.conflicts))
    assert.are.equal("unsaved changes in Neovim", report.conflicts[1].why)
    assert.are.equal("call\n", h.read(proj .. "/src/main.py"))
    -- controls: the plain name made the same way is removed, the saved
    -- file written
    assert.are.same({ "plain.txt", "src/util.py" }, paths_of(report.written))
    assert.is_nil(h.read(proj .. "/plain.txt"))
    assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
    vim.cmd("bwipeout! " .. edited)
  end)

  it("never writes back what the quarantine took (control: the call's plain file is removed)", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local r = n.run_tool("bash", {
      command = "printf '{}' > .mcp.json; printf 'vim.g.x = 1' > .nvim.lua; mkdir -p .vscode;"
        .. " printf '{}' > .vscode/tasks.json; printf 'plain' > plain.txt; true",
    }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, vim.inspect(r))
    assert.is_nil(h.read(proj .. "/.mcp.json"), "moved to the quarantine")
    assert.is_nil(h.read(proj .. "/.vscode/tasks.json"), "moved to the quarantine")
    assert.are.equal("vim.g.a = 1\n", h.read(proj .. "/.nvim.lua"), "protected: the call could not write it")
    local report, err = undo(bufnr)
    assert.is_nil(err)
    assert.are.same({ "plain.txt" }, paths_of(report.written), vim.inspect(report))
    assert.is_nil(h.read(proj .. "/plain.txt"))
    assert.is_nil(h.read(proj .. "/.mcp.json"))
    assert.is_nil(h.read(proj .. "/.vscode/tasks.json"))
    assert.are.equal("vim.g.a = 1\n", h.read(proj .. "/.nvim.lua"))
  end)

  it("asks first, showing the files; a denied undo changes nothing; undo! does not ask", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "rm src/util.py && printf 'x\\n' > x.txt && printf 'by the call\\n' > README.md")
    -- README.md open in a buffer with no unsaved changes: undo reloads it
    vim.cmd("edit " .. vim.fn.fnameescape(proj .. "/README.md"))
    local readme = vim.api.nvim_get_current_buf()
    vim.cmd("buffer " .. bufnr)
    local questions = require("flemma_sandbox.questions")
    local prompt, asked = questions.prompt, {}
    local answer = "deny"
    questions.prompt = function(q, respond)
      asked[#asked + 1] = q
      vim.schedule(function()
        respond(answer)
      end)
      return function() end
    end
    local ok, err = pcall(function()
      vim.cmd("FlemmaSandbox undo")
      assert(vim.wait(20000, function()
        return #asked == 1
      end, 10))
      assert.matches("Undo call 1 %(bash: ", asked[1].title)
      local shown = table.concat(asked[1].lines, "\n")
      assert.matches("A src/util.py", shown)
      assert.matches("D x.txt", shown)
      assert.matches("M README.md", shown)
      n.pause(300)
      assert.is_nil(h.read(proj .. "/src/util.py"), "denied: nothing written")
      answer = "once"
      vim.cmd("FlemmaSandbox undo")
      local spec = require("flemma_sandbox.api.checkpoints").scope(bufnr).specs[1]
      assert(vim.wait(20000, function()
        return #require("flemma_sandbox.run.shadow").undos(spec) == 1
      end, 10))
      assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
      assert.is_nil(h.read(proj .. "/x.txt"))
      assert(
        vim.wait(5000, function()
          return vim.api.nvim_buf_get_lines(readme, 0, -1, false)[1] == "readme"
        end, 10),
        "the buffer shows the file undo wrote"
      )
      vim.cmd("FlemmaSandbox! redo")
      assert(vim.wait(20000, function()
        return h.read(proj .. "/x.txt") ~= nil
      end, 10))
      assert.are.equal(2, #asked, "redo! asked nothing")
    end)
    questions.prompt = prompt
    assert(ok, err)
  end)
end)
