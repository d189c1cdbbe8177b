--- :FlemmaSandbox log in a real terminal (tmux, 80x24 and 120x40): after a
--- chat's calls, the log window lists each call with its command, exit
--- code and files; <CR> on a file shows the call's diff; q closes it.
local h = require("support.helpers")
local tmux = require("support.tmux")

describe(":FlemmaSandbox log in a real terminal", function()
  local t, term
  before_each(function()
    t = h.tmpdir()
    term = tmux.new("flemma-log")
  end)
  after_each(function()
    term:kill()
    h.rmdir(t)
  end)

  for _, size in ipairs({ { 80, 24 }, { 120, 40 } }) do
    local width, height = size[1], size[2]
    it(width .. "x" .. height .. ": the log lists the calls and their files; <CR> shows a call's diff", function()
      if not tmux.available() then
        return pending("tmux is not installed")
      end
      local proj = t .. "/proj"
      h.sh(
        "mkdir -p "
          .. h.shell_quote(t .. "/home")
          .. " "
          .. h.shell_quote(proj)
          .. " && cd "
          .. h.shell_quote(proj)
          .. " && git init -q . && printf 'the user wrote this line\\n' > a.txt && git add -A"
          .. " && git -c user.name=u -c user.email=u@e commit -qm init"
      )
      h.write(proj .. "/a.chat", "@You:\nhi\n")
      h.write(
        t .. "/call.lua",
        "local tools, b = require('flemma_sandbox.tools'), vim.api.nvim_get_current_buf()\n"
          .. "tools.run('bash', { command = \"printf 'the model added this\\\\n' >> a.txt && echo made > new.txt\" }, "
          .. "{ bufnr = b, approved = true }, function()\n"
          .. "  tools.run('bash', { command = 'true' }, { bufnr = b, approved = true }, function() end)\n"
          .. "end)\n"
      )
      local setup = {
        "require('flemma_sandbox').setup({ backend = 'bwrap', sandboxes = { workspace = 'direct' },",
        "  policy = { rw_paths = { '$CWD' }, network = false } })",
      }
      term:start(tmux.nvim_in_project(t, setup, "a.chat"), width, height)
      term:wait_for("a.chat")
      term:keys(":luafile " .. t .. "/call.lua", "Enter")
      -- both calls ended: their entries are in the chat's folder
      local listed = false
      for _ = 1, 150 do
        local found = vim.fn.glob(t .. "/home/.cache/flemma-sandbox/*/a-*/timeline.jsonl", false, true)[1]
        local text = found and h.read(found) or ""
        local _, count = text:gsub("\n", "")
        if count >= 2 then
          listed = true
          break
        end
        vim.loop.sleep(100)
      end
      assert(listed, "the calls' entries were not written")
      assert.are.equal("the user wrote this line\nthe model added this\n", h.read(proj .. "/a.txt"))
      term:keys(":FlemmaSandbox log", "Enter")
      local shown = term:wait_for("files: none changed")
      assert.truthy(shown:find("2 calls, newest first", 1, true), shown)
      assert.truthy(shown:find("#2  ", 1, true), shown)
      assert.truthy(shown:find("bash  exit 0", 1, true), shown)
      assert.truthy(shown:find("$ true", 1, true), shown)
      assert.truthy(shown:find("A new.txt", 1, true), shown)
      assert.truthy(shown:find("M a.txt", 1, true), shown)
      assert.is_nil(shown:find("Error", 1, true), shown)
      -- <CR> on a file: that call's diff
      term:keys("/M a.txt", "Enter")
      term:keys("Enter")
      shown = term:wait_for("+the model added this")
      assert.truthy(shown:find("+the model added this", 1, true), shown)
      assert.truthy(shown:find("diff --git a/a.txt b/a.txt", 1, true), shown)
      assert.is_nil(shown:find("Error", 1, true), shown)
      term:keys("q")
      term:keys("q")
      shown = term:screen()
      assert.is_nil(shown:find("newest first", 1, true), shown)
      assert.truthy(shown:find("hi", 1, true), shown)
    end)
  end
end)
