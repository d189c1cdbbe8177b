-- Clone mode under the real Flemma (FLEMMA_DIR): :FlemmaSandbox discard
-- of a Flemma chat's copy asks first when it holds work not applied, and
-- keeps the copy's commit and its uncommitted work under
-- refs/flemma-sandbox/discarded/ in the user's repository, from which git
-- brings the files back (the copy is gone).
local h = require("support.helpers")
local flemma_chat = require("support.flemma_chat")

local execute, result_of = flemma_chat.execute, flemma_chat.result_of

local function synced()
  assert(vim.wait(20000, function()
    return require("flemma_sandbox.api.clone_mode").syncing == 0
  end, 20))
end

describe("discarded work under Flemma", function()
  local p
  local questions = require("flemma_sandbox.questions")
  local original_prompt = questions.prompt
  flemma_chat.each_project(
    "git init -q . && printf 'one\\n' > a.txt && git add -A && git -c user.name=u -c user.email=u@e commit -qm init",
    function(world)
      p = world
    end,
    { settle = synced }
  )
  after_each(function()
    questions.prompt = original_prompt
    questions.reset()
  end)

  it("discard asks, then keeps the copy's commit and uncommitted work under a ref", function()
    flemma_chat.setup_flemma("clone")
    local proj, chat = p.proj, p.dir .. "/chats/c.chat"
    local text, bufnr = execute(chat, "bash", {
      label = "t",
      command = "cd "
        .. proj
        .. " && echo c > c.txt && git add c.txt && git -c user.name=m -c user.email=m@m commit -qm 'the model'"
        .. " && echo changed > a.txt && echo u > u.txt && echo done",
      timeout = 30,
    })
    assert.matches("done", result_of(text))
    synced()
    local clone = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1].clone
    assert.are.equal(1, vim.fn.isdirectory(clone))
    local asked = {}
    questions.reset()
    questions.prompt = function(question, respond)
      asked[#asked + 1] = question
      vim.schedule(function()
        respond("once")
      end)
      return function() end
    end
    require("flemma_sandbox.nvim.commands").actions.discard(bufnr)
    assert(vim.wait(30000, function()
      return vim.fn.isdirectory(clone) == 0
    end, 20))
    assert.are.equal(1, #asked)
    assert.matches("Discard this chat's copy", asked[1].title)
    local ref = vim.trim(
      h.run({ "git", "-C", proj, "for-each-ref", "--format=%(refname)", "refs/flemma-sandbox/discarded/" }).stdout
    )
    assert.matches("^refs/flemma%-sandbox/discarded/[^/\n]+/%d+T%d+Z$", ref)
    assert.matches("the model\n", h.run({ "git", "-C", proj, "log", "--format=%s", ref }).stdout)
    local r = h.run({ "git", "-C", proj, "restore", "--source=" .. ref, "--", "a.txt", "c.txt", "u.txt" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("changed\n", h.read(proj .. "/a.txt"))
    assert.are.equal("c\n", h.read(proj .. "/c.txt"))
    assert.are.equal("u\n", h.read(proj .. "/u.txt"))
  end)
end)
