--- core.find_files, find_names, node_id, file_type, can_write and stamp;
--- and the check after a run (flemma-sandbox-tool --check-after, its records).
local core = require("flemma_sandbox.core")
local h = require("support.helpers")

--- Its "moved" records as { from, to }.
local function moved_by(path)
  local out = {}
  for _, r in ipairs((h.check_after(path))) do
    assert.are.equal("moved", r.type)
    assert.are.equal("this", r.run)
    out[#out + 1] = { from = r.from, to = r.to }
  end
  return out
end

describe("core", function()
  local dir
  before_each(function()
    dir = h.tmpdir()
  end)
  after_each(function()
    h.rmdir(dir)
  end)

  it("find_files finds matching names to the given depth, skipping folders and directories", function()
    h.sh("cd " .. dir .. " && mkdir -p a/b skip .env.d && touch .env .env.prod a/x.pem a/b/y.key skip/z.key README")
    h.sh("cd " .. dir .. " && ln -s a link")
    local found, truncated = core.find_files(dir, { ".env", ".env.*", "*.pem", "*.key" }, { "skip" }, 2, 100)
    table.sort(found)
    assert.are.same({ dir .. "/.env", dir .. "/.env.prod", dir .. "/a/x.pem" }, found)
    assert.is_false(truncated)
    found = core.find_files(dir, { "*.key" }, {}, 3, 100)
    table.sort(found)
    assert.are.same({ dir .. "/a/b/y.key", dir .. "/skip/z.key" }, found)
    found, truncated = core.find_files(dir, { "*" }, {}, 1, 2)
    assert.are.equal(2, #found)
    assert.is_true(truncated)
    assert.are.same({}, (core.find_files(dir, { "*" }, {}, 0, 10)))
    assert.matches("cannot scan", select(2, core.find_files(dir .. "/none", { "*" }, {}, 1, 10)))
    assert.has_error(function()
      core.find_files("relative", {}, {}, 1, 1)
    end)
  end)

  it("find_names finds entries of any type at any depth, entering neither matches nor symlinks", function()
    h.sh("cd " .. dir .. " && mkdir -p .git/x/.git a/b/c/d/e sub && touch a/b/c/d/e/.git && ln -s a sub/.git")
    h.sh("cd " .. dir .. " && mkdir -p deep/.git && ln -s deep linked")
    local found, truncated = core.find_names(dir, { ".git" }, 100)
    table.sort(found)
    assert.are.same({ dir .. "/.git", dir .. "/a/b/c/d/e/.git", dir .. "/deep/.git", dir .. "/sub/.git" }, found)
    assert.is_false(truncated)
    found, truncated = core.find_names(dir, { ".git" }, 2)
    assert.are.equal(2, #found)
    assert.is_true(truncated)
    assert.matches("cannot scan", select(2, core.find_names(dir .. "/none", { ".git" }, 10)))
  end)

  it("node_id names an inode without following a symlink", function()
    h.sh("touch " .. dir .. "/f && ln -s f " .. dir .. "/l")
    assert.matches("^%d+:%d+$", core.node_id(dir .. "/f"))
    assert.are_not.equal(core.node_id(dir .. "/f"), core.node_id(dir .. "/l"))
    assert.is_nil(core.node_id(dir .. "/none"))
  end)

  it("the check after a run moves watched names that appeared and new .git, keeps known and expected ones", function()
    local proj, q = dir .. "/proj", dir .. "/q"
    h.sh("mkdir -p " .. proj .. "/old/.git " .. proj .. "/new/.git " .. proj .. "/ok/.git " .. q)
    h.sh("touch " .. proj .. "/.envrc " .. proj .. "/new/.git/config")
    local words = {
      "quarantine",
      q,
      "started",
      "1",
      "watch",
      proj .. "/.envrc",
      "watch",
      proj .. "/.vscode", -- still missing: nothing to do
      "repos",
      proj,
      "known",
      core.node_id(proj .. "/old/.git"),
      "expect",
      proj .. "/ok/.git",
      "unknown-key",
      "ignored",
      "watch", -- never the quarantine, nor what holds it
      dir,
      "watch",
      q,
    }
    h.write(dir .. "/c.check", table.concat(words, "\0") .. "\0")
    local moved = moved_by(dir .. "/c.check")
    assert.is_nil(core.file_type(dir .. "/c.running"), "checked, then removed")
    table.sort(moved, function(a, b)
      return a.from < b.from
    end)
    assert.are.equal(2, #moved)
    assert.are.same({ proj .. "/.envrc", proj .. "/new/.git" }, { moved[1].from, moved[2].from })
    assert.is_nil(core.file_type(proj .. "/.envrc"))
    assert.is_nil(core.file_type(proj .. "/new/.git"))
    assert.are.equal("directory", core.file_type(proj .. "/old/.git"))
    assert.are.equal("directory", core.file_type(proj .. "/ok/.git"))
    assert.are.equal("file", core.file_type(moved[2].to .. "/config"))
    assert.are.equal(proj .. "/new/.git\n", h.read(moved[2].to:match("^(.*)/[^/]+$") .. "/from"))
    assert.matches("^" .. q:gsub("%p", "%%%0") .. "/", moved[1].to)
    assert.are.same({}, moved_by(dir .. "/c.check"), "a second check finds nothing")
    local none, ok = h.check_after(dir .. "/none.check")
    assert.are.same({}, none)
    assert.is_true(ok, "a run already checked (its file gone) is not an error")
  end)

  it("file_type does not follow symlinks; can_write answers access(W_OK)", function()
    h.sh("ln -s " .. dir .. " " .. dir .. "/self && mkfifo " .. dir .. "/fifo")
    assert.are.equal("link", core.file_type(dir .. "/self"))
    assert.are.equal("fifo", core.file_type(dir .. "/fifo"))
    assert.are.equal("device", core.file_type("/dev/null"))
    assert.is_nil(core.file_type(dir .. "/none"))
    assert.is_true(core.can_write(dir))
    assert.is_false(core.can_write(dir .. "/none"))
    assert.is_number(core.getuid())
    assert.is_number(core.getpid())
  end)

  it("stamp changes when an entry is made, removed or renamed in a stamped folder, and only then", function()
    local list = { dir, dir .. "/none" }
    local first = core.stamp(list)
    assert.are.equal(first, core.stamp(list))
    h.sh("sleep 0.01; touch " .. dir .. "/new")
    local made = core.stamp(list)
    assert.are_not.equal(first, made)
    h.write(dir .. "/new", "content") -- an existing file's content: not the folder's
    assert.are.equal(made, core.stamp(list))
    h.sh("sleep 0.01; mv " .. dir .. "/new " .. dir .. "/renamed")
    assert.are_not.equal(made, core.stamp(list))
    local renamed = core.stamp(list)
    h.sh("mkdir " .. dir .. "/none")
    assert.are_not.equal(renamed, core.stamp(list), "a missing path that appears")
    assert.matches("paths%[2%]: string expected", select(2, pcall(core.stamp, { dir, 1 })))
    assert.matches("paths", select(2, pcall(core.stamp, dir)))
  end)

  it("the check after a run checks nothing for a check file whose helper never started bwrap", function()
    local proj, q = dir .. "/proj", dir .. "/q"
    h.sh("mkdir -p " .. proj .. "/.git " .. q .. " && touch " .. proj .. "/.envrc")
    local words = { "quarantine", q, "watch", proj .. "/.envrc", "repos", proj }
    h.write(dir .. "/c.check", table.concat(words, "\0") .. "\0")
    assert.are.same({}, moved_by(dir .. "/c.check"))
    assert.are.equal("directory", core.file_type(proj .. "/.git"), "the user's repository stays")
    -- control: the same file once the helper says it started moves both
    h.write(dir .. "/c.check", table.concat(words, "\0") .. "\0started\0001\0")
    assert.are.equal(2, #moved_by(dir .. "/c.check"))
    assert.is_nil(core.file_type(proj .. "/.git"))
  end)
end)
