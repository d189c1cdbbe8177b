--- The first start in a real terminal (tmux, 120x40 and 80x24): a clone
--- nobody ran `make` in, with setup() in init.lua. No error reaches the
--- screen, the core is built in the background, and in the same session
--- :FlemmaSandbox (bare, and status) shows the status window.
local h = require("support.helpers")
local tmux = require("support.tmux")

describe("the first start in a real terminal", function()
  local t, term
  before_each(function()
    t = h.tmpdir()
    term = tmux.new("flemma-start")
  end)
  after_each(function()
    term:kill()
    h.rmdir(t)
  end)

  for _, size in ipairs({ { 120, 40 }, { 80, 24 } }) do
    it(
      string.format("%dx%d: no error on screen, the build ends, bare :FlemmaSandbox shows status", size[1], size[2]),
      function()
        if not tmux.available() then
          return pending("tmux is not installed")
        end
        h.sh("mkdir -p " .. t .. "/home")
        h.copy_tree(t .. "/src")
        h.write(t .. "/init.lua", table.concat({
          "vim.opt.rtp:prepend(" .. string.format("%q", t .. "/src") .. ")",
          "vim.opt.swapfile = false",
          "require('flemma_sandbox').setup({ policy = { limits = { processes = 77 } } })",
        }, "\n") .. "\n")
        local env = "env TERM=xterm-256color HOME=" .. h.shell_quote(t .. "/home")
        term:start(env .. " nvim -i NONE -u " .. h.shell_quote(t .. "/init.lua"), size[1], size[2])
        local shown = term:wait_for("building the C core")
        assert.truthy(shown:find("building the C core in the background", 1, true), shown)
        assert.is_nil(shown:find("E5113", 1, true), shown)
        assert.is_nil(shown:find("Error", 1, true), shown)
        -- the build (minutes at most); meanwhile :FlemmaSandbox says what goes on
        term:keys(":FlemmaSandbox", "Enter")
        for _ = 1, 1800 do
          if
            h.read(t .. "/src/lua/flemma_sandbox/core.so")
            and h.read(t .. "/src/lua/flemma_sandbox/flemma-sandbox-tool")
          then
            break
          end
          vim.loop.sleep(100)
        end
        shown = term:wait_for("built the C core", 60000)
        assert.truthy(shown:find("built the C core", 1, true), shown)
        term:keys("Escape", ":FlemmaSandbox", "Enter")
        shown = term:wait_for("caps:")
        assert.truthy(shown:find("flemma-sandbox, buffer", 1, true), shown)
        assert.truthy(shown:find("processes=77", 1, true), "the setup() of init.lua holds:\n" .. shown)
        assert.is_nil(shown:find("Error", 1, true), shown)
        assert.is_nil(shown:find("E5113", 1, true), shown)
        assert.is_nil(shown:find("Press ENTER", 1, true), shown)
      end
    )
  end
end)
