--- Under the real Flemma in a real terminal (tmux, 120x40; Neovim 0.11+):
--- the git tool run with :Flemma tool:execute (past Flemma's approval
--- resolvers) asks in flemma-sandbox's question window; typing in the chat
--- answers nothing, `a` in the window runs it on the host; bare
--- :FlemmaSandbox shows the status with the backend Flemma uses.
local h = require("support.helpers")
local tmux = require("support.tmux")

local flemma_dir = assert(os.getenv("FLEMMA_DIR"), "FLEMMA_DIR")

describe("under Flemma in a real terminal", function()
  local t, term
  before_each(function()
    t = h.tmpdir()
    term = tmux.new("flemma-term")
  end)
  after_each(function()
    term:kill()
    h.rmdir(t)
  end)

  local function staged()
    return h.run({ "git", "diff", "--cached", "--name-only" }, nil, t .. "/project").stdout
  end

  it("asks about a git write in the question window; typing in the chat answers nothing; a runs it", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local project = t .. "/project"
    h.sh("mkdir -p " .. t .. "/home/.cache " .. t .. "/home/.local/share " .. project)
    h.sh("cd " .. project .. " && git init -q -b main && echo x > f.txt")
    h.write(
      project .. "/talk.chat",
      table.concat(
        require("support.flemma_chat").lines("git", "toolu_g1", { label = "stage", args = { "add", "f.txt" } }),
        "\n"
      ) .. "\n\n"
    )
    h.write(t .. "/init.lua", table.concat({
      "vim.opt.swapfile = false",
      "vim.opt.rtp:prepend(" .. string.format("%q", flemma_dir) .. ")",
      "vim.opt.rtp:prepend(" .. string.format("%q", vim.fn.getcwd()) .. ")",
      -- lazy.nvim's order for a dependency: its plugin file before Flemma's setup()
      "vim.cmd('runtime plugin/flemma_sandbox.lua')",
      "require('flemma').setup({ lsp = { enabled = false } })",
      -- registered at once (tools.modules loads at the first request only)
      "require('flemma.tools').register('flemma_sandbox.flemma.tools')",
    }, "\n") .. "\n")
    local env = "env TERM=xterm-256color HOME=" .. h.shell_quote(t .. "/home")
    term:start(
      "cd "
        .. h.shell_quote(project)
        .. " && "
        .. env
        .. " nvim -i NONE -u "
        .. h.shell_quote(t .. "/init.lua")
        .. " talk.chat",
      120,
      40
    )
    term:wait_for("**Tool Use:**")
    term:keys(":7", "Enter")
    term:keys(":Flemma tool:execute", "Enter")
    local shown = term:wait_for("Allow this git call on the host?")
    assert.truthy(shown:find("Allow this git call on the host?", 1, true), shown)
    assert.truthy(shown:find("git add f.txt", 1, true), shown)
    assert.is_nil(shown:find("Press ENTER", 1, true), shown)
    -- typing in the chat answers nothing
    term:keys("G", "o", "a d A y", "Escape", "Enter")
    vim.loop.sleep(500)
    assert.are.equal("", staged(), "typing in the chat answered the question")
    term:keys(":FlemmaSandbox approval", "Enter")
    term:keys("a")
    for _ = 1, 100 do
      if staged() ~= "" then
        break
      end
      vim.loop.sleep(100)
    end
    assert.are.equal("f.txt\n", staged())
    -- the status, bare command, in this terminal
    term:keys("Escape", ":FlemmaSandbox", "Enter")
    shown = term:wait_for("flemma_sandbox")
    assert.truthy(shown:find("flemma_sandbox", 1, true), shown)
    assert.is_nil(shown:find("E5108", 1, true), shown)
    assert.is_nil(shown:find("Press ENTER", 1, true), shown)
  end)
end)
