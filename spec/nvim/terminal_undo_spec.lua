--- :FlemmaSandbox undo in a real terminal (tmux runs a real Neovim, 80x24
--- and 120x40; the screen is read with capture-pane), direct mode, a chat
--- whose standalone tool call changed files: the preview is a question
--- showing the call and each path (A/M/D) in a window that does not take
--- focus; deny leaves the files as the call left them (control: the call's
--- change is on disk), a second undo answered with approve puts them back;
--- a file open in another window shows what undo wrote; a path the user
--- changed after another call is kept and shown in :copen.
local h = require("support.helpers")
local tmux = require("support.tmux")

local q = h.shell_quote

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

describe("undo in a real terminal", function()
  local t, term
  before_each(function()
    t = h.tmpdir()
    term = tmux.new("flemma-undo")
  end)
  after_each(function()
    term:kill()
    h.rmdir(t)
  end)

  --- A Lua file that runs a bash call in the current chat buffer and
  --- writes `marker` when it ended.
  local function call_file(name, command, marker)
    local path = t .. "/" .. name
    h.write(
      path,
      "require('flemma_sandbox.tools').run('bash', { command = "
        .. string.format("%q", command)
        .. " }, { bufnr = vim.api.nvim_get_current_buf(), approved = true }, function() "
        .. "local f = io.open("
        .. string.format("%q", marker)
        .. ", 'w') f:write('ended') f:close() end)\n"
    )
    return path
  end

  for _, size in ipairs({ { 80, 24 }, { 120, 40 } }) do
    it(
      string.format(
        "%dx%d: the preview shows the call and its files, focus stays in the chat; deny changes nothing,"
          .. " approve puts them back; a conflict is in :copen",
        size[1],
        size[2]
      ),
      function()
        if not tmux.available() then
          return pending("tmux is not installed")
        end
        local proj = t .. "/proj"
        h.sh(
          "mkdir -p "
            .. q(t .. "/home")
            .. " "
            .. q(proj .. "/src")
            .. " && cd "
            .. q(proj)
            .. " && git init -q . && printf 'main\\n' > src/main.py && printf 'util\\n' > src/util.py"
            .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
        )
        h.write(proj .. "/a.chat", "@You:\nclean up\n")
        local setup = {
          "require('flemma_sandbox').setup({ backend = 'bwrap',",
          "  policy = { rw_paths = { '$CWD' }, network = false } })",
        }
        term:start(tmux.nvim_in_project(t, setup, "a.chat"), size[1], size[2])
        term:wait_for("a.chat")
        -- src/main.py open in a window above the chat's, which keeps focus
        term:keys(":split src/main.py | wincmd p", "Enter")
        term:wait_for("main.py")
        local shown
        local first = call_file(
          "call1.lua",
          "rm src/util.py && printf 'call\\n' > src/main.py && printf 'new\\n' > made.txt",
          t .. "/ended1"
        )
        term:keys(":luafile " .. first, "Enter")
        assert.are.equal("ended", tmux.wait_file(t .. "/ended1"))
        -- control: the call's change is on disk
        assert.is_nil(h.read(proj .. "/src/util.py"))
        assert.are.equal("call\n", h.read(proj .. "/src/main.py"))
        assert.are.equal("new\n", h.read(proj .. "/made.txt"))
        -- control: the window of src/main.py shows what the call wrote
        term:keys(':checktime | echo "shown:" . getbufline(bufnr("src/main.py"), 1)[0]', "Enter")
        shown = term:wait_for("shown:call")
        assert.truthy(shown:find("shown:call", 1, true), shown)

        term:keys(":FlemmaSandbox undo", "Enter")
        shown = term:wait_for("> deny")
        assert.truthy(shown:find("Undo call 1 (bash: $ rm src/util.py", 1, true), shown)
        assert.truthy(shown:find("A src/util.py", 1, true), shown)
        assert.truthy(shown:find("M src/main.py", 1, true), shown)
        assert.truthy(shown:find("D made.txt", 1, true), shown)
        assert.truthy(shown:find("> approve once", 1, true), shown)
        assert.is_nil(shown:find("Press ENTER", 1, true), shown)
        -- the window did not take focus: the chat's window has it
        term:keys(':echo "focus:" . expand("%:t")', "Enter")
        shown = term:wait_for("focus:a.chat")
        assert.truthy(shown:find("focus:a.chat", 1, true), shown)
        assert.truthy(shown:find("> deny", 1, true), "the question is still open:\n" .. shown)

        term:keys(":FlemmaSandbox deny", "Enter")
        shown = term:wait_for("not done")
        assert.truthy(shown:find("undo of call 1: not done", 1, true), shown)
        assert.is_nil(shown:find("> deny", 1, true), "the window closed:\n" .. shown)
        vim.loop.sleep(500)
        assert.is_nil(h.read(proj .. "/src/util.py"), "denied: nothing written")
        assert.are.equal("call\n", h.read(proj .. "/src/main.py"))
        assert.are.equal("new\n", h.read(proj .. "/made.txt"))
        -- control: the window of src/main.py shows what the call wrote
        term:keys(':checktime | echo "shown:" . getbufline(bufnr("src/main.py"), 1)[0]', "Enter")
        shown = term:wait_for("shown:call")
        assert.truthy(shown:find("shown:call", 1, true), shown)

        term:keys(":FlemmaSandbox undo", "Enter")
        term:wait_for("> deny")
        term:keys(":FlemmaSandbox approve", "Enter")
        assert.is_true(eventually(function()
          return h.read(proj .. "/made.txt") == nil
        end))
        assert.are.equal("util\n", h.read(proj .. "/src/util.py"))
        assert.are.equal("main\n", h.read(proj .. "/src/main.py"))
        assert.are.equal("@You:\nclean up\n", h.read(proj .. "/a.chat"))
        shown = term:wait_for("flemma-sandbox: undo of call 1 (")
        assert.truthy(shown:find("flemma-sandbox: undo of call 1 (", 1, true), shown)
        assert.is_nil(shown:find("> deny", 1, true), "the window closed:\n" .. shown)
        -- the window of src/main.py shows the file as undo wrote it, no prompt
        term:keys(":wincmd t", "Enter")
        term:keys(':echo "top:" . getline(1) . ":" . &modified', "Enter")
        shown = term:wait_for("top:main:0")
        assert.truthy(shown:find("top:main:0", 1, true), shown)
        assert.is_nil(shown:find("W11", 1, true), shown)
        assert.is_nil(shown:find("Press ENTER", 1, true), shown)
        term:keys(":wincmd p", "Enter")

        -- another call; the user changes one of its files by hand after it
        local second =
          call_file("call2.lua", "printf 'model\\n' > src/main.py && printf 'two\\n' > two.txt", t .. "/ended2")
        term:keys(":luafile " .. second, "Enter")
        assert.are.equal("ended", tmux.wait_file(t .. "/ended2"))
        assert.are.equal("model\n", h.read(proj .. "/src/main.py"), "control: the call wrote the file")
        h.write(proj .. "/src/main.py", "the user's\n")
        term:keys(":FlemmaSandbox undo", "Enter")
        shown = term:wait_for("> deny")
        assert.truthy(shown:find("Undo call 2 (bash: $ printf", 1, true), shown)
        assert.truthy(shown:find("D two.txt", 1, true), shown)
        assert.truthy(shown:find("kept (changed since): src/main.py", 1, true), shown)
        -- answered with its own key, in its window
        term:keys(":FlemmaSandbox approval", "Enter")
        term:keys("a")
        assert.is_true(eventually(function()
          return h.read(proj .. "/two.txt") == nil
        end))
        assert.are.equal("the user's\n", h.read(proj .. "/src/main.py"), "the user's change was overwritten")
        -- the quickfix list is set once the undo is recorded, right after
        vim.loop.sleep(500)
        term:keys(":copen", "Enter")
        shown = term:wait_for("kept as it is")
        assert.truthy(shown:find("src/main.py|1", 1, true), shown)
        assert.truthy(shown:find("kept as it is: changed since", 1, true), shown)
        assert.is_nil(shown:find("Error", 1, true), shown)
      end
    )
  end
end)
