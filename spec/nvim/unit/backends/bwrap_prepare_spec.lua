--- backends/bwrap_prepare.lua (run in Neovim, real bwrap and git): the
--- step before a call's wrap makes the chat's own folders (folders, never
--- through a link), clone mode's copies, and knows the chat's live
--- sandbox folder only when its calls share one.
local clone_plan = require("flemma_sandbox.policy.clone_plan")
local copies = require("flemma_sandbox.backends.workspace_copies")
local h = require("support.helpers")
local prepare = require("flemma_sandbox.backends.bwrap_prepare")

describe("backends.bwrap_prepare", function()
  local dir, top, chat, old_cache

  before_each(function()
    dir = h.tmpdir()
    old_cache = vim.env.XDG_CACHE_HOME
    vim.env.XDG_CACHE_HOME = dir .. "/cache"
    top = dir .. "/proj"
    chat = { dir = dir .. "/cache/flemma-sandbox/proj-1/c1", name = "c1", project = top, chat = top .. "/a.chat" }
    h.sh(
      "mkdir -p "
        .. h.shell_quote(top)
        .. " && cd "
        .. h.shell_quote(top)
        .. " && git init -q . && printf 'one\\n' > a.txt"
        .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
    )
  end)

  after_each(function()
    vim.env.XDG_CACHE_HOME = old_cache
    h.rmdir(dir)
  end)

  it("makes the chat's own folders and clone mode's copy before the wrap", function()
    local space = { top = top, clone = clone_plan.clone_for(chat.dir, top) }
    local plan = { chat = chat, persist_subs = { "tmp", "home" }, workspaces = { space }, deny_paths = {} }
    assert.is_false(copies.exists(space.clone), "control: no copy before")
    local prepared, err = prepare.prepare(plan, { path = vim.fn.exepath("bwrap") })
    assert.is_nil(err)
    assert.are.same({}, prepared, "no chat's sandbox was stopped")
    assert.are.equal(1, vim.fn.isdirectory(chat.dir .. "/tmp"))
    assert.are.equal(1, vim.fn.isdirectory(chat.dir .. "/home"))
    assert.are.equal(top .. "/a.chat\n", h.read(chat.dir .. "/.chat"))
    assert.is_true(copies.exists(space.clone))
    assert.are.equal("one\n", h.read(space.clone .. "/a.txt"))
  end)

  it("refuses a chat's folder reached through a link", function()
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/elsewhere") .. " " .. h.shell_quote(dir .. "/cache/flemma-sandbox"))
    h.sh("ln -s " .. h.shell_quote(dir .. "/elsewhere") .. " " .. h.shell_quote(dir .. "/cache/flemma-sandbox/proj-1"))
    local prepared, err = prepare.prepare({ chat = chat, persist_subs = { "tmp" } }, {})
    assert.is_nil(prepared)
    assert.matches("is not a folder %(a link%?%)", err)
    -- nothing was made through the link (the folders were made first, and
    -- checked after, before make_dirs_beneath)
    assert.are.same({}, vim.fn.readdir(dir .. "/elsewhere"))
  end)

  it("names the chat's live sandbox folder only when its calls share one", function()
    assert.are.same({}, { prepare.live_dir({ chat = chat, sandboxes = { live = false } }) })
    assert.are.same({}, { prepare.live_dir({ sandboxes = { live = true } }) }, "no chat: no live sandbox")
    local live_dir, err = prepare.live_dir({ chat = chat, sandboxes = { live = true } })
    assert.is_nil(err)
    assert.is_string(live_dir)
  end)
end)
