-- Under the real Flemma (FLEMMA_DIR): opening a chat starts its sandbox in
-- the background (sandboxes.prestart, nvim/prestart.lua through the
-- bridge's prestart_plan), and the chat's first bash call joins it (its
-- keeper unchanged). Control: with prestart = false in Flemma's config for
-- our backend nothing starts before the call.
local flemma_chat = require("support.flemma_chat")
local n = require("support.nvim")
local live = require("flemma_sandbox.backends.live")
local client = require("flemma_sandbox.backends.helper")

describe("a Flemma chat's sandbox started when the chat is opened", function()
  local p
  flemma_chat.each_project("true", function(world)
    p = world
  end, {
    settle = function()
      require("flemma_sandbox.nvim.prestart").reset()
      live.stop_all(client.helper())
    end,
  })

  local function setup(prestart)
    require("flemma").setup({
      lsp = { enabled = false },
      sandbox = { backends = { flemma_sandbox = { sandboxes = { prestart = prestart } } } },
    })
    require("flemma.tools").get_all()
  end

  --- The keeper's pid in the chat's live folder while it runs, or nil.
  local function keeper_of(dir)
    local f = io.open(dir .. "/pid", "r")
    local pid = tonumber((f and f:read("*a") or ""):match("^(%d+)"))
    if f then
      f:close()
    end
    return pid and n.alive(pid) and pid or nil
  end

  it("opening a chat starts its sandbox, and the first call joins it", function()
    setup(true)
    local dir, keeper
    local text = flemma_chat.execute(
      p.proj .. "/first.chat",
      "bash",
      { label = "t", command = "echo joined" },
      nil,
      function()
        assert(
          vim.wait(20000, function()
            local last
            dir, last = next(require("flemma_sandbox.nvim.prestart").last)
            return last ~= nil
          end, 20),
          "no prestart"
        )
        assert.are.equal("started", require("flemma_sandbox.nvim.prestart").last[dir].state)
        keeper = keeper_of(dir)
        assert.truthy(keeper, "a keeper runs before the call")
      end
    )
    assert.matches("joined", flemma_chat.result_of(text))
    assert.are.equal(keeper, keeper_of(dir), "the call joined the prestarted sandbox")
  end)

  it("control: with prestart = false nothing starts before the call", function()
    setup(false)
    local text = flemma_chat.execute(
      p.proj .. "/first.chat",
      "bash",
      { label = "t", command = "echo first" },
      nil,
      function()
        n.pause(3000)
        assert.is_nil(next(require("flemma_sandbox.nvim.prestart").last))
        assert.are.same({}, vim.tbl_keys(live.used), "no sandbox of ours before the call")
      end
    )
    assert.matches("first", flemma_chat.result_of(text))
    assert.are.equal(1, #vim.tbl_keys(live.used), "the call started it")
  end)
end)
