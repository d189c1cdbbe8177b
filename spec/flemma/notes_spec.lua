-- Flemma's bash through our backend, run by hand (:Flemma tool:execute):
-- its result carries the run's `[sandbox]` notes (flemma/notes.lua), in
-- direct mode and in clone mode: which rule refused a path the output
-- names, what the run moved to the quarantine, what the allowlist proxy
-- blocked (the run's records). Control: Flemma's own
-- bash back in the registry gives the bare output (the run and the move
-- happen all the same).
local flemma_chat = require("support.flemma_chat")
local quarantine = require("flemma_sandbox.run.quarantine")

local execute, result_of = flemma_chat.execute, flemma_chat.result_of

describe("Flemma's bash results", function()
  local p
  flemma_chat.each_project(
    "git init -q . && printf 'one\\n' > a.txt && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
      .. " && printf 'SECRET=1\\n' > .env",
    function(world)
      p = world
    end,
    {
      settle = function()
        vim.wait(20000, function()
          return require("flemma_sandbox.api.clone_mode").syncing == 0
        end, 20)
      end,
    }
  )

  --- Runs a bash call by hand; its result's text and what the quarantine
  --- got from it.
  local function bash(chat, command, before_execute)
    local before = #quarantine.list()
    local input = { label = "t", command = "cd " .. p.proj .. " && " .. command }
    local text = execute(p.dir .. "/chats/" .. chat, "bash", input, nil, before_execute)
    return result_of(text), #quarantine.list() - before
  end

  for _, workspace in ipairs({ "direct", "clone" }) do
    it("say which rule hid a file and what was moved to the quarantine (" .. workspace .. " mode)", function()
      flemma_chat.setup_flemma(workspace)
      local out = bash(workspace .. ".chat", "cat " .. p.proj .. "/.env; echo done")
      assert.matches("done", out)
      assert.is_nil(out:find("SECRET=1", 1, true))
      assert.matches("%[sandbox%] read of " .. vim.pesc(p.proj) .. "/%.env blocked: hidden", out)
      local moved
      out, moved = bash(workspace .. ".chat", "echo 'os.exit(7)' > .nvim.lua && echo planted")
      assert.matches("planted", out)
      assert.are.equal(1, moved, "the check after the run moved it")
      assert.matches("%[sandbox%] [^\n]*%.nvim%.lua was created at a protected name and moved to the quarantine", out)
      -- the run's records: Flemma's network = true goes through the
      -- allowlist proxy, which refuses a name it does not list
      out = bash(workspace .. ".chat", "git ls-remote http://blocked.test/r.git; echo tried")
      assert.matches("tried", out)
      assert.matches("%[sandbox%] blocked blocked%.test: blocked%.test is not in allow_domains", out)
      -- control: Flemma's own bash says nothing of it
      out, moved = bash(workspace .. "-own.chat", "echo 'os.exit(7)' > .nvim.lua; cat .env; echo planted", function()
        local own = require("flemma.tools.definitions.bash").definitions[1]
        require("flemma.tools.registry").unregister("bash")
        require("flemma.tools").register("bash", own)
      end)
      assert.matches("planted", out)
      assert.are.equal(1, moved)
      assert.is_nil(out:find("[sandbox]", 1, true))
    end)
  end
end)
