-- Direct mode's checkpoints under the real Flemma (FLEMMA_DIR): Flemma's
-- bash, write and edit are put in our place in its tool registry
-- (flemma/tool_overrides.lua), which take the checkpoint in the background
-- and then run Flemma's own; the editor does not wait for it. Control:
-- with Flemma's own definition back in the registry the checkpoint is
-- taken on the editor's thread, before :Flemma tool:execute returns.
local h = require("support.helpers")
local flemma_chat = require("support.flemma_chat")
local project = require("support.project")

local uv = vim.uv or vim.loop

describe("checkpoints under Flemma", function()
  local p, old_home

  before_each(function()
    old_home = vim.env.HOME
    p = project.enter("git init -q . && printf 'one\\n' > a.txt && printf 'untracked\\n' > notes.txt")
    vim.env.HOME = p.dir .. "/home"
    vim.fn.mkdir(p.dir .. "/home/.cache", "p")
    vim.fn.mkdir(p.dir .. "/home/.local/share", "p")
    vim.fn.mkdir(p.dir .. "/chats", "p")
    require("flemma.sandbox").reset_enabled()
    require("flemma").setup({ lsp = { enabled = false } })
    require("flemma.tools").get_all()
  end)

  after_each(function()
    vim.cmd("silent! %bwipeout!")
    vim.env.HOME = old_home
    project.leave(p)
  end)

  --- Starts a bash call in a chat; returns the buffer and how many
  --- checkpoints there were when :Flemma tool:execute returned.
  local function start_call(chat, before_execute)
    local lines = flemma_chat.lines("bash", "toolu_" .. tostring(uv.hrtime()), {
      label = "t",
      command = "rm -f " .. p.proj .. "/notes.txt && echo removed",
      timeout = 20,
    })
    h.write(chat, table.concat(lines, "\n") .. "\n")
    vim.cmd("edit! " .. vim.fn.fnameescape(chat))
    local bufnr = vim.api.nvim_get_current_buf()
    vim.api.nvim_win_set_cursor(0, { #lines - 3, 0 })
    if before_execute then
      before_execute()
    end
    vim.cmd("Flemma tool:execute")
    local entries = require("flemma_sandbox.checkpoints").list(bufnr)[1].entries
    return bufnr, #entries
  end

  local function finished(bufnr)
    assert(vim.wait(30000, function()
      local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
      return text:find("removed", 1, true) ~= nil and not require("flemma.tools.executor").get_pending(bufnr)[1]
    end, 20))
    return #require("flemma_sandbox.checkpoints").list(bufnr)[1].entries
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
      local own = require("flemma.tools.definitions.bash").definitions[1]
      require("flemma.tools.registry").unregister("bash")
      require("flemma.tools").register("bash", own)
    end)
    assert.are.equal(2, at_return)
    assert.are.equal(2, finished(bufnr))
  end)
end)
