--- A resolution kept across an entry made, removed or renamed at a
--- project's top (policy/cache.lua M.unaffected): for each kind of entry,
--- the policy the cache gives is the one a fresh resolution gives (deep
--- equal), and for a plain file the resolution is not done again.
local cache = require("flemma_sandbox.policy.cache")
local config = require("flemma_sandbox.config")
local core = require("flemma_sandbox.core")
local h = require("support.helpers")
local policy = require("flemma_sandbox.policy")
local surroundings = require("flemma_sandbox.base.surroundings")

describe("a resolution after an entry at a project's top", function()
  local dir, home, proj, cwd
  before_each(function()
    -- under HOME: /var/tmp is a shared temp folder, which gets no project entries
    h.sh("mkdir -p " .. h.shell_quote(os.getenv("HOME") .. "/.cache"))
    local made = h.capture("mktemp -d " .. h.shell_quote(os.getenv("HOME") .. "/.cache/flemma-unit.XXXXXX"))
    dir = core.resolve((made:gsub("%s+$", "")), "/")
    home, proj = dir .. "/home", dir .. "/home/proj"
    local folders =
      { proj .. "/.git/hooks", proj .. "/src", proj .. "/old", proj .. "/vendor/lib/.git", home .. "/.config" }
    h.sh("mkdir -p " .. table.concat(folders, " "))
    h.write(proj .. "/main.c", "int main(void) { return 0; }")
    h.write(proj .. "/old/notes.txt", "x")
    surroundings.use(h.project_surroundings(function()
      return cwd or proj
    end, home))
    cache.clear()
  end)
  after_each(function()
    cwd = nil
    surroundings.use(nil)
    cache.clear()
    os.execute("rm -rf " .. h.shell_quote(dir))
  end)

  local p = config.merge_layer(config.defaults, { policy = { rw_paths = { "$CWD" } } }).policy

  --- The cached resolution after change, and a fresh one (cache cleared).
  local function both(change, q)
    q = q or p
    policy.resolve(q, nil)
    h.sh(change)
    local kept, kept_skipped = policy.resolve(q, nil)
    cache.clear()
    local fresh, fresh_skipped = policy.resolve(q, nil)
    return kept, fresh, kept_skipped, fresh_skipped
  end

  local cases = {
    { "a plain file", "touch PROJ/new.txt" },
    { "a secret-named file", "echo k > PROJ/.env" },
    { "a file a rule names (.envrc, protected when present)", "touch PROJ/.envrc" },
    { "a symlink to a folder holding a repository", "mkdir -p DIR/other/.git && ln -s ../other PROJ/link" },
    { "a folder", "mkdir PROJ/sub" },
    { "a folder tree with no repository, moved in", "mkdir -p DIR/t/a/b && touch DIR/t/a/b/f && mv DIR/t PROJ/t" },
    { "a folder holding a repository, moved in", "mkdir -p DIR/repo/.git && mv DIR/repo PROJ/repo" },
    { "a repository made in a new folder (git init)", "mkdir -p PROJ/wt/.git/hooks" },
    { "a removed file", "rm PROJ/main.c" },
    { "a removed folder", "rm -r PROJ/old" },
    { "a folder holding a repository, moved out", "mv PROJ/vendor DIR/vendor" },
    { "a renamed file", "mv PROJ/main.c PROJ/main2.c" },
    { "a renamed folder", "mv PROJ/src PROJ/src2" },
    { "a worktree's .git file in a new folder", "mkdir -p PROJ/wt && echo 'gitdir: PROJ/.git' > PROJ/wt/.git" },
    { "a repository under node_modules in a new folder", "mkdir -p PROJ/nm/node_modules/x/.git" },
    { "a fifo", "mkfifo PROJ/ff" },
    { "a symlink to a file", "ln -s main.c PROJ/lnk" },
    { "a hard link to a file", "ln PROJ/main.c PROJ/hl" },
    { "a repository 16 folders deep", "mkdir -p PROJ/d/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/.git" },
    { "a file renamed to .git", "rm -rf PROJ/.git && touch PROJ/g && mv PROJ/g PROJ/.git" },
  }
  for _, c in ipairs(cases) do
    it("gives what a fresh resolution gives: " .. c[1], function()
      local kept, fresh, kept_skipped, fresh_skipped = both((c[2]:gsub("PROJ", proj):gsub("DIR", dir)))
      assert.are.same(fresh, kept)
      assert.are.same(fresh_skipped, kept_skipped)
    end)
  end

  it("gives what a fresh resolution gives: a file removed that stood where a rule's folder goes", function()
    -- deny_write blocker/inner: with the file "blocker" there, no path of the
    -- rule exists or can; without it, "blocker" is watched (missing parent)
    local q =
      config.merge_layer(config.defaults, { policy = { rw_paths = { "$CWD" }, deny_write = { "blocker/inner" } } })
    h.write(proj .. "/blocker", "x")
    local kept, fresh = both("rm " .. proj .. "/blocker", q.policy)
    assert.are.same(fresh, kept)
    local blocked = {}
    for _, w in ipairs(fresh.watched) do
      blocked[#blocked + 1] = w.path:find("blocker", 1, true) and w.path or nil
    end
    assert.are.same({ proj .. "/blocker" }, blocked, "the control: the rule's missing folder is watched")
  end)

  it(
    "gives what a fresh resolution gives: a read-only folder outside the projects made writable (unprivileged)",
    function()
      -- a missing deny_write path is watched only where the user can write:
      -- a chmod of its folder, outside the projects (Flemma's ~/.local/share),
      -- changes the resolution
      if core.getuid() == 0 then
        return pending("root writes to every folder")
      end
      local q = config.merge_layer(config.defaults, {
        policy = { rw_paths = { "$CWD", "~/.local/share" }, deny_write = { "~/.local/share/ro/inner" } },
      }).policy
      local ro = home .. "/.local/share/ro"
      h.sh("mkdir -p " .. ro .. " && chmod 555 " .. ro)
      local kept, fresh = both("chmod 755 " .. ro, q)
      local watched = {}
      for _, w in ipairs(fresh.watched) do
        watched[#watched + 1] = w.path:find("/ro/", 1, true) and w.path or nil
      end
      assert.are.same({ ro .. "/inner" }, watched, "the control: made writable, the path is watched")
      assert.are.same(fresh, kept)
    end
  )

  it("gives what a fresh resolution gives in a project renamed: its top keeps its watch", function()
    policy.resolve(p, nil)
    h.sh("mv " .. proj .. " " .. proj .. "2")
    cwd = proj .. "2"
    -- another key (the working folder), the same folder and watch
    local kept, fresh = both("mkdir -p " .. cwd .. "/repo/.git")
    assert.are.same(fresh, kept)
    local found = false
    for _, r in ipairs(fresh.protected) do
      found = found or r.path == cwd .. "/repo/.git"
    end
    assert.is_true(found, "the control: the new repository is protected")
  end)

  it(
    "does not resolve again for a plain file or a folder with no repository, and does for one with (control)",
    function()
      policy.resolve(p, nil)
      local resolve, calls = core.resolve, 0
      core.resolve = function(...)
        calls = calls + 1
        return resolve(...)
      end
      local ok, err = pcall(function()
        h.sh(
          "touch " .. proj .. "/new.txt && mv " .. proj .. "/new.txt " .. proj .. "/n.txt && rm " .. proj .. "/main.c"
        )
        policy.resolve(p, nil)
        assert.are.equal(0, calls, "a plain file: the resolution kept")
        h.sh("mkdir -p " .. proj .. "/build/out && rmdir " .. proj .. "/old/../src")
        policy.resolve(p, nil)
        assert.are.equal(0, calls, "a folder with no repository made, one removed: the resolution kept")
        h.sh("mkdir -p " .. dir .. "/r/.git && mv " .. dir .. "/r " .. proj .. "/r")
        policy.resolve(p, nil)
        assert.is_true(calls > 0, "a folder holding a repository: resolved again")
      end)
      core.resolve = resolve
      assert(ok, err)
    end
  )
end)
