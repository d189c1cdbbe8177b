--- Clone mode's review seen in a real terminal (tmux, 80x24): after a
--- chat's call changed its copy, :FlemmaSandbox diff shows the user's file
--- beside the copy's version and the changes in the quickfix list; <CR>
--- on an entry and :cprev show that file on both sides, and a second diff
--- reuses the view's tab page; the user's file is as it was until
--- :FlemmaSandbox apply, which brings the change (control: the file
--- before apply).
local h = require("support.helpers")
local tmux = require("support.tmux")

describe("clone mode's review in a real terminal", function()
  local t, term
  before_each(function()
    t = h.tmpdir()
    term = tmux.new("flemma-review")
  end)
  after_each(function()
    term:kill()
    h.rmdir(t)
  end)

  it("80x24: diff shows both versions side by side and the list; apply brings the change", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local proj = t .. "/proj"
    h.sh(
      "mkdir -p "
        .. h.shell_quote(t .. "/home")
        .. " "
        .. h.shell_quote(proj)
        .. " && cd "
        .. h.shell_quote(proj)
        .. " && git init -q . && printf 'the user wrote this line\\n' > a.txt && git add -A"
        .. " && git -c user.name=u -c user.email=u@e commit -qm init"
    )
    h.write(proj .. "/a.chat", "@You:\nhi\n")
    h.write(
      t .. "/call.lua",
      "require('flemma_sandbox.tools').run('bash', { command = "
        .. "\"printf 'the model changed this line\\\\n' > a.txt && echo made > new.txt\" }, "
        .. "{ bufnr = vim.api.nvim_get_current_buf(), approved = true }, function() vim.g.ran = 1 end)\n"
    )
    local setup = {
      "require('flemma_sandbox').setup({ backend = 'bwrap', sandboxes = { workspace = 'clone' },",
      "  policy = { rw_paths = { '$CWD' }, network = false } })",
    }
    term:start(tmux.nvim_in_project(t, setup, "a.chat"), 80, 24)
    term:wait_for("a.chat")
    term:keys(":luafile " .. t .. "/call.lua", "Enter")
    -- the call's work reaches the user's repository as the chat's remote refs
    local synced = false
    for _ = 1, 150 do
      local refs = h.run({ "git", "-C", proj, "for-each-ref", "--format=%(refname)", "refs/remotes/" }).stdout
      if refs:find("/wip\n", 1, true) then
        synced = true
        break
      end
      vim.loop.sleep(100)
    end
    assert(synced, "the copy was not synced")
    assert.are.equal("the user wrote this line\n", h.read(proj .. "/a.txt"), "control: not applied yet")
    term:keys(":FlemmaSandbox diff", "Enter")
    local shown = term:wait_for("changed in the copy")
    assert.truthy(shown:find("the user wrote this line", 1, true), shown)
    assert.truthy(shown:find("the model changed this line", 1, true), shown)
    assert.truthy(shown:find("made in the copy", 1, true), shown)
    assert.is_nil(shown:find("Error", 1, true), shown)
    -- <CR> on the list's second entry: that file on both sides (the copy's
    -- side's name ends in it; the user has none yet)
    term:keys("G", "Enter")
    shown = term:wait_for("/new.txt ")
    assert.truthy(shown:find("/new.txt ", 1, true), shown)
    assert.truthy(shown:find("made", 1, true), shown)
    assert.is_nil(shown:find("the model changed this line", 1, true), shown)
    -- :cprev: the first one again, both sides
    term:keys(":cprev", "Enter")
    shown = term:wait_for("/a.txt ")
    assert.truthy(shown:find("the model changed this line", 1, true), shown)
    assert.truthy(shown:find("the user wrote this line", 1, true), shown)
    -- a second diff from the chat's tab page reuses the view's
    term:keys(":tabfirst | FlemmaSandbox diff", "Enter")
    term:wait_for("changed in the copy")
    term:keys(":echo 'tab pages: ' . tabpagenr('$') . ', in ' . tabpagenr()", "Enter")
    shown = term:wait_for("tab pages: ")
    assert.truthy(shown:find("tab pages: 2, in 2", 1, true), shown)
    term:keys(":FlemmaSandbox apply", "Enter")
    for _ = 1, 100 do
      if h.read(proj .. "/a.txt") == "the model changed this line\n" and h.read(proj .. "/new.txt") then
        break
      end
      vim.loop.sleep(100)
    end
    assert.are.equal("the model changed this line\n", h.read(proj .. "/a.txt"))
    assert.are.equal("made\n", h.read(proj .. "/new.txt"))
  end)
end)
