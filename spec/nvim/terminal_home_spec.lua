--- Neovim started in the home folder on a chat (`cd ~ && nvim notes.chat`):
--- $CWD is left out of rw_paths, and saying so takes one short line, never
--- a hit-enter prompt (tmux runs a real Neovim at 80x24).
local h = require("support.helpers")
local tmux = require("support.tmux")

local q = h.shell_quote

describe("a chat opened in the home folder (tmux, 80x24)", function()
  local dir, term
  before_each(function()
    dir = h.tmpdir()
    term = tmux.new("flemma-home")
  end)
  after_each(function()
    term:kill()
    h.rmdir(dir)
  end)

  it("says $CWD is left out in one line that needs no hit-enter; the typed keys reach the chat", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local home = dir .. "/home"
    h.sh("mkdir -p " .. q(home .. "/.cache"))
    h.write(home .. "/notes.chat", "@You:\nhello\n")
    h.write(
      dir .. "/init.lua",
      table.concat({
        "vim.opt.rtp:prepend(" .. string.format("%q", vim.fn.getcwd()) .. ")",
        "package.cpath = " .. string.format("%q", vim.fn.getcwd() .. "/lua/?.so;") .. " .. package.cpath",
        "vim.opt.swapfile = false",
        "require('flemma_sandbox').setup({ backend = 'bwrap', policy = { network = false } })",
      }, "\n")
    )
    term:start(
      "cd "
        .. q(home)
        .. " && env TERM=xterm-256color HOME="
        .. q(home)
        .. " XDG_CACHE_HOME="
        .. q(home .. "/.cache")
        .. " nvim -i NONE -u "
        .. q(dir .. "/init.lua")
        .. " notes.chat",
      80,
      24
    )
    term:wait_for("$CWD")
    vim.loop.sleep(1500) -- what start-up and the first chat say has come
    local shown = term:screen()
    assert.is_nil(shown:find("Press ENTER", 1, true), shown)
    assert.truthy(shown:find("$CWD", 1, true), shown)
    -- one line: the notice is the screen's last, the buffer's text above it
    local rows = vim.split(shown:gsub("\n+$", ""), "\n", { plain = true })
    assert.truthy(rows[#rows]:find("flemma-sandbox: $CWD", 1, true), shown)
    assert.truthy(shown:find("hello", 1, true), "the chat is on screen:\n" .. shown)
    -- the typed keys reach the buffer (no prompt waits for them)
    term:keys("G", "o", "typed-here", "Escape")
    shown = term:wait_for("typed-here")
    assert.truthy(shown:find("typed-here", 1, true), shown)
  end)
end)
