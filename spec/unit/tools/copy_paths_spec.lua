--- tools/copy_paths.lua: in clone mode a path at a repository's path names
--- the chat's copy's file; what it resolves to must stay in the copy, and
--- paths are shown as the sandbox sees them.
local copy_paths = require("flemma_sandbox.tools.copy_paths")
local h = require("support.helpers")

describe("tools.copy_paths", function()
  local dir, copies

  before_each(function()
    dir = h.tmpdir()
    os.execute("mkdir -p " .. dir .. "/clone/src " .. dir .. "/user/src " .. dir .. "/other")
    copies = { { top = dir .. "/user", clone = dir .. "/clone" } }
  end)

  after_each(function()
    h.rmdir(dir)
  end)

  it("finds the copy a path is in by its top, and none beside it", function()
    assert.are.equal(copies[1], copy_paths.copy_at(copies, dir .. "/user/src/a.c"))
    assert.are.equal(copies[1], copy_paths.copy_at(copies, dir .. "/user"))
    assert.is_nil(copy_paths.copy_at(copies, dir .. "/user2/a.c"))
    assert.is_nil(copy_paths.copy_at(nil, dir .. "/user/a.c"))
  end)

  it("finds the copy a host path is in by its clone folder", function()
    assert.are.equal(copies[1], copy_paths.copy_holding(copies, dir .. "/clone/src"))
    assert.is_nil(copy_paths.copy_holding(copies, dir .. "/user/src"))
    assert.is_nil(copy_paths.copy_holding({}, dir .. "/clone"))
  end)

  it("resolves a path at the repository's path to the copy's file", function()
    assert.are.equal(dir .. "/clone/src/a.c", copy_paths.resolve(copies[1], dir .. "/user/src/a.c"))
    assert.are.equal(dir .. "/clone", copy_paths.resolve(copies[1], dir .. "/user"))
  end)

  it("follows a link inside the copy", function()
    os.execute("ln -s src " .. dir .. "/clone/alias")
    assert.are.equal(dir .. "/clone/src/a.c", copy_paths.resolve(copies[1], dir .. "/user/alias/a.c"))
  end)

  it("refuses a link the sandbox made out of the copy, to the user's tree or anywhere, naming the path", function()
    os.execute("ln -s " .. dir .. "/user/src " .. dir .. "/clone/to-user")
    os.execute("ln -s " .. dir .. "/other " .. dir .. "/clone/away")
    local real, err = copy_paths.resolve(copies[1], dir .. "/user/to-user/a.c")
    assert.is_nil(real)
    assert.are.equal(dir .. "/user/to-user/a.c leads out of the chat's copy (a link): refused", err)
    real, err = copy_paths.resolve(copies[1], dir .. "/user/away")
    assert.is_nil(real)
    assert.are.equal(dir .. "/user/away leads out of the chat's copy (a link): refused", err)
  end)

  it("refuses .. that climbs out of the copy", function()
    local real, err = copy_paths.resolve(copies[1], dir .. "/user/../other/x")
    assert.is_nil(real)
    assert.matches("leads out of the chat's copy", err)
  end)

  it("shows a copy's path at the repository's path and any other path as it is", function()
    assert.are.equal(dir .. "/user/src/a.c", copy_paths.as_seen(copies, dir .. "/clone/src/a.c"))
    assert.are.equal(dir .. "/user", copy_paths.as_seen(copies, dir .. "/clone"))
    assert.are.equal(dir .. "/other/x", copy_paths.as_seen(copies, dir .. "/other/x"))
    assert.are.equal("/etc/passwd", copy_paths.as_seen(nil, "/etc/passwd"))
  end)
end)
