--- policy/paths.lua: where a path really lies (symlinks followed, `~` as
--- $HOME and nothing else expanded), the writable root holding it, the rule
--- that hides or protects it, and whether the home folder would be opened.
local paths = require("flemma_sandbox.policy.paths")
local surroundings = require("flemma_sandbox.base.surroundings")
local h = require("support.helpers")

describe("policy.paths", function()
  local dir, project, outside

  --- A resolved policy with only the fields paths.lua reads.
  local function policy(fields)
    local p = { rw_paths = { project }, hidden = {}, protected = {}, watched = {}, projects = { project } }
    for k, v in pairs(fields or {}) do
      p[k] = v
    end
    return p
  end

  before_each(function()
    dir = h.tmpdir()
    project = dir .. "/project"
    outside = dir .. "/outside"
    os.execute("mkdir -p " .. project .. "/sub " .. project .. "/.git " .. outside .. " " .. dir .. "/home/u")
    surroundings.use({
      getenv = function(name)
        return name == "HOME" and dir .. "/home/u" or nil
      end,
      cwd = function()
        return project
      end,
    })
  end)

  after_each(function()
    surroundings.use(nil)
    h.rmdir(dir)
  end)

  describe("real_path", function()
    it("reads a leading ~ as $HOME", function()
      assert.are.equal(dir .. "/home/u/notes.txt", paths.real_path("~/notes.txt"))
      assert.are.equal(dir .. "/home/u", paths.real_path("~"))
    end)

    it("expands nothing else: ~user and $VAR stay words of the path", function()
      assert.are.equal(project .. "/~root/x", paths.real_path("~root/x"))
      assert.are.equal(project .. "/$HOME/x", paths.real_path("$HOME/x"))
    end)

    it("places a relative path in the working directory, or in the one it is given", function()
      assert.are.equal(project .. "/sub/f", paths.real_path("sub/f"))
      assert.are.equal(outside .. "/f", paths.real_path("f", outside))
    end)

    it("follows every symlink on the path", function()
      os.execute("ln -s " .. outside .. " " .. project .. "/link")
      assert.are.equal(outside .. "/f", paths.real_path("link/f"))
    end)

    it("says HOME is not set when ~ cannot be placed", function()
      surroundings.use({
        getenv = function()
          return nil
        end,
      })
      local real, err = paths.real_path("~/x")
      assert.is_nil(real)
      assert.are.equal("HOME is not set, cannot place ~/x", err)
    end)
  end)

  describe("root_of", function()
    it("is the longest writable root holding the path", function()
      local p = policy({ rw_paths = { dir, project, project .. "/sub" } })
      assert.are.equal(project .. "/sub", paths.root_of(project .. "/sub/f", p))
      assert.are.equal(project, paths.root_of(project .. "/f", p))
      assert.are.equal(dir, paths.root_of(outside, p))
      assert.is_nil(paths.root_of("/etc/passwd", p))
    end)

    it("never takes a sibling with the same prefix for the root", function()
      assert.is_nil(paths.root_of(project .. "-other/f", policy()))
    end)
  end)

  describe("is_writable", function()
    it("is true inside a writable root, naming it", function()
      local ok, why = paths.is_writable(project .. "/sub/f", policy())
      assert.is_true(ok)
      assert.are.equal(project .. "/sub/f is inside " .. project, why)
    end)

    it("is false outside every writable root", function()
      local ok, why = paths.is_writable(outside .. "/f", policy())
      assert.is_false(ok)
      assert.are.equal(outside .. "/f is not in rw_paths", why)
    end)

    it("is false through a symlink that leads out of the root", function()
      os.execute("ln -s " .. outside .. " " .. project .. "/link")
      local ok, why = paths.is_writable(project .. "/link/f", policy())
      assert.is_false(ok)
      assert.are.equal(outside .. "/f is not in rw_paths", why)
    end)

    it("is false under a protected or watched rule, naming the rule", function()
      local p = policy({
        protected = { { path = project .. "/.envrc", rule = "deny_write: .envrc" } },
        watched = { { path = project .. "/Makefile", rule = "watch: Makefile" } },
      })
      local ok, why = paths.is_writable(project .. "/.envrc", p)
      assert.is_false(ok)
      assert.are.equal(project .. "/.envrc is protected (deny_write: .envrc)", why)
      ok, why = paths.is_writable(project .. "/Makefile", p)
      assert.is_false(ok)
      assert.are.equal(project .. "/Makefile is protected (watch: Makefile)", why)
    end)

    it("is false through a .git of a project, existing or not", function()
      local ok, why = paths.is_writable(project .. "/.git/hooks/pre-commit", policy())
      assert.is_false(ok)
      assert.matches("is protected %(a git folder", why)
      ok = paths.is_writable(project .. "/sub/.git/config", policy())
      assert.is_false(ok)
      -- a name that only starts with .git is no git folder
      assert.is_true((paths.is_writable(project .. "/.github/x", policy())))
    end)

    it("is false for a hidden path inside a root", function()
      local p = policy({ hidden = { { path = project .. "/secrets", rule = "deny_read: secrets" } } })
      local ok, why = paths.is_writable(project .. "/secrets/a", p)
      assert.is_false(ok)
      assert.are.equal(project .. "/secrets/a is protected (deny_read: secrets)", why)
    end)
  end)

  describe("is_readable", function()
    it("is false for a hidden path, naming the rule, and true otherwise", function()
      local p = policy({ hidden = { { path = outside, rule = "deny_read: outside" } } })
      local ok, why = paths.is_readable(outside .. "/f", p)
      assert.is_false(ok)
      assert.are.equal(outside .. "/f is hidden (deny_read: outside)", why)
      ok, why = paths.is_readable("sub/f", p)
      assert.is_true(ok)
      assert.are.equal(project .. "/sub/f is visible", why)
    end)

    it("passes on real_path's error", function()
      surroundings.use({
        getenv = function()
          return ""
        end,
      })
      local ok, why = paths.is_readable("~/x", policy())
      assert.is_false(ok)
      assert.are.equal("HOME is not set, cannot place ~/x", why)
    end)
  end)

  describe("protected_rule and hidden_rule", function()
    it("return the rule holding the path, or nil", function()
      local rule = { path = project .. "/a", rule = "r" }
      assert.are.equal(rule, paths.protected_rule(project .. "/a/b", policy({ protected = { rule } })))
      assert.is_nil(paths.protected_rule(project .. "/ab", policy({ protected = { rule } })))
      assert.are.equal(rule, paths.hidden_rule(project .. "/a", policy({ hidden = { rule } })))
      assert.is_nil(paths.hidden_rule(project .. "/b", policy({ hidden = { rule } })))
    end)
  end)

  describe("opens_home", function()
    it("names the home folder itself", function()
      local reason, short = paths.opens_home(dir .. "/home/u")
      assert.are.equal(dir .. "/home/u is the home folder: not writable unless policy.allow_home_rw = true", reason)
      assert.are.equal("is ~: not writable (policy.allow_home_rw)", short)
    end)

    it("names a folder above it", function()
      local reason, short = paths.opens_home(dir .. "/home")
      assert.are.equal(dir .. "/home holds the home folder: not writable unless policy.allow_home_rw = true", reason)
      assert.are.equal("holds ~: not writable (policy.allow_home_rw)", short)
      assert.is_truthy((paths.opens_home("/")))
    end)

    it("is nil for a folder inside home or beside it, and without a HOME", function()
      assert.is_nil(paths.opens_home(dir .. "/home/u/project"))
      assert.is_nil(paths.opens_home(outside))
      surroundings.use({
        getenv = function()
          return nil
        end,
      })
      assert.is_nil(paths.opens_home("/"))
    end)

    it("compares the home folder's real path", function()
      os.execute("ln -s " .. dir .. "/home/u " .. dir .. "/homelink")
      surroundings.use({
        getenv = function(name)
          return name == "HOME" and dir .. "/homelink" or nil
        end,
      })
      assert.is_truthy((paths.opens_home(dir .. "/home/u")))
    end)
  end)
end)
