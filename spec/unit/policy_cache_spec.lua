--- What the resolved-policy cache stands on: core.key, core.watch,
--- core.environ_hash, and cache.get/put ending an entry when (and only
--- when) a path it looked at comes, goes or, "/"-ended, changes inside.
local cache = require("flemma_sandbox.policy.cache")
local core = require("flemma_sandbox.core")
local h = require("support.helpers")

describe("core.key", function()
  it("gives equal policies one text whatever the order of their keys, and tells different ones apart", function()
    local a = core.key({ rw_paths = { "$CWD", "/x" }, network = false, limits = { processes = 10 } })
    local b = core.key({ limits = { processes = 10 }, network = false, rw_paths = { "$CWD", "/x" } })
    assert.are.equal(a, b)
    assert.are_not.equal(a, core.key({ rw_paths = { "$CWD", "/y" }, network = false, limits = { processes = 10 } }))
    assert.are_not.equal(a, core.key({ rw_paths = { "/x", "$CWD" }, network = false, limits = { processes = 10 } }))
    -- lengths are part of the text: two lists never give one text
    assert.are_not.equal(core.key({ "ab", "c" }), core.key({ "a", "bc" }))
    assert.are_not.equal(core.key({ 1 }), core.key({ "1" }))
    assert.are_not.equal(core.key({ true }), core.key({ false }))
  end)

  it("lists the variables the strings name, and refuses a table inside itself", function()
    local _, names = core.key({ rw_paths = { "$HOME/a", "${XDG_X}/b", "$", "${", "a$1" }, env_allow = { "$Y_2" } })
    table.sort(names)
    assert.are.same({ "HOME", "XDG_X", "Y_2" }, names)
    local loop = {}
    loop.self = loop
    assert.matches("nested more than 32 deep", select(2, pcall(core.key, loop)))
  end)
end)

describe("core.watch", function()
  local dir
  before_each(function()
    dir = h.tmpdir()
  end)
  after_each(function()
    h.rmdir(dir)
  end)

  it("reports entries made, removed and renamed, and changes to the path itself, not to entries' content", function()
    h.sh("touch " .. dir .. "/file")
    local w = assert(core.watch())
    local wd = assert(w:add(dir))
    local file_wd = assert(w:add(dir .. "/file"))
    assert.is_nil((w:events()), "nothing yet")
    h.write(dir .. "/file", "content")
    local events = assert(w:events())
    for i = 1, #events, 2 do
      -- the watched file itself changed (truncated, written); its folder does not care
      assert.are.same({ file_wd, "" }, { events[i], events[i + 1] })
    end
    h.sh("touch " .. dir .. "/new && mv " .. dir .. "/new " .. dir .. "/renamed && rm " .. dir .. "/renamed")
    events = assert(w:events())
    local names = {}
    for i = 1, #events, 2 do
      assert.are.equal(wd, events[i])
      names[#names + 1] = events[i + 1]
    end
    assert.are.same({ "new", "new", "renamed", "renamed" }, names)
    assert.is_nil((w:events()))
    local none, err, reason = w:add(dir .. "/missing")
    assert.is_nil(none)
    assert.matches("No such file", err)
    assert.are.equal("ENOENT", reason)
    w:close()
    assert.matches("closed", select(2, pcall(w.events, w)))
  end)

  it("with entries_only, tells of entries, not of its own attributes; added again, keeps both", function()
    local w = assert(core.watch())
    local wd = assert(w:add(dir, true))
    h.sh("chmod 700 " .. dir)
    assert.is_nil((w:events()), "entries only: a chmod of the folder itself is not told")
    h.sh("touch " .. dir .. "/new")
    assert.are.same({ wd, "new" }, w:events())
    -- control: the whole watch tells of the chmod
    assert.are.equal(wd, w:add(dir))
    h.sh("chmod 755 " .. dir)
    assert.are.same({ wd, "" }, w:events())
    -- an entries-only add of a path watched whole keeps what it had
    assert.are.equal(wd, w:add(dir, true))
    h.sh("chmod 700 " .. dir)
    assert.are.same({ wd, "" }, w:events())
    w:close()
  end)

  it("environ_hash is one value for one environment", function()
    assert.are.equal(core.environ_hash(), core.environ_hash())
    assert.matches("^%x+$", core.environ_hash())
  end)
end)

describe("policy cache", function()
  local dir, resolved
  before_each(function()
    dir = h.tmpdir()
    cache.clear()
    resolved = { rw_paths = {} }
  end)
  after_each(function()
    cache.clear()
    h.rmdir(dir)
  end)

  it("keeps an entry until a path it looked at comes or goes, and only then", function()
    h.sh("mkdir -p " .. dir .. "/proj/sub")
    cache.put("k", { dir .. "/proj/.vscode", dir .. "/proj/sub/" }, resolved, {})
    assert.are.equal(resolved, cache.get("k").resolved)
    h.sh("touch " .. dir .. "/proj/unrelated " .. dir .. "/elsewhere")
    h.write(dir .. "/proj/unrelated", "content")
    assert.is_not_nil(cache.get("k"), "other entries of the folders it looked in do not matter")
    h.sh("mkdir " .. dir .. "/proj/.vscode")
    assert.is_nil(cache.get("k"), "a path it looked at appeared")
    -- control: put again, then a change inside a "/"-ended path
    cache.put("k", { dir .. "/proj/.vscode", dir .. "/proj/sub/" }, resolved, {})
    assert.is_not_nil(cache.get("k"))
    h.sh("touch " .. dir .. "/proj/sub/x")
    assert.is_nil(cache.get("k"), "an entry made inside a path it looked at as a whole")
  end)

  --- How many times fn makes the cache take stamps (its fallback).
  local function stamps_taken(fn)
    local real, n = core.stamp, 0
    core.stamp = function(...)
      n = n + 1
      return real(...)
    end
    local ok, err = pcall(fn)
    core.stamp = real
    assert(ok, err)
    return n
  end

  it("sees a path come whose folders are missing, and a folder above it renamed", function()
    local taken = stamps_taken(function()
      cache.put("k", { dir .. "/a/b/c" }, resolved, {})
      assert.is_not_nil(cache.get("k"))
    end)
    assert.are.equal(0, taken, "a missing path is watched through the folder above it, with no stamps")
    h.sh("mkdir -p " .. dir .. "/a/b/c")
    assert.is_nil(cache.get("k"), "made with its missing folders")
    cache.put("k", { dir .. "/a/b/c" }, resolved, {})
    h.sh("mv " .. dir .. "/a " .. dir .. "/moved && mkdir -p " .. dir .. "/a/b")
    assert.is_nil(cache.get("k"), "a folder above it renamed away")
  end)

  --- The inotify masks this process watches each inode with, by inode
  --- number (/proc/self/fdinfo of every inotify descriptor).
  local function watched_masks()
    local masks = {}
    local proc = "/proc/" .. core.getpid() -- this process's, not the shell's that lists them
    for fd in io.popen("ls " .. proc .. "/fd"):lines() do
      local f = io.open(proc .. "/fdinfo/" .. fd)
      for line in (f and f:lines() or function() end) do
        local ino, mask = line:match("^inotify wd:%x+ ino:(%x+) .* mask:(%x+)")
        if ino then
          masks[tonumber(ino, 16)] = bit.bor(masks[tonumber(ino, 16)] or 0, tonumber(mask, 16))
        end
      end
      if f then
        f:close()
      end
    end
    return masks
  end

  it("watches a folder on the way outside the projects for its entries only, the projects whole", function()
    local IN_MODIFY, IN_CREATE = 0x2, 0x100
    local ino = function(path)
      return tonumber(h.capture("stat -c %i " .. path))
    end
    h.sh("mkdir -p " .. dir .. "/proj/sub")
    cache.put("k", { dir .. "/proj/sub/.envrc", dir .. "/proj/" }, resolved, {}, { dir .. "/proj" })
    local masks = watched_masks()
    local outside, top, inside = masks[ino(dir)], masks[ino(dir .. "/proj")], masks[ino(dir .. "/proj/sub")]
    assert.is_truthy(outside and top and inside, "each is watched")
    assert.are.equal(IN_CREATE, bit.band(outside, IN_CREATE))
    -- with IN_MODIFY the kernel would mark every cached entry of the folder at its first watch
    assert.are.equal(0, bit.band(outside, IN_MODIFY), "a folder on the way, outside the projects")
    assert.are.equal(IN_MODIFY, bit.band(top, IN_MODIFY), "the project's top")
    assert.are.equal(IN_MODIFY, bit.band(inside, IN_MODIFY), "a folder in the project")
  end)

  it("falls back to stamps for a path inotify cannot watch", function()
    -- a relative path cannot be watched: the entry stamps its folders
    local taken = stamps_taken(function()
      cache.put("k", { "relative", dir .. "/x" }, resolved, {})
      assert.is_not_nil(cache.get("k"))
    end)
    assert.are.equal(2, taken, "stamped when put, and looked at when got")
    h.sh("sleep 0.01; touch " .. dir .. "/x")
    assert.is_nil(cache.get("k"))
  end)

  it("falls back to stamps under a folder it may not read (unprivileged)", function()
    if core.getuid() == 0 then
      return pending("root reads every folder")
    end
    h.sh("mkdir -p " .. dir .. "/closed/in && chmod 311 " .. dir .. "/closed")
    cache.put("k", { dir .. "/closed/in/x" }, resolved, {})
    assert.is_not_nil(cache.get("k"))
    h.sh("sleep 0.01; touch " .. dir .. "/closed/in/x")
    local gone = cache.get("k") == nil
    h.sh("chmod 755 " .. dir .. "/closed")
    assert.is_true(gone, "seen through the stamp of its folder")
  end)

  it("keeps at most LIMIT entries", function()
    for i = 1, cache.LIMIT + 1 do
      cache.put("k" .. i, { dir .. "/x" }, resolved, {})
    end
    assert.is_nil(cache.get("k1"))
    assert.is_not_nil(cache.get("k" .. (cache.LIMIT + 1)))
  end)
end)
