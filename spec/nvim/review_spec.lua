--- review.apply_one (clone mode's apply, one change at a time) on the
--- cases a chat's copy can bring: what it takes, merges, leaves for the
--- user, and what it never writes (a path out of the tree or through a
--- link, a link itself, a protected name, a binary clash).
local h = require("support.helpers")
local review = require("flemma_sandbox.api.review")

describe("review.apply_one", function()
  local dir, top

  --- A blob in the user's repository; its id.
  local function blob(content)
    local f = os.tmpname()
    h.write(f, content)
    local out = h.run({ "git", "-C", top, "hash-object", "-w", f })
    os.remove(f)
    return vim.trim(out.stdout)
  end

  local ZERO = string.rep("0", 40)

  local function change(path, status, old, new, new_mode)
    return {
      top = top,
      path = path,
      status = status,
      old_mode = old and "100644" or "000000",
      new_mode = new and (new_mode or "100644") or "000000",
      old_oid = old and blob(old) or ZERO,
      new_oid = new and blob(new) or ZERO,
      remote = "refs/remotes/sandbox-x",
    }
  end

  local function apply(c, writable)
    local out = { applied = {}, conflicts = {}, skipped = {} }
    review.apply_one(c, writable or function()
      return true
    end, out)
    return out
  end

  before_each(function()
    dir = h.tmpdir()
    top = dir .. "/proj"
    h.sh("git init -q " .. h.shell_quote(top))
  end)

  after_each(function()
    h.rmdir(dir)
  end)

  it("takes a new file with its mode, and a change to a file the user left as it was", function()
    local out = apply(change("bin/run.sh", "A", nil, "#!/bin/sh\n", "100755"))
    assert.are.same({ top .. "/bin/run.sh" }, out.applied)
    assert.are.equal("#!/bin/sh\n", h.read(top .. "/bin/run.sh"))
    assert.are.equal(1, vim.fn.executable(top .. "/bin/run.sh"))
    h.write(top .. "/a.txt", "base\n")
    apply(change("a.txt", "M", "base\n", "theirs\n"))
    assert.are.equal("theirs\n", h.read(top .. "/a.txt"))
  end)

  it("merges three-way where both changed, with markers on a clash; keeps a file the user changed on delete", function()
    h.write(top .. "/m.txt", "1\n2 user\n3\n4\n5\n")
    local out = apply(change("m.txt", "M", "1\n2\n3\n4\n5\n", "1\n2\n3\n4\n5 copy\n"))
    assert.are.equal("1\n2 user\n3\n4\n5 copy\n", h.read(top .. "/m.txt"))
    assert.are.equal(0, #out.conflicts)
    h.write(top .. "/c.txt", "mine\n")
    out = apply(change("c.txt", "M", "base\n", "theirs\n"))
    assert.are.equal(1, #out.conflicts)
    -- a file left with markers is a conflict, not also "applied"
    assert.are.same({}, out.applied)
    assert.is_true(out.conflicts[1].written)
    assert.matches("<<<<<<< yours\nmine\n=======\ntheirs\n>>>>>>> sandbox\n", h.read(top .. "/c.txt"))
    h.write(top .. "/d.txt", "changed by the user\n")
    out = apply(change("d.txt", "D", "base\n", nil))
    assert.matches("deleted in the copy, changed by you", out.conflicts[1].text)
    assert.are.equal("changed by the user\n", h.read(top .. "/d.txt"))
    out = apply(change("gone.txt", "M", "base\n", "theirs\n"))
    assert.matches("deleted by you", out.conflicts[1].text)
    assert.is_nil(h.read(top .. "/gone.txt"))
  end)

  it("keeps the user's version of a binary both changed", function()
    h.write(top .. "/b.bin", "mine\0bin")
    local out = apply(change("b.bin", "M", "base\0bin", "theirs\0bin"))
    assert.matches("cannot merge", out.conflicts[1].text)
    assert.are.equal("mine\0bin", h.read(top .. "/b.bin"))
  end)

  it("never writes out of the tree, through a link, a link itself or a protected name", function()
    local outside = dir .. "/outside"
    h.sh(
      "mkdir -p "
        .. h.shell_quote(outside)
        .. " && ln -s "
        .. h.shell_quote(outside)
        .. " "
        .. h.shell_quote(top .. "/out")
    )
    local out = apply(change("out/x.txt", "A", nil, "x\n"))
    assert.matches("through a link", out.skipped[1].text)
    assert.is_nil(h.read(outside .. "/x.txt"))
    -- control: the path does lead outside
    h.write(top .. "/out/probe.txt", "p")
    assert.are.equal("p", h.read(outside .. "/probe.txt"))
    out = apply(change("../escape.txt", "A", nil, "x\n"))
    assert.matches("out of the repository", out.skipped[1].text)
    assert.is_nil(h.read(dir .. "/escape.txt"))
    out = apply(change(".git/hooks/post-checkout", "A", nil, "x\n"))
    assert.matches("out of the repository", out.skipped[1].text)
    local link = change("l", "A", nil, "/etc/passwd", "120000")
    out = apply(link)
    assert.matches("a link", out.skipped[1].text)
    out = apply(change(".envrc", "A", nil, "echo hi\n"), function()
      return false, "protected (deny_write .envrc)"
    end)
    assert.matches("protected", out.skipped[1].text)
    assert.is_nil(h.read(top .. "/.envrc"))
  end)
end)
