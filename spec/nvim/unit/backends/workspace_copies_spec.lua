--- backends/workspace_copies.lua (run in Neovim, real bwrap and git):
--- clone mode's copy of a repository is made in the chat's folder (now or
--- in the background, once for calls that ask together), holds the
--- user's tree and leaves it as it was; the view shows it at the
--- repository's path; a sync brings its work to the user's repository
--- as refs/remotes/sandbox-NAME/*.
local copies = require("flemma_sandbox.backends.workspace_copies")
local clone_plan = require("flemma_sandbox.policy.clone_plan")
local h = require("support.helpers")
local n = require("support.nvim")

describe("backends.workspace_copies", function()
  local dir, top, chat, space, spec

  local function git(args)
    return vim.trim(vim.fn.system(vim.list_extend({ "git", "-C", top }, args)))
  end

  before_each(function()
    dir = h.tmpdir()
    top, chat = dir .. "/proj", dir .. "/chat"
    h.sh(
      "mkdir -p "
        .. h.shell_quote(top .. "/src")
        .. " "
        .. h.shell_quote(chat)
        .. " && cd "
        .. h.shell_quote(top)
        .. " && git init -q . && printf 'one\\n' > src/a.txt && printf 'SECRET=1\\n' > .env"
        .. " && git add src && git -c user.name=u -c user.email=u@e commit -qm init"
        .. " && printf 'one, modified\\n' > src/a.txt && printf 'new\\n' > notes.txt"
    )
    space = { top = top, clone = clone_plan.clone_for(chat, top) }
    spec = copies.spec(space, { deny_paths = {}, secret_scan = { patterns = { ".env*" } } }, vim.fn.exepath("bwrap"))
  end)

  after_each(function()
    h.rmdir(dir)
  end)

  it("makes a copy of the tree as the user has it, and leaves the user's repository as it was", function()
    local status, head = git({ "status", "--porcelain" }), git({ "rev-parse", "HEAD" })
    assert.is_false(copies.exists(space.clone))
    assert.is_true(copies.ensure_now(spec))
    assert.is_true(copies.exists(space.clone))
    assert.are.equal("one, modified\n", h.read(space.clone .. "/src/a.txt"))
    assert.are.equal("new\n", h.read(space.clone .. "/notes.txt"))
    assert.is_nil(h.read(space.clone .. "/.env"), "a secret file is not copied")
    assert.are.equal(status, git({ "status", "--porcelain" }))
    assert.are.equal(head, git({ "rev-parse", "HEAD" }))
    assert.is_true(copies.ensure_now(spec), "a copy that is there is kept")
  end)

  it("makes one copy in the background for calls that ask together", function()
    local got = {}
    for i = 1, 2 do
      copies.ensure(spec, function(err)
        got[i] = err or "ok"
      end)
    end
    assert.is_true(vim.wait(60000, function()
      return got[1] ~= nil and got[2] ~= nil
    end, 20))
    assert.are.same({ "ok", "ok" }, got)
    assert.are.equal("one, modified\n", h.read(space.clone .. "/src/a.txt"))
  end)

  it("shows the copy at the repository's path in the view (real bwrap)", function()
    assert.is_true(copies.ensure_now(spec))
    h.write(space.clone .. "/src/a.txt", "the copy's\n")
    local argv = { "bwrap" }
    vim.list_extend(argv, copies.view_options({ space }, false))
    vim.list_extend(argv, { "--", "cat", top .. "/src/a.txt" })
    local out = vim.fn.system(argv)
    assert.are.equal(0, vim.v.shell_error, out)
    assert.are.equal("the copy's\n", out)
    assert.are.equal("one, modified\n", h.read(top .. "/src/a.txt"))
  end)

  it("syncs the copy's work to the user's repository as the chat's remote refs", function()
    assert.is_true(copies.ensure_now(spec))
    h.write(space.clone .. "/src/a.txt", "the copy's\n")
    assert.is_nil(n.sync_copy(spec, "c1"))
    assert.are.equal("the copy's", git({ "show", "refs/remotes/sandbox-c1/wip:src/a.txt" }))
    assert.are.equal("one, modified\n", h.read(top .. "/src/a.txt"), "the user's tree is not written")
  end)
end)
