--- backends/workspace_kept.lua (run in Neovim, real bwrap and git): the
--- copies kept in the chats' folders are found under a chat's folder or a
--- project's, each with its repository (the copy's origin); one whose
--- synced work differs from what it started from is unapplied until it
--- is marked applied; a link a sandbox planted is never walked.
local copies = require("flemma_sandbox.backends.workspace_copies")
local clone_plan = require("flemma_sandbox.policy.clone_plan")
local h = require("support.helpers")
local n = require("support.nvim")
local kept = require("flemma_sandbox.backends.workspace_kept")

describe("backends.workspace_kept", function()
  local dir, top, project_dir, chat, spec, old_cache

  local function sync()
    assert.is_nil(n.sync_copy(spec, "c1"))
  end

  before_each(function()
    dir = h.tmpdir()
    old_cache = vim.env.XDG_CACHE_HOME
    vim.env.XDG_CACHE_HOME = dir .. "/cache"
    top = dir .. "/proj"
    project_dir = dir .. "/cache/flemma-sandbox/proj-1"
    chat = project_dir .. "/c1"
    h.sh(
      "mkdir -p "
        .. h.shell_quote(top)
        .. " "
        .. h.shell_quote(chat)
        .. " && cd "
        .. h.shell_quote(top)
        .. " && git init -q . && printf 'one\\n' > a.txt"
        .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
    )
    local space = { top = top, clone = clone_plan.clone_for(chat, top) }
    spec = copies.spec(space, { deny_paths = {} }, vim.fn.exepath("bwrap"))
    assert.is_true(copies.ensure_now(spec))
  end)

  after_each(function()
    vim.env.XDG_CACHE_HOME = old_cache
    h.rmdir(dir)
  end)

  it("finds the copy under its chat's folder and under its project's, with its repository", function()
    local want = { { name = "c1", clone = spec.clone, top = top } }
    assert.are.same(want, kept.copies_under(chat))
    assert.are.same(want, kept.copies_under(project_dir))
    assert.are.same({}, kept.copies_under(dir), "a folder outside the chats' base holds no chat")
  end)

  it("lists a copy whose synced work is not applied, until it is marked applied (control: unchanged)", function()
    sync()
    assert.are.same({}, kept.unapplied_under(project_dir), "control: nothing changed in the copy")
    h.write(spec.clone .. "/a.txt", "the copy's\n")
    sync()
    assert.are.same({ "c1: the copy of " .. top }, kept.unapplied_under(project_dir))
    assert.is_true(copies.mark_applied(spec))
    sync()
    assert.are.same({}, kept.unapplied_under(project_dir))
  end)

  it("does not follow a link planted in a chat's folder, nor a copy whose repository is gone", function()
    h.sh("ln -s " .. h.shell_quote(chat) .. " " .. h.shell_quote(project_dir .. "/planted"))
    assert.are.same(
      { "c1" },
      vim.tbl_map(function(c)
        return c.name
      end, kept.copies_under(project_dir))
    )
    h.sh("rm -rf " .. h.shell_quote(top .. "/.git"))
    assert.are.same({}, kept.copies_under(chat))
  end)
end)
