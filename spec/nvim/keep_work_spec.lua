--- Nothing of a copy's work is thrown away for good by one command
--- (backends/workspace_keep.lua): discard, delete! and gc keep the copy's
--- commits and its uncommitted work under refs/flemma-sandbox/discarded/
--- in the user's repository (its own objects: the copy is gone), say how
--- to get them back, and only gc prunes them after 14 days; discard asks
--- first when the copy holds work not applied. Control: the same work is
--- not reachable from the user's repository once the copy is gone when
--- nothing keeps it (keeping turned off).
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")

describe("a copy's work thrown away", function()
  local proj, p
  local questions = require("flemma_sandbox.questions")
  local original_prompt = questions.prompt
  local asked, answer

  project.each(
    "mkdir -p src && git init -q . && printf 'one\\n' > src/a.txt && printf 'x\\n' > .gitignore"
      .. " && printf 'EXAMPLE=1\\n' > .env.example"
      .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init",
    function(world)
      p = world
      proj = p.proj
      sandbox.setup({
        backend = "bwrap",
        policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
        sandboxes = { workspace = "clone" },
      })
      asked, answer = {}, "deny"
      questions.reset()
      questions.prompt = function(question, respond)
        asked[#asked + 1] = question
        vim.schedule(function()
          respond(answer)
        end)
        return function() end
      end
    end
  )
  after_each(function()
    questions.prompt = original_prompt
    questions.reset()
  end)

  local function git(args)
    local r = h.run(vim.list_extend({ "git", "-C", proj }, args))
    return r.stdout, r.code
  end

  --- A chat whose copy holds a commit of the model's and work not committed.
  local function chat_with_work(file)
    local bufnr = n.open_chat(p.dir .. "/" .. (file or "a.chat"), { "@You:", "hi" })
    local r = n.run_tool("bash", {
      command = "echo committed > c.txt && git add c.txt && git -c user.name=m -c user.email=m@m commit -qm 'the model'"
        .. " && echo 'one, changed' > src/a.txt && echo untracked > u.txt && echo ok",
    }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, vim.inspect(r))
    assert(project.synced())
    return bufnr
  end

  --- The one kept ref, checked to hold the copy's work in the user's own
  --- objects, and brought back with git restore.
  local function assert_kept(said)
    local refs = git({ "for-each-ref", "--format=%(refname)", "refs/flemma-sandbox/discarded/" })
    local ref = vim.trim(refs)
    assert.matches("^refs/flemma%-sandbox/discarded/[^/\n]+/%d+T%d+Z$", ref)
    assert.truthy(said:find(ref, 1, true), said)
    assert.matches("git restore %-%-source=" .. vim.pesc(ref) .. " %-%- PATH", said)
    assert.are.equal("untracked\n", git({ "show", ref .. ":u.txt" }))
    assert.are.equal("one, changed\n", git({ "show", ref .. ":src/a.txt" }))
    assert.matches("the model\n", git({ "log", "--format=%s", ref }))
    -- the user's repository borrows no objects from anywhere
    assert.is_nil(h.read(proj .. "/.git/objects/info/alternates"))
    local _, code = git({ "fsck", "--no-dangling", "--connectivity-only" })
    assert.are.equal(0, code)
    local _, restored = git({ "restore", "--source=" .. ref, "--", "u.txt", "c.txt", "src/a.txt" })
    assert.are.equal(0, restored)
    assert.are.equal("untracked\n", h.read(proj .. "/u.txt"))
    assert.are.equal("committed\n", h.read(proj .. "/c.txt"))
    assert.are.equal("one, changed\n", h.read(proj .. "/src/a.txt"))
    return ref
  end

  --- What an action said: its notices and the messages (the how-to's
  --- window is an echo kept in :messages without a screen).
  local function notes_of(action)
    vim.cmd("messages clear")
    local notes, restore = n.capture_notify()
    action()
    local ok = vim.wait(30000, function()
      n.flush_notices()
      for _, note in ipairs(notes) do
        if
          note.msg:match("discarded the chat's copy")
          or note.msg:match("removed %d")
          or note.msg:match("not ")
          or note.msg:match("nothing to")
        then
          return true
        end
      end
      return false
    end, 20)
    restore()
    local all = {}
    for _, note in ipairs(notes) do
      all[#all + 1] = note.msg
    end
    assert(ok, vim.inspect(all))
    n.flush_notices()
    all[#all + 1] = vim.fn.execute("messages")
    return table.concat(all, "\n")
  end

  it("discard asks first; no keeps the copy; yes keeps its commits and uncommitted work under a ref", function()
    local bufnr = chat_with_work()
    local clone = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1].clone
    local state = project.repo_state(proj, "refs/heads refs/tags")
    local commands = require("flemma_sandbox.nvim.commands")
    local said = notes_of(function()
      commands.actions.discard(bufnr)
    end)
    assert.are.equal(1, #asked)
    assert.matches("Discard this chat's copy", asked[1].title)
    assert.matches("not discarded", said)
    assert.are.equal(1, vim.fn.isdirectory(clone))
    assert.are.equal("", git({ "for-each-ref", "refs/flemma-sandbox/" }))
    answer = "once"
    said = notes_of(function()
      commands.actions.discard(bufnr)
    end)
    assert.are.equal(2, #asked)
    assert.are.equal(0, vim.fn.isdirectory(clone))
    -- the user's index, status, branches and HEAD as they were
    assert.are.equal(state, project.repo_state(proj, "refs/heads refs/tags"))
    assert_kept(said)
  end)

  it("discard! asks nothing and keeps the work too", function()
    local bufnr = chat_with_work()
    local said = notes_of(function()
      require("flemma_sandbox.nvim.commands").actions.discard(bufnr, nil, true)
    end)
    assert.are.equal(0, #asked)
    assert_kept(said)
  end)

  it("discard keeps what the sync held back too (a commit deleting a file the copy hides)", function()
    local bufnr = n.open_chat(p.dir .. "/a.chat", { "@You:", "hi" })
    local r = n.run_tool("bash", {
      command = "git update-index --force-remove .env.example && echo three > c.txt && git add -A"
        .. " && git -c user.name=m -c user.email=m@m commit -qm held && echo after > after.txt && echo ok",
    }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, vim.inspect(r))
    assert(project.synced())
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    -- control: the sync did not publish it
    assert.is_nil(git({ "log", "--format=%s", "refs/remotes/sandbox-" .. chat .. "/master" }):find("held", 1, true))
    local said = notes_of(function()
      require("flemma_sandbox.nvim.commands").actions.discard(bufnr, nil, true)
    end)
    local ref = vim.trim(git({ "for-each-ref", "--format=%(refname)", "refs/flemma-sandbox/discarded/" }))
    assert.truthy(said:find(ref, 1, true), said)
    assert.matches("held\n", git({ "log", "--format=%s", ref }))
    assert.are.equal("after\n", git({ "show", ref .. ":after.txt" }))
    assert.are.equal("three\n", git({ "show", ref .. ":c.txt" }))
    assert.are.equal("EXAMPLE=1\n", h.read(proj .. "/.env.example"))
    assert.are.equal("", git({ "for-each-ref", "refs/flemma-sandbox/keeping/" }))
  end)

  it("a copy with nothing of its own keeps nothing", function()
    local bufnr = n.open_chat(p.dir .. "/a.chat", { "@You:", "hi" })
    local r = n.run_tool("bash", { command = "cat src/a.txt" }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, vim.inspect(r))
    assert(project.synced())
    local clone = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1].clone
    assert.are.equal(1, vim.fn.isdirectory(clone))
    local said = notes_of(function()
      require("flemma_sandbox.nvim.commands").actions.discard(bufnr)
    end)
    assert.are.equal(0, #asked)
    assert.are.equal(0, vim.fn.isdirectory(clone))
    assert.is_nil(said:find("kept", 1, true), said)
    assert.are.equal("", git({ "for-each-ref", "refs/flemma-sandbox/" }))
  end)

  it("delete! keeps the copy's work; reset leaves the copy as it is", function()
    local bufnr = chat_with_work()
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr)
    local clone = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1].clone
    local commands = require("flemma_sandbox.nvim.commands")
    notes_of(function()
      commands.actions.reset(bufnr)
    end)
    assert.are.equal("untracked\n", h.read(clone .. "/u.txt"))
    assert.are.equal("", git({ "for-each-ref", "refs/flemma-sandbox/" }))
    local said = notes_of(function()
      commands.actions.delete(bufnr, chat.name, true)
    end)
    assert.are.equal(0, vim.fn.isdirectory(chat.dir))
    assert_kept(said)
  end)

  it("gc keeps the work of a chat whose file is gone, and prunes kept work older than 14 days", function()
    local bufnr = chat_with_work("gone.chat")
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr)
    vim.cmd("bwipeout! " .. bufnr)
    os.remove(p.dir .. "/gone.chat")
    local head = vim.trim(git({ "rev-parse", "HEAD" }))
    local old = "refs/flemma-sandbox/discarded/old/" .. os.date("!%Y%m%dT%H%M%SZ", os.time() - 15 * 86400)
    local recent = "refs/flemma-sandbox/discarded/recent/" .. os.date("!%Y%m%dT%H%M%SZ", os.time() - 13 * 86400)
    git({ "update-ref", old, head })
    git({ "update-ref", recent, head })
    -- gc prunes what is older than 14 days, and refuses to remove the copy
    -- while it holds work not applied; gc! removes it
    local notes, restore = n.capture_notify()
    require("flemma_sandbox.nvim.commands").actions.gc(0)
    n.flush_notices()
    restore()
    assert.matches("pruned 1 ref%(s%) of discarded work", notes[1].msg)
    assert.are.equal(1, vim.fn.isdirectory(chat.dir))
    local left = git({ "for-each-ref", "--format=%(refname)", "refs/flemma-sandbox/discarded/" })
    assert.is_nil(left:find(old, 1, true))
    assert.truthy(left:find(recent, 1, true))
    local said = notes_of(function()
      require("flemma_sandbox.nvim.commands").actions.gc(0, nil, true)
    end)
    assert.are.equal(0, vim.fn.isdirectory(chat.dir))
    git({ "update-ref", "-d", recent })
    assert_kept(said)
    -- a second gc: what is kept now is not older than 14 days
    said = notes_of(function()
      require("flemma_sandbox.nvim.commands").actions.gc(0)
    end)
    assert.is_nil(said:find("pruned"))
    assert.matches("refs/flemma%-sandbox/discarded/", git({ "for-each-ref", "refs/flemma-sandbox/" }))
  end)

  it("control: without the keeping, the copy's work is gone with it", function()
    local bufnr = chat_with_work()
    local keep = require("flemma_sandbox.backends.workspace_keep")
    local real = keep.keep
    keep.keep = function(_, _, done)
      done(nil, nil)
    end
    local ok, err = pcall(function()
      local wip = vim.trim(git({
        "rev-parse",
        "refs/remotes/sandbox-" .. require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name .. "/wip",
      }))
      notes_of(function()
        require("flemma_sandbox.nvim.commands").actions.discard(bufnr, nil, true)
      end)
      assert.are.equal("", git({ "for-each-ref", "refs/flemma-sandbox/" }))
      -- nothing names it any more: it is unreachable, gone at git's next gc
      local reachable = git({ "rev-list", "--all" })
      assert.is_nil(reachable:find(wip, 1, true))
    end)
    keep.keep = real
    assert(ok, err)
  end)
end)
