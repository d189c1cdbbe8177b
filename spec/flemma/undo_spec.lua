-- Undo and redo of one call under the real Flemma (FLEMMA_DIR), in
-- direct mode in a git project: the calls run by hand with
-- :Flemma tool:execute (flemma/tool_overrides.lua's checkpoint_then and
-- call_ended record the tree before and after each), and
-- :FlemmaSandbox undo! (or :FlemmaSandbox! undo) and :FlemmaSandbox! redo,
-- which ask nothing, take back or put back exactly that call's change.
-- What the user did by hand between the call and the undo (a new file, an
-- edit of a file the call did not touch, the chat saved with a new message,
-- another chat's file) is left byte for byte as the user left it.
-- Controls: each call's change is on disk before the undo.
local h = require("support.helpers")
local n = require("support.nvim")
local flemma_chat = require("support.flemma_chat")

local execute, result_of = flemma_chat.execute, flemma_chat.result_of

describe("undo under Flemma, direct mode", function()
  local p
  flemma_chat.each_project(
    "mkdir -p src && git init -q . && printf 'main\\n' > src/main.py && printf 'util\\n' > src/util.py"
      .. " && printf 'readme\\n' > README.md && git add -A && git -c user.name=u -c user.email=u@e commit -qm init",
    function(world)
      p = world
    end,
    { flemma = true }
  )

  --- Runs :FlemmaSandbox `command` (with bang: :FlemmaSandbox! `command`,
  --- no question) in the current buffer and waits for what it says (an
  --- undo or redo ends with one notice); returns it.
  local function run(command, bang)
    local notes, restore = n.capture_notify()
    -- the notice is cut to the command line's width: room for the labels
    local columns = vim.o.columns
    vim.o.columns = 1000
    local ok, err = pcall(vim.cmd, "FlemmaSandbox" .. (bang and "! " or " ") .. command)
    local said
    local done = ok
      and vim.wait(30000, function()
        said = notes[1] and notes[1].msg
        return said ~= nil
      end, 20)
    restore()
    vim.o.columns = columns
    assert(ok, tostring(err))
    assert(done, command .. " said nothing: " .. vim.inspect(notes))
    return said
  end

  it("undo brings back only what `rm -rf src` removed; the user's work and both chats stay as left", function()
    local proj = p.proj
    local chat = proj .. "/u.chat"
    local text, bufnr =
      execute(chat, "bash", { label = "t", command = "cd " .. proj .. " && rm -rf src; echo removed" })
    assert.matches("removed", result_of(text))
    -- control: the call's change is real
    assert.are.equal(0, vim.fn.isdirectory(proj .. "/src"), "the call did not remove src")
    -- the user, by hand: a new file, an edit of a file the call did not
    -- touch, the chat saved with a new message, another chat's file
    h.write(proj .. "/TODO.md", "mine\n")
    h.write(proj .. "/README.md", "readme, edited by the user\n")
    vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { "", "@You:", "thanks, now the tests" })
    vim.cmd("silent write")
    h.write(proj .. "/other.chat", "@You:\nanother chat\n")
    local chat_text = h.read(chat)
    assert.truthy(chat_text:find("thanks, now the tests", 1, true))
    assert.truthy(chat_text:find("removed", 1, true), "the saved chat holds the call's result")

    local said = run("undo!")
    assert.matches("undo of call %d+ [^\n]*: 2 file%(s%) written", said)
    assert.are.equal("main\n", h.read(proj .. "/src/main.py"), said)
    assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
    assert.are.equal("mine\n", h.read(proj .. "/TODO.md"))
    assert.are.equal("readme, edited by the user\n", h.read(proj .. "/README.md"))
    assert.are.equal(chat_text, h.read(chat), "the chat's file changed")
    assert.are.equal("@You:\nanother chat\n", h.read(proj .. "/other.chat"))
    -- the chat's buffer is as the user left it (not reloaded to an older file)
    assert.are.equal(chat_text, table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n")
    assert.is_false(vim.bo[bufnr].modified)
    -- nothing else left to undo; the tree stays
    said = run("undo!")
    assert.matches("every recorded call is undone already", said)
    assert.are.equal("mine\n", h.read(proj .. "/TODO.md"))
    assert.are.equal(chat_text, h.read(chat))
  end)

  it("undo takes back a Flemma edit, then a write, one call at a time; redo puts the last back", function()
    local proj = p.proj
    local chat = proj .. "/w.chat"
    local text = execute(chat, "write", { label = "w", path = proj .. "/new.txt", content = "written\n" })
    assert.matches("rote 8 bytes", result_of(text))
    text = execute(chat, "edit", { label = "e", path = proj .. "/README.md", oldText = "readme", newText = "edited" })
    assert.matches("replaced text", result_of(text))
    -- control: both changes are on disk
    assert.are.equal("written\n", h.read(proj .. "/new.txt"))
    assert.are.equal("edited\n", h.read(proj .. "/README.md"))
    h.write(proj .. "/mine.txt", "the user's\n")
    local chat_text = h.read(chat)

    local said = run("undo", true)
    assert.matches("undo of call 2 [^\n]*: 1 file%(s%) written", said)
    assert.are.equal("readme\n", h.read(proj .. "/README.md"))
    assert.are.equal("written\n", h.read(proj .. "/new.txt"), "the write is a call of its own")
    said = run("undo", true)
    assert.matches("undo of call 1 [^\n]*: 1 file%(s%) written", said)
    assert.is_nil(h.read(proj .. "/new.txt"))
    assert.are.equal("readme\n", h.read(proj .. "/README.md"))

    said = run("redo", true)
    assert.matches("redo of call 1 [^\n]*: 1 file%(s%) written", said)
    assert.are.equal("written\n", h.read(proj .. "/new.txt"))
    assert.are.equal("readme\n", h.read(proj .. "/README.md"), "redo put back only the last undo")
    assert.are.equal("the user's\n", h.read(proj .. "/mine.txt"))
    assert.are.equal(chat_text, h.read(chat))
  end)

  it("undo of a Flemma call that changed nothing changes nothing; the user's edits since stay", function()
    local proj = p.proj
    local chat = proj .. "/n.chat"
    local text = execute(chat, "bash", { label = "l", command = "ls /tmp > /dev/null; echo listed" })
    assert.matches("listed", result_of(text))
    h.write(proj .. "/src/main.py", "the user's\n")
    h.write(proj .. "/mine.txt", "mine\n")
    h.write(proj .. "/README.md", "readme, edited\n")
    h.write(proj .. "/clone.chat", "@You:\nanother chat\n")
    local chat_text = h.read(chat)
    local said = run("undo", true)
    assert.matches("undo of call 1 [^\n]*: 0 file%(s%) written", said)
    assert.are.equal("the user's\n", h.read(proj .. "/src/main.py"))
    assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
    assert.are.equal("mine\n", h.read(proj .. "/mine.txt"))
    assert.are.equal("readme, edited\n", h.read(proj .. "/README.md"))
    assert.are.equal("@You:\nanother chat\n", h.read(proj .. "/clone.chat"))
    assert.are.equal(chat_text, h.read(chat))
  end)

  it("asks first under Flemma too: deny writes nothing, approve takes the call back", function()
    local proj = p.proj
    local chat = proj .. "/q.chat"
    local text, bufnr =
      execute(chat, "bash", { label = "t", command = "cd " .. proj .. " && rm src/util.py; echo gone" })
    assert.matches("gone", result_of(text))
    assert.is_nil(h.read(proj .. "/src/util.py"), "control: the call removed the file")
    local questions = require("flemma_sandbox.questions")
    vim.cmd("FlemmaSandbox undo")
    assert(vim.wait(20000, function()
      return questions.pending() ~= nil
    end, 20))
    local shown = {}
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      vim.list_extend(shown, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false))
    end
    shown = table.concat(shown, "\n")
    assert.matches("Undo call 1 %(bash: ", shown)
    assert.matches("\nA src/util.py\n", shown)
    assert.are.equal(bufnr, vim.api.nvim_get_current_buf(), "the question took focus")
    local said = run("deny")
    assert.matches("undo of call 1: not done", said)
    assert.is_nil(h.read(proj .. "/src/util.py"), "denied: nothing written")
    assert.is_nil(questions.pending(), "the question is gone")
    vim.cmd("FlemmaSandbox undo")
    assert(vim.wait(20000, function()
      return questions.pending() ~= nil
    end, 20))
    said = run("approve")
    assert.matches("undo of call 1 [^\n]*: 1 file%(s%) written", said)
    assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
  end)

  it("keeps a path the user changed after a Flemma write and lists it in the quickfix list", function()
    local proj = p.proj
    local chat = proj .. "/c.chat"
    execute(chat, "write", { label = "w", path = proj .. "/src/main.py", content = "the model's\n" })
    assert.are.equal("the model's\n", h.read(proj .. "/src/main.py"), "control: the write reached the file")
    h.write(proj .. "/src/main.py", "the user's\n")
    local said = run("undo", true)
    assert.matches("0 file%(s%) written; 1 changed since and kept", said)
    assert.are.equal("the user's\n", h.read(proj .. "/src/main.py"))
    local items = vim.fn.getqflist()
    assert.are.equal(1, #items, vim.inspect(items))
    assert.are.equal(proj .. "/src/main.py", vim.fn.fnamemodify(vim.fn.bufname(items[1].bufnr), ":p"))
  end)
end)
