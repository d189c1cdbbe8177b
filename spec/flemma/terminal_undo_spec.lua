--- The issue's sequence under the real Flemma in a real terminal (tmux,
--- 80x24 and 120x40; Neovim 0.11+), direct mode: a chat's bash call
--- `rm -rf src; echo removed` run with :Flemma tool:execute; then the user
--- writes TODO.md, edits README.md, types a new @You: message and saves the
--- chat (:w), writes another chat's file; :FlemmaSandbox undo shows the
--- call's files (A src/...) and no other in the question window, and once
--- approved brings back only src: every file the user left is byte for byte
--- as the user left it, the chat's buffer too. Control: src is gone before.
local h = require("support.helpers")
local tmux = require("support.tmux")

local q = h.shell_quote
local flemma_dir = assert(os.getenv("FLEMMA_DIR"), "FLEMMA_DIR")

--- Polls (at most 10 s) until check() holds; whether it did.
local function eventually(check)
  for _ = 1, 100 do
    if check() then
      return true
    end
    vim.loop.sleep(100)
  end
  return check()
end

describe("undo under Flemma in a real terminal", function()
  local t, term
  before_each(function()
    t = h.tmpdir()
    term = tmux.new("flemma-undo")
  end)
  after_each(function()
    term:kill()
    h.rmdir(t)
  end)

  for _, size in ipairs({ { 80, 24 }, { 120, 40 } }) do
    it(
      string.format("%dx%d: after `rm -rf src` and the user's work, undo brings back only src", size[1], size[2]),
      function()
        if not tmux.available() then
          return pending("tmux is not installed")
        end
        local proj = t .. "/proj"
        h.sh(
          "mkdir -p "
            .. q(t .. "/home/.cache")
            .. " "
            .. q(t .. "/home/.local/share")
            .. " "
            .. q(proj .. "/src")
            .. " && cd "
            .. q(proj)
            .. " && git init -q . && printf 'main\\n' > src/main.py && printf 'util\\n' > src/util.py"
            .. " && printf 'readme\\n' > README.md && git add -A"
            .. " && git -c user.name=u -c user.email=u@e commit -qm init"
        )
        local lines = require("support.flemma_chat").lines(
          "bash",
          "toolu_u1",
          { label = "clean", command = "cd " .. proj .. " && rm -rf src; echo removed" }
        )
        h.write(proj .. "/u.chat", table.concat(lines, "\n") .. "\n")
        h.write(t .. "/init.lua", table.concat({
          "vim.opt.swapfile = false",
          "vim.opt.rtp:prepend(" .. string.format("%q", flemma_dir) .. ")",
          "vim.opt.rtp:prepend(" .. string.format("%q", vim.fn.getcwd()) .. ")",
          "vim.cmd('runtime plugin/flemma_sandbox.lua')",
          "require('flemma').setup({ lsp = { enabled = false } })",
        }, "\n") .. "\n")
        term:start(
          "cd "
            .. q(proj)
            .. " && env TERM=xterm-256color HOME="
            .. q(t .. "/home")
            .. " XDG_CACHE_HOME="
            .. q(t .. "/home/.cache")
            .. " nvim -i NONE -u "
            .. q(t .. "/init.lua")
            .. " u.chat",
          size[1],
          size[2]
        )
        term:wait_for("**Tool Use:**")
        term:keys(":" .. (#lines - 3), "Enter")
        term:keys(":Flemma tool:execute", "Enter")
        assert.is_true(eventually(function()
          return vim.fn.isdirectory(proj .. "/src") == 0
        end))
        -- the result as Flemma folds it once the call ended (a placeholder
        -- shows while it runs)
        local shown = term:wait_for("Tool Result: bash: clean \226\128\148 removed", 20000)
        assert.truthy(shown:find("Tool Result: bash: clean \226\128\148 removed", 1, true), shown)
        -- control: the call removed src
        assert.are.equal(0, vim.fn.isdirectory(proj .. "/src"))

        -- the user: a new file, an edit of a file the call did not touch,
        -- a new message in the chat, saved, another chat's file
        h.write(proj .. "/TODO.md", "mine\n")
        h.write(proj .. "/README.md", "readme, edited by the user\n")
        h.write(proj .. "/other.chat", "@You:\nanother chat\n")
        -- Flemma is done with the buffer once the result is drawn and folded
        vim.loop.sleep(1000)
        term:keys(":call append('$', ['', '@You:', 'thanks, now the tests']) | write", "Enter")
        assert(
          eventually(function()
            return (h.read(proj .. "/u.chat") or ""):find("thanks, now the tests", 1, true) ~= nil
          end),
          "the chat was not saved:\n" .. term:screen()
        )
        local chat_text = h.read(proj .. "/u.chat")
        assert.truthy(chat_text:find("removed", 1, true), "the saved chat holds the call's result")

        term:keys(":FlemmaSandbox undo", "Enter")
        shown = term:wait_for("> deny")
        assert.truthy(shown:find("Undo call 1 (bash", 1, true), shown)
        assert.truthy(shown:find("A src/main.py", 1, true), shown)
        assert.truthy(shown:find("A src/util.py", 1, true), shown)
        for _, name in ipairs({ "TODO.md", "README.md", "u.chat", "other.chat" }) do
          assert.is_nil(shown:find("[AMD] " .. vim.pesc(name)), name .. " is in the preview:\n" .. shown)
        end
        assert.is_nil(shown:find("kept (", 1, true), shown)
        assert.is_nil(shown:find("never written (", 1, true), shown)
        term:keys(":FlemmaSandbox approve", "Enter")
        assert.is_true(eventually(function()
          return h.read(proj .. "/src/util.py") ~= nil
        end))
        assert.are.equal("main\n", h.read(proj .. "/src/main.py"))
        assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
        shown = term:wait_for("flemma-sandbox: undo of call 1 (")
        assert.truthy(shown:find("flemma-sandbox: undo of call 1 (", 1, true), shown)
        assert.is_nil(shown:find("> deny", 1, true), "the window closed:\n" .. shown)
        assert.are.equal("mine\n", h.read(proj .. "/TODO.md"))
        assert.are.equal("readme, edited by the user\n", h.read(proj .. "/README.md"))
        assert.are.equal("@You:\nanother chat\n", h.read(proj .. "/other.chat"))
        assert.are.equal(chat_text, h.read(proj .. "/u.chat"))
        -- the chat's buffer is as the user left it, not reloaded to an older file
        term:keys(':echo "lines:" . line("$") . ":" . &modified', "Enter")
        local count = select(2, chat_text:gsub("\n", ""))
        shown = term:wait_for("lines:" .. count .. ":0")
        assert.truthy(shown:find("lines:" .. count .. ":0", 1, true), shown)
        assert.is_nil(shown:find("Press ENTER", 1, true), shown)
        assert.is_nil(shown:find("W11", 1, true), shown)
      end
    )
  end
end)
