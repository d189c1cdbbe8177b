-- Clone mode under the real Flemma (FLEMMA_DIR): a chat's bash runs in
-- our backend on its copy, and Flemma's read, write, edit and ls act on the
-- copy too (flemma/clone_tools.lua); the user's tree, index, HEAD and status
-- stay as they were; the copy's work reaches the user's repository as
-- refs/remotes/sandbox-NAME/* only. Controls: the same calls in direct
-- mode reach the user's tree.
local h = require("support.helpers")
local flemma_chat = require("support.flemma_chat")
local project = require("support.project")

local execute, result_of = flemma_chat.execute, flemma_chat.result_of

local setup_flemma = flemma_chat.setup_flemma

local function synced()
  assert(vim.wait(20000, function()
    return require("flemma_sandbox.api.clone_mode").syncing == 0
  end, 20))
end

describe("clone mode under Flemma", function()
  local p
  flemma_chat.each_project(
    "git init -q . && printf 'one\\n' > a.txt && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
      .. " && printf 'one, modified\\n' > a.txt && printf 'untracked\\n' > notes.txt",
    function(world)
      p = world
    end,
    { settle = synced }
  )

  it("bash, write, edit, read and ls act on the chat's copy; the user's tree and repository stay", function()
    setup_flemma("clone")
    local proj, chat = p.proj, p.dir .. "/chats/c.chat"
    local before, state = project.manifest(proj, true), project.repo_state(proj, "refs/heads refs/tags")
    local text, bufnr = execute(chat, "bash", {
      label = "t",
      command = "cd "
        .. proj
        .. " && cat notes.txt && rm -rf * && echo model > new.txt && git add -A"
        .. " && git -c user.name=m -c user.email=m@m commit -qm model && echo committed",
      timeout = 30,
    })
    assert.matches("untracked\n.*committed", result_of(text))
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(bufnr), "\n")
    assert.matches("workspace:  clone: this chat works on its own copy of [^\n]*proj", status)
    text = execute(chat, "write", { label = "t", path = proj .. "/w.txt", content = "written\n" })
    assert.matches("Wrote 8 bytes", result_of(text))
    text = execute(chat, "edit", { label = "t", path = proj .. "/new.txt", oldText = "model", newText = "edited" })
    assert.matches("Edited", result_of(text))
    text = execute(chat, "read", { label = "t", path = proj .. "/new.txt" })
    assert.matches("edited", result_of(text))
    text = execute(chat, "ls", { label = "t", path = proj })
    assert.matches("new.txt\nw.txt", result_of(text))
    assert.is_nil(result_of(text):find("a.txt", 1, true), "ls lists the copy, where a.txt is gone")
    synced()
    assert.are.equal(before, project.manifest(proj, true))
    assert.are.equal(state, project.repo_state(proj, "refs/heads refs/tags"))
    -- the copy holds the work, and the user's repository its commit as a remote ref
    local name = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    local refs = h.run({ "git", "-C", proj, "for-each-ref", "--format=%(refname) %(subject)", "refs/remotes/" }).stdout
    assert.matches("refs/remotes/sandbox%-" .. vim.pesc(name) .. "/master model\n", refs)
    local changes
    require("flemma_sandbox.api.clone_mode").changes(bufnr, function(c)
      changes = c
    end)
    assert(vim.wait(20000, function()
      return changes ~= nil
    end, 20))
    local paths = {}
    for _, c in ipairs(changes) do
      paths[#paths + 1] = c.path
    end
    table.sort(paths)
    assert.are.same({ "a.txt", "new.txt", "notes.txt", "w.txt" }, paths)
    -- control: in direct mode the same write reaches the user's tree
    setup_flemma("direct")
    execute(p.dir .. "/chats/d.chat", "write", { label = "t", path = proj .. "/w.txt", content = "written\n" })
    assert.are.equal("written\n", h.read(proj .. "/w.txt"))
  end)

  it("refuses a write or read through a link planted in the copy (control: a plain write follows it)", function()
    setup_flemma("clone")
    local proj, chat = p.proj, p.dir .. "/chats/l.chat"
    local text = execute(chat, "bash", {
      label = "t",
      command = "cd "
        .. proj
        .. " && ln -s "
        .. proj
        .. "/notes.txt out && ln -s "
        .. vim.env.HOME
        .. " home"
        .. " && echo planted",
      timeout = 30,
    })
    assert.matches("planted", result_of(text))
    local _, bufnr = execute(chat, "write", { label = "t", path = proj .. "/out", content = "through\n" })
    assert.matches("leads out of the chat's copy", flemma_chat.error_result(bufnr))
    _, bufnr = execute(chat, "read", { label = "t", path = proj .. "/home/.cache" })
    assert.matches("leads out of the chat's copy", flemma_chat.error_result(bufnr))
    assert.are.equal("untracked\n", h.read(proj .. "/notes.txt"))
    -- control: the link in the copy does lead to the user's file
    local copy = require("flemma_sandbox.api.clone_mode").clone_of(bufnr, proj)
    assert(copy, "no copy")
    h.write(copy .. "/out", "through\n")
    assert.are.equal("through\n", h.read(proj .. "/notes.txt"))
  end)

  it("takes clone mode from a chat's frontmatter with no trust asked; another chat stays direct", function()
    setup_flemma("direct")
    local proj = p.proj
    local front = 'flemma.opt.sandbox.backends.flemma_sandbox = { sandboxes = { workspace = "clone" } }'
    local text = execute(
      p.dir .. "/chats/f.chat",
      "write",
      { label = "t", path = proj .. "/f.txt", content = "in the copy\n" },
      front
    )
    assert.matches("Wrote 12 bytes", result_of(text))
    assert.are.equal(0, vim.fn.filereadable(proj .. "/f.txt"), "the user's tree is not written")
    -- control: a chat without that frontmatter writes the user's tree
    execute(p.dir .. "/chats/g.chat", "write", { label = "t", path = proj .. "/f.txt", content = "direct\n" })
    assert.are.equal("direct\n", h.read(proj .. "/f.txt"))
  end)
end)
