local core = require("flemma_sandbox.core")
local h = require("support.helpers")

describe("core.normalize", function()
  local cases = {
    { "/", "/" },
    { "//", "/" },
    { "/a/b/", "/a/b" },
    { "/a//b///c", "/a/b/c" },
    { "/a/./b/.", "/a/b" },
    { "/a/../b", "/b" },
    { "/a/b/../../..", "/" },
    { "/../../etc", "/etc" },
    { "a/b/..", "a" },
    { "./", "." },
    { "a/..", "." },
    { "../a", "../a" },
    { "a/../../b", "../b" },
    { "../../x/../y", "../../y" },
  }
  for _, c in ipairs(cases) do
    it(string.format("%q -> %q", c[1], c[2]), function()
      assert.are.equal(c[2], core.normalize(c[1]))
    end)
  end

  it("rejects an empty path with nil, err", function()
    local out, err = core.normalize("")
    assert.is_nil(out)
    assert.matches("empty", err)
  end)

  it("rejects an embedded NUL byte", function()
    local out, err = core.normalize("/a\0/b")
    assert.is_nil(out)
    assert.matches("NUL", err)
  end)

  it("handles a 4096-byte path and 10000 '..' components", function()
    local long = "/" .. string.rep("a", 4095)
    assert.are.equal(long, core.normalize(long))
    assert.are.equal("/", core.normalize(string.rep("/..", 10000)))
    assert.are.equal(string.rep("../", 9999) .. "..", core.normalize(string.rep("../", 10000)))
  end)

  it("raises on a wrong argument type, naming the argument", function()
    assert.has_error(function()
      core.normalize(nil)
    end, "bad argument #1 to 'normalize' (path: string expected, got nil)")
    assert.has_error(function()
      core.normalize({})
    end)
  end)
end)

describe("core.absolute", function()
  it("joins a relative path to cwd and normalizes", function()
    assert.are.equal("/home/u/x", core.absolute("x", "/home/u"))
    assert.are.equal("/home/x", core.absolute("../x", "/home/u/"))
    assert.are.equal("/a", core.absolute("/a/b/..", "/ignored"))
    assert.are.equal("/a", core.absolute("/a"))
  end)

  it("needs an absolute cwd for a relative path", function()
    local out, err = core.absolute("x", "rel")
    assert.is_nil(out)
    assert.matches("cwd must be an absolute path", err)
    assert.is_nil((core.absolute("x")))
  end)
end)

describe("core.resolve", function()
  local dir
  before_each(function()
    dir = h.tmpdir()
    h.sh(table.concat({
      "cd " .. h.shell_quote(dir),
      "mkdir -p proj real/deep other",
      "ln -s ../real proj/link",
      "ln -s " .. h.shell_quote(dir .. "/other/bashrc") .. " proj/dangling",
      "ln -s loop proj/loop",
      "ln -s real/deep proj2",
      "echo x > file",
    }, " && "))
  end)
  after_each(function()
    h.rmdir(dir)
  end)

  it("returns an existing real path as is", function()
    assert.are.equal(dir .. "/proj", core.resolve(dir .. "/proj"))
  end)

  it("follows a symlink inside the path", function()
    assert.are.equal(dir .. "/real/deep", core.resolve(dir .. "/proj/link/deep"))
  end)

  it("appends a missing tail to the resolved prefix", function()
    assert.are.equal(dir .. "/real/new/file.txt", core.resolve(dir .. "/proj/link/new/file.txt"))
  end)

  it("follows a dangling symlink to where a write would land", function()
    assert.are.equal(dir .. "/other/bashrc", core.resolve(dir .. "/proj/dangling"))
  end)

  it("applies '..' after following a symlink, as the kernel does", function()
    -- proj2 -> real/deep, so proj2/.. is real, not the folder holding proj2
    assert.are.equal(dir .. "/real/x", core.resolve(dir .. "/proj2/../x"))
  end)

  it("resolves a relative path against cwd", function()
    assert.are.equal(dir .. "/real/y", core.resolve("link/y", dir .. "/proj"))
  end)

  it("reports a symlink loop", function()
    local out, err = core.resolve(dir .. "/proj/loop/x")
    assert.is_nil(out)
    assert.matches("too many levels of symbolic links", err)
  end)

  it("reports a path through a regular file", function()
    local out, err = core.resolve(dir .. "/file/x")
    assert.is_nil(out)
    assert.matches("Not a directory", err)
  end)

  it("keeps '..' above / at /", function()
    assert.are.equal("/etc", core.resolve("/../../etc"))
  end)

  it("rejects NUL bytes and survives very long paths", function()
    assert.is_nil((core.resolve(dir .. "/a\0b")))
    local long = dir .. "/missing/" .. string.rep("a/", 5000)
    local out, err = core.resolve(long)
    assert.is_true(type(out) == "string" or type(err) == "string")
    local too_long, err2 = core.resolve(dir .. "/" .. string.rep("b", 5000))
    assert.is_nil(too_long)
    assert.matches("too long", err2)
  end)
end)

describe("core.is_within", function()
  local cases = {
    { "/tmp", "/tmp", true },
    { "/tmp/x", "/tmp", true },
    { "/tmp/x/y", "/tmp/", true },
    { "/tmpfoo", "/tmp", false },
    { "/tmp", "/tmp/x", false },
    { "/anything", "/", true },
    { "/", "/", true },
    { "", "/", false },
    { "relative", "/", false },
    { "/tmp", "", false },
  }
  for _, c in ipairs(cases) do
    it(string.format("%q in %q is %s", c[1], c[2], tostring(c[3])), function()
      assert.are.equal(c[3], core.is_within(c[1], c[2]))
    end)
  end
end)

describe("core.dedupe", function()
  local cases = {
    { { "/tmp", "/tmp/x", "/tmp" }, { "/tmp" } },
    { { "/tmp/x", "/tmp" }, { "/tmp" } },
    { { "/b", "/a", "/b/c", "/a" }, { "/b", "/a" } },
    { { "/tmp/", "/tmp" }, { "/tmp" } },
    { { "/tmpfoo", "/tmp" }, { "/tmpfoo", "/tmp" } },
    { { "/x", "/", "/y" }, { "/" } },
    { {}, {} },
  }
  for _, c in ipairs(cases) do
    it(table.concat(c[1], ",") .. " -> " .. table.concat(c[2], ","), function()
      assert.are.same(c[2], core.dedupe(c[1]))
    end)
  end

  it("returns nil, err for bad data and raises for wrong types", function()
    local out, err = core.dedupe({ "/a", "/b\0" })
    assert.is_nil(out)
    assert.matches("NUL", err)
    assert.has_error(function()
      core.dedupe("/tmp")
    end)
    assert.has_error(function()
      core.dedupe({ "/a", 5 })
    end, "bad argument #1 to 'dedupe' (paths[2]: string expected, got number)")
  end)
end)

describe("core helpers", function()
  it("getcwd returns an absolute path", function()
    assert.matches("^/", core.getcwd())
  end)

  it("which finds programs on PATH and reports missing ones", function()
    assert.are.equal("/bin/sh", core.which("sh", "/nonexistent:/bin"))
    local out, err = core.which("no-such-program-flemma", "/bin:/usr/bin")
    assert.is_nil(out)
    assert.matches("not found", err)
    assert.are.equal("/bin/sh", core.which("/bin/sh"))
    assert.is_nil((core.which("/etc/passwd")))
  end)

  it("exists follows symlinks", function()
    assert.is_true(core.exists("/"))
    assert.is_false(core.exists("/no/such/path"))
    assert.is_false(core.exists("/a\0"))
  end)

  it("has a version", function()
    assert.matches("^%d+%.%d+%.%d+$", core.version)
  end)
end)

describe("core.sha256", function()
  -- FIPS 180-4's examples, and the empty string
  local cases = {
    { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
    { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
    {
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    },
    { string.rep("a", 1000000), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
  }
  for _, c in ipairs(cases) do
    it(string.format("%d bytes", #c[1]), function()
      assert.are.equal(c[2], core.sha256(c[1]))
    end)
  end

  it("gives sha256sum's digits at every length around a block's end", function()
    for _, n in ipairs({ 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129 }) do
      local text = string.rep("x", n - 1) .. "\0"
      local file = os.tmpname()
      local f = assert(io.open(file, "wb"))
      f:write(text)
      f:close()
      local want = h.capture("sha256sum < " .. h.shell_quote(file)):match("^(%x+)")
      os.remove(file)
      assert.are.equal(want, core.sha256(text), n .. " bytes")
    end
  end)

  it("raises on a wrong argument type, naming the argument", function()
    assert.has_error(function()
      core.sha256(nil)
    end, "bad argument #1 to 'sha256' (text: string expected, got nil)")
  end)
end)
