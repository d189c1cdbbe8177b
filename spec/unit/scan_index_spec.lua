--- The scan index (csrc/shared/tree_index.h): what a scan found is kept, and a
--- folder whose device, inode, mtime and ctime are unchanged is not read
--- again. Each test compares against a scan without an index.
local core = require("flemma_sandbox.core")
local h = require("support.helpers")

local PATTERNS = { ".env", ".env.*", "*.pem" }
local SKIP = { "node_modules" }

--- A folder changed within 2 s is read again next time: wait it out, so
--- the records are ones the next scan trusts.
local function settle()
  h.sh("sleep 2.2")
end

local function sorted(list)
  table.sort(list)
  return list
end

describe("scan index", function()
  local dir, idx
  before_each(function()
    dir = h.tmpdir()
    idx = h.tmpdir()
    h.sh("cd " .. dir .. " && mkdir -p a/b c node_modules/x .git/objects && touch .env a/x.pem node_modules/x/.env")
  end)
  after_each(function()
    h.rmdir(dir)
    h.rmdir(idx)
  end)

  local function secrets(limit, index_dir)
    return core.find_files(dir, PATTERNS, SKIP, 64, limit or 100, index_dir)
  end

  local function index_file()
    local files = h.capture("ls " .. idx)
    return files ~= "" and (idx .. "/" .. files:gsub("\n$", "")) or nil
  end

  --- "DEV INO MTIME_S MTIME_NS CTIME_S CTIME_NS" of a path, as the index records them.
  local function stat_numbers(path)
    local dev, ino, m, mn, c, cn = h.capture("stat -c '%d %i %.9Y %.9Z' " .. path)
      :match("^(%d+) (%d+) (%d+)%.(%d+) (%d+)%.(%d+)")
    return string.format("%s %s %s %d %s %d", dev, ino, m, tonumber(mn), c, tonumber(cn))
  end

  --- The index bytes with rel's record given new numbers.
  local function with_record(bytes, rel, numbers)
    local at = assert(bytes:find("\0" .. rel .. "\0", 1, true), rel .. " recorded")
    local from = at + #rel + 2
    local to = assert(bytes:find("\0", from, true))
    return bytes:sub(1, from - 1) .. numbers .. bytes:sub(to)
  end

  it("finds what a scan without it finds, and leaves the index as it was when nothing changed", function()
    local plain = sorted(secrets())
    assert.are.same({ dir .. "/.env", dir .. "/a/x.pem" }, plain)
    settle()
    assert.are.same(plain, sorted(secrets(100, idx)))
    local file = assert(index_file())
    local id = core.node_id(file)
    assert.are.same(plain, sorted(secrets(100, idx)))
    assert.are.equal(id, core.node_id(file), "an unchanged tree rewrites no index")
    local gits = sorted(core.find_names(dir, { ".git" }, 100, idx))
    assert.are.same({ dir .. "/.git" }, gits)
    assert.are.same(gits, sorted(core.find_names(dir, { ".git" }, 100, idx)))
  end)

  it("reads a folder changed just now again, and rewrites no index when it is as recorded", function()
    -- every folder changed within 2 s: all racy, all read again
    secrets(100, idx)
    core.find_names(dir, { ".git" }, 100, idx)
    local ids = {}
    for file in h.capture("ls " .. idx):gmatch("[^\n]+") do
      ids[idx .. "/" .. file] = core.node_id(idx .. "/" .. file)
    end
    assert.are.same({ dir .. "/.env", dir .. "/a/x.pem" }, sorted(secrets(100, idx)))
    assert.are.same({ dir .. "/.git" }, core.find_names(dir, { ".git" }, 100, idx))
    for file, id in pairs(ids) do
      assert.are.equal(id, core.node_id(file), "a racy scan that found nothing new rewrites no index: " .. file)
    end
    -- control: a name made in a racy folder is found, and the index rewritten
    h.sh("touch " .. dir .. "/a/b/.env")
    assert.are.same({ dir .. "/.env", dir .. "/a/b/.env", dir .. "/a/x.pem" }, sorted(secrets(100, idx)))
    local changed = 0
    for file, id in pairs(ids) do
      changed = changed + (core.node_id(file) ~= id and 1 or 0)
    end
    assert.are.equal(1, changed, "the secrets' index rewritten, the .git one not")
  end)

  -- control: an index whose record says otherwise is trusted
  it("sees a name made in a folder whose mtime was put back: the ctime tells", function()
    settle()
    secrets(100, idx)
    local file = assert(index_file())
    local before = h.read(file)
    local mtime = h.capture("stat -c %.9Y " .. dir .. "/a/b"):gsub("%s", "")
    h.sh("touch " .. dir .. "/a/b/.env && touch -d @" .. mtime .. " " .. dir .. "/a/b")
    assert.are.equal(mtime, (h.capture("stat -c %.9Y " .. dir .. "/a/b"):gsub("%s", "")))
    assert.are.same({ dir .. "/.env", dir .. "/a/b/.env", dir .. "/a/x.pem" }, sorted(secrets(100, idx)))
    -- control: the same index, its record of a/b made to match the folder now
    local numbers = stat_numbers(dir .. "/a/b")
    h.write(file, with_record(before, "a/b", numbers .. " 0 0 0"))
    assert.are.same({ dir .. "/.env", dir .. "/a/x.pem" }, sorted(secrets(100, idx)))
    -- a record marked racy is read again even when every number matches
    h.write(file, with_record(before, "a/b", numbers .. " 1 0 0"))
    assert.are.same({ dir .. "/.env", dir .. "/a/b/.env", dir .. "/a/x.pem" }, sorted(secrets(100, idx)))
  end)

  it("follows new, removed and replaced folders, and a new .git anywhere", function()
    settle()
    secrets(100, idx)
    core.find_names(dir, { ".git" }, 100, idx)
    h.sh("cd " .. dir .. " && rm -r a && mkdir -p c/d/e a2 && touch c/d/e/.env.local a2/k.pem && mkdir c/d/e/.git")
    h.sh("cd " .. dir .. " && mv a2 a && rm -r node_modules/x && ln -s ../c node_modules/x")
    local plain = sorted(secrets())
    assert.are.same({ dir .. "/.env", dir .. "/a/k.pem", dir .. "/c/d/e/.env.local" }, plain)
    assert.are.same(plain, sorted(secrets(100, idx)))
    assert.are.same({ dir .. "/.git", dir .. "/c/d/e/.git" }, sorted(core.find_names(dir, { ".git" }, 100, idx)))
  end)

  it("gives matches up to the limit and says it stopped; a cut scan records nothing", function()
    settle()
    secrets(100, idx)
    local file = assert(index_file())
    local id = core.node_id(file)
    local found, truncated = secrets(1, idx)
    assert.are.equal(1, #found)
    assert.is_true(truncated)
    assert.are.equal(id, core.node_id(file))
  end)

  it("keeps one index per set of patterns, skipped folders and depth", function()
    settle()
    secrets(100, idx)
    local everywhere = { dir .. "/.env", dir .. "/node_modules/x/.env" }
    assert.are.same(everywhere, sorted(core.find_files(dir, { ".env" }, {}, 64, 100, idx)))
    assert.are.same({ dir .. "/.env" }, core.find_files(dir, { ".env" }, {}, 1, 100, idx))
    assert.are.same({ dir .. "/.env" }, core.find_files(dir, { ".env" }, SKIP, 64, 100, idx))
    assert.are.same(everywhere, sorted(core.find_files(dir, { ".env" }, {}, 64, 100, idx)))
    local _, count = h.capture("ls " .. idx):gsub("\n", "")
    assert.are.equal(4, count)
  end)

  it("treats a cut, foreign or garbled index as none, and replaces it", function()
    settle()
    local plain = sorted(secrets())
    secrets(100, idx)
    local file = assert(index_file())
    local good = h.read(file)
    local bad = {
      good:sub(1, #good - 5), -- cut inside the last record
      good:gsub("\0end\0$", "\0"), -- no end
      good:gsub("^flemma%-sandbox tree 1", "flemma-sandbox tree 9"),
      with_record(good, "", stat_numbers(dir) .. " 0 0 99999999999999999999999"), -- a count that does not fit
      with_record(good, "", "-" .. stat_numbers(dir) .. " 0 1 3"), -- a negative device
      with_record(good, "", stat_numbers(dir) .. " 0 1 3 4"), -- a number too many
      "",
      string.rep("\0", 64),
    }
    for i, bytes in ipairs(bad) do
      h.write(file, bytes)
      h.sh("touch " .. dir .. "/a/b/.env." .. i)
      local expected = sorted(secrets())
      assert.are.same(expected, sorted(secrets(100, idx)), "index " .. i)
      assert.are_not.equal(bytes, h.read(file), "index " .. i .. " replaced")
    end
    assert.are_not.same(plain, sorted(secrets()))
    assert.has_error(function()
      core.find_files(dir, PATTERNS, SKIP, 64, 100, "relative")
    end)
  end)
end)
