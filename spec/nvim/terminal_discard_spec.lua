--- Clone mode's discard seen in a real terminal (tmux, 80x24): when the
--- chat's copy has work not applied, :FlemmaSandbox discard asks in the
--- question window; deny keeps the copy (control: it is still there),
--- approve throws it away and shows the ref that keeps its work, which
--- git gets the file back from.
local h = require("support.helpers")
local tmux = require("support.tmux")

describe("clone mode's discard in a real terminal", function()
  local t, term
  before_each(function()
    t = h.tmpdir()
    term = tmux.new("flemma-discard")
  end)
  after_each(function()
    term:kill()
    h.rmdir(t)
  end)

  it("80x24: discard asks; deny keeps the copy; approve discards it and shows the kept ref", function()
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
    local function copy_there()
      local found = vim.fn.glob(t .. "/home/.cache/flemma-sandbox/*/*/workspace/*/.git", false, true)
      return #found > 0
    end
    assert.is_true(copy_there())
    term:keys(":FlemmaSandbox discard", "Enter")
    local shown = term:wait_for("Discard this chat's copy")
    assert.truthy(shown:find("Work not applied", 1, true), shown)
    assert.truthy(shown:find("approve", 1, true), shown)
    term:keys(":FlemmaSandbox deny", "Enter")
    term:wait_for("not discarded")
    assert.is_true(copy_there(), "deny keeps the copy")
    assert.are.equal("", h.run({ "git", "-C", proj, "for-each-ref", "refs/flemma-sandbox/" }).stdout)
    term:keys(":FlemmaSandbox discard", "Enter")
    term:wait_for("Discard this chat's copy")
    term:keys(":FlemmaSandbox approve", "Enter")
    shown = term:wait_for("restore --source=")
    assert.truthy(shown:find("refs/flemma-sandbox/discarded/", 1, true), shown)
    assert.is_false(copy_there())
    local ref = vim.trim(
      h.run({ "git", "-C", proj, "for-each-ref", "--format=%(refname)", "refs/flemma-sandbox/discarded/" }).stdout
    )
    assert.are.equal("made\n", h.run({ "git", "-C", proj, "show", ref .. ":new.txt" }).stdout)
    assert.are.equal("the model changed this line\n", h.run({ "git", "-C", proj, "show", ref .. ":a.txt" }).stdout)
    assert.are.equal("the user wrote this line\n", h.read(proj .. "/a.txt"), "nothing written into the tree")
  end)
end)
