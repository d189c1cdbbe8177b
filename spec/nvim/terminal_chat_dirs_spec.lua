--- The chats' folders seen in a real terminal (tmux, 80x24): a chat's tool
--- call makes its folder, :FlemmaSandbox list shows it in a float whose
--- every line is on screen, however long (wrapped rows counted).
local h = require("support.helpers")
local tmux = require("support.tmux")

describe("the chats' folders in a real terminal", function()
  local t, term
  before_each(function()
    t = h.tmpdir()
    term = tmux.new("flemma-chats")
  end)
  after_each(function()
    term:kill()
    h.rmdir(t)
  end)

  it("80x24: :FlemmaSandbox list shows the chat and its whole folder path", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    h.sh("mkdir -p " .. t .. "/home " .. t .. "/proj")
    h.write(t .. "/proj/a.chat", "@You:\nhi\n")
    h.write(
      t .. "/run.lua",
      "require('flemma_sandbox.run.job').run({ 'bash', '-c', 'echo hi > /tmp/k.txt' }, "
        .. "{ wrap = require('flemma_sandbox').wrapper(0), on_exit = function() vim.g.ran = 1 end })\n"
    )
    term:start(tmux.nvim_in_project(t, { "require('flemma_sandbox').setup({})" }, "a.chat"), 80, 24)
    term:wait_for("a.chat")
    term:keys(":luafile " .. t .. "/run.lua", "Enter")
    local core = require("flemma_sandbox.core")
    for _ = 1, 100 do
      if core.file_type(t .. "/home/.cache/flemma-sandbox") then
        break
      end
      vim.loop.sleep(100)
    end
    assert.are.equal("directory", core.file_type(t .. "/home/.cache/flemma-sandbox"), "the chat's folder was made")
    vim.loop.sleep(500)
    term:keys(":FlemmaSandbox list", "Enter")
    local shown = term:wait_for("a.chat ")
    assert.truthy(shown:find("the chats' own folders of", 1, true), shown)
    assert.matches("a%-%x+ +%d+ KiB", shown)
    -- the folder's path is longer than the window: it wraps, and its end
    -- (the project hash's last digits) is on screen, not cut to "@@@"
    local hash = vim.fn.sha256(core.resolve(t .. "/proj", "/"))
    assert.truthy(shown:find(hash:sub(-12), 1, true), shown)
    assert.is_nil(shown:find("@@@", 1, true), shown)
    assert.is_nil(shown:find("Error", 1, true), shown)
  end)
end)
