--- core.read_beneath and core.entries_beneath: what host-side UI code reads
--- and lists in a folder a sandbox can write, never following a link and
--- never opening a FIFO or a device.
local core = require("flemma_sandbox.core")
local h = require("support.helpers")

describe("core.read_beneath / entries_beneath", function()
  local dir
  before_each(function()
    dir = core.resolve(h.tmpdir())
  end)
  after_each(function()
    h.rmdir(dir)
  end)

  it("reads a regular file below the root, and says what else it met", function()
    os.execute("mkdir -p '" .. dir .. "/a/b' && printf 'hi' >'" .. dir .. "/a/b/f'")
    assert.are.equal("hi", core.read_beneath(dir, dir .. "/a/b/f"))
    local data, err, word = core.read_beneath(dir, dir .. "/a/none")
    assert.is_nil(data)
    assert.truthy(err:find("/a/none", 1, true))
    assert.are.equal("missing", word)
    local _
    _, _, word = core.read_beneath(dir, dir .. "/a")
    assert.are.equal("special", word, "a folder is no regular file")
    data, _, word = core.read_beneath(dir, dir .. "/a/b/f", 1)
    assert.is_nil(data)
    assert.are.equal("error", word, "over max_bytes")
  end)

  it("never follows a link, on the way or at the end, nor leaves the root", function()
    os.execute("mkdir -p '" .. dir .. "/in' '" .. dir .. "/out' && printf 'secret' >'" .. dir .. "/out/s'")
    os.execute("ln -s ../out '" .. dir .. "/in/way' && ln -s ../out/s '" .. dir .. "/in/end'")
    -- control: a plain read through those links reaches the file
    assert.are.equal("secret", h.read(dir .. "/in/way/s"))
    local root = dir .. "/in"
    for _, path in ipairs({ root .. "/way/s", root .. "/end", root .. "/../out/s" }) do
      local data, _, word = core.read_beneath(root, path)
      assert.is_nil(data, path)
      assert.are.equal("link", word, path)
    end
    local list, _, word = core.entries_beneath(root, root .. "/way")
    assert.is_nil(list)
    assert.are.equal("link", word)
    list = core.entries_beneath(root, root)
    assert.are.same({ way = "link", ["end"] = "link" }, list)
  end)

  it("refuses a FIFO without blocking, and lists one as a fifo", function()
    h.sh("mkfifo '" .. dir .. "/p'")
    local t0 = os.time()
    local data, _, word = core.read_beneath(dir, dir .. "/p")
    assert.is_nil(data)
    assert.are.equal("special", word)
    assert.is_true(os.time() - t0 <= 1)
    assert.are.same({ p = "fifo" }, core.entries_beneath(dir, dir))
    local _, _, w = core.entries_beneath(dir, dir .. "/p")
    assert.are.equal("special", w)
  end)

  it("names bad arguments", function()
    assert.has_error(function()
      core.read_beneath("rel", dir)
    end)
    assert.has_error(function()
      core.entries_beneath(dir, 3)
    end)
  end)
end)

describe("core.make_dirs_beneath", function()
  local dir
  before_each(function()
    dir = core.resolve(h.tmpdir())
  end)
  after_each(function()
    h.rmdir(dir)
  end)

  --- The mode bits of a path, in octal digits.
  local function mode_of(path)
    return h.capture("stat -c %a " .. h.shell_quote(path)):gsub("%s", "")
  end

  it("makes each folder below the root with the mode, and keeps what is there", function()
    assert.is_true(core.make_dirs_beneath(dir, "a/b/c", 448))
    assert.are.equal("700", mode_of(dir .. "/a/b/c"))
    assert.are.equal("700", mode_of(dir .. "/a"))
    h.write(dir .. "/a/b/kept", "x")
    assert.is_true(core.make_dirs_beneath(dir, "a/b"))
    assert.are.equal("x", h.read(dir .. "/a/b/kept"))
  end)

  it("refuses a link on the way or at the end, and makes nothing through it", function()
    os.execute("mkdir -p '" .. dir .. "/elsewhere' '" .. dir .. "/root' && ln -s ../elsewhere '" .. dir .. "/root/l'")
    for _, rel in ipairs({ "l", "l/x", "l/x/y" }) do
      local ok, err, word = core.make_dirs_beneath(dir .. "/root", rel)
      assert.is_nil(ok, rel)
      assert.truthy(err:find("is not a folder (a link?)", 1, true), err)
      assert.are.equal("link", word)
    end
    assert.are.equal("", h.capture("ls -A " .. h.shell_quote(dir .. "/elsewhere")))
    -- control: the same path with mkdir -p goes through the link
    os.execute("mkdir -p '" .. dir .. "/root/l/x'")
    assert.are.equal("x\n", h.capture("ls -A " .. h.shell_quote(dir .. "/elsewhere")))
  end)

  it("names bad arguments", function()
    assert.has_error(function()
      core.make_dirs_beneath("relative", "a")
    end)
    for _, rel in ipairs({ "/abs", "", "a/../b", "./a", "a//b" }) do
      assert.has_error(function()
        core.make_dirs_beneath(dir, rel)
      end, nil, rel)
    end
  end)
end)
