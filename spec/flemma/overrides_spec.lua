-- Flemma's bash, read, write, edit and ls in our place in its tool
-- registry (flemma/tool_overrides.lua), under the real Flemma
-- (FLEMMA_DIR), in direct mode: they take the checkpoint in the background
-- and then run Flemma's own, so the editor does not wait for it; and they
-- refuse what the approval resolver would deny, also for a call run by
-- hand (:Flemma tool:execute asks no resolver). Controls: with Flemma's own
-- definition back in the registry the checkpoint is taken before
-- :Flemma tool:execute returns, and the hidden file is read.
local h = require("support.helpers")
local flemma_chat = require("support.flemma_chat")

local uv = vim.uv or vim.loop

describe("Flemma's tools in our place", function()
  local p
  flemma_chat.each_project(
    "git init -q . && printf 'one\\n' > a.txt && printf 'untracked\\n' > notes.txt",
    function(world)
      p = world
    end,
    { flemma = true }
  )

  --- Opens a chat holding one tool use and runs :Flemma tool:execute on
  --- it (before_execute() first); returns the buffer.
  local function start(chat, tool, input, before_execute)
    local lines = flemma_chat.lines(tool, "toolu_" .. tostring(uv.hrtime()), input)
    h.write(chat, table.concat(lines, "\n") .. "\n")
    vim.cmd("edit! " .. vim.fn.fnameescape(chat))
    local bufnr = vim.api.nvim_get_current_buf()
    vim.api.nvim_win_set_cursor(0, { #lines - 3, 0 })
    if before_execute then
      before_execute()
    end
    vim.cmd("Flemma tool:execute")
    return bufnr
  end

  --- Flemma's own definition of a tool back in its registry.
  local function flemma_own(name)
    local own = require("flemma.tools.definitions." .. name).definitions[1]
    require("flemma.tools.registry").unregister(name)
    require("flemma.tools").register(name, own)
  end

  --- Starts a bash call in a chat; returns the buffer and how many
  --- checkpoints there were when :Flemma tool:execute returned.
  local function start_call(chat, before_execute)
    local command = "rm -f " .. p.proj .. "/notes.txt && echo removed"
    local bufnr = start(chat, "bash", { label = "t", command = command, timeout = 20 }, before_execute)
    return bufnr, #require("flemma_sandbox.api.checkpoints").list(bufnr)[1].entries
  end

  local function finished(bufnr)
    assert(vim.wait(30000, function()
      local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
      return text:find("removed", 1, true) ~= nil and not require("flemma.tools.executor").get_pending(bufnr)[1]
    end, 20))
    return #require("flemma_sandbox.api.checkpoints").list(bufnr)[1].entries
  end

  it("takes a direct chat's checkpoint in the background; the call runs after it", function()
    local bufnr, at_return = start_call(p.dir .. "/chats/c.chat")
    assert.are.equal(0, at_return, "the checkpoint was taken while the editor waited")
    assert.are.equal(1, finished(bufnr))
    assert.are.equal(0, vim.fn.filereadable(p.proj .. "/notes.txt"), "the call ran")
    -- control: Flemma's own bash back in the registry; the bridge's
    -- fallback takes the checkpoint on the editor's thread
    h.write(p.proj .. "/notes.txt", "again\n")
    bufnr, at_return = start_call(p.dir .. "/chats/c.chat", function()
      flemma_own("bash")
    end)
    assert.are.equal(2, at_return)
    assert.are.equal(2, finished(bufnr))
  end)

  it("refuses a read of a hidden file and a write of a protected one run by hand, with the reason", function()
    local secret = "SECRET-" .. tostring(uv.hrtime())
    vim.fn.mkdir(p.dir .. "/home/.ssh", "p")
    h.write(p.dir .. "/home/.ssh/id_test", secret .. "\n")
    local chat = p.dir .. "/chats/h.chat"
    local _, bufnr = flemma_chat.execute(chat, "read", { label = "r", path = p.dir .. "/home/.ssh/id_test" })
    local text = flemma_chat.error_result(bufnr)
    assert.matches("flemma%-sandbox: read of [^\n]*id_test blocked: hidden", text)
    assert.is_nil(text:find(secret, 1, true))
    _, bufnr = flemma_chat.execute(chat, "write", { label = "w", path = p.proj .. "/.envrc", content = "x" })
    assert.matches("blocked: protected", flemma_chat.error_result(bufnr))
    assert.are.equal(0, vim.fn.filereadable(p.proj .. "/.envrc"))
    local function status()
      return table.concat(require("flemma_sandbox.nvim.status").lines(bufnr), "\n")
    end
    assert.matches("by hand: ", status())
    -- control: Flemma's own read, run by hand, puts the file in the chat
    local said
    bufnr = start(chat, "read", { label = "r", path = p.dir .. "/home/.ssh/id_test" }, function()
      flemma_own("read")
      said = status()
    end)
    assert(vim.wait(10000, function()
      return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n"):find(secret, 1, true) ~= nil
    end, 20))
    assert.matches("gap: ", said)
  end)
end)
