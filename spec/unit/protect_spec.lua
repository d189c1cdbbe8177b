--- deny_read, deny_write and socket rules as the policy resolves them.
local core = require("flemma_sandbox.core")
local config = require("flemma_sandbox.config")
local h = require("support.helpers")
local surroundings = require("flemma_sandbox.base.surroundings")
local policy = require("flemma_sandbox.policy")
local protect = require("flemma_sandbox.policy.protect")

describe("protect", function()
  it("effective() applies '!entry' removals in order", function()
    assert.are.same({ "b", "c" }, protect.effective({ "a", "b", "!a", "c" }))
    assert.are.same({ "a" }, protect.effective({ "!a", "a" }))
    assert.are.same({}, protect.effective(nil))
  end)

  it("a layer adds to deny_read instead of replacing it, and can remove defaults", function()
    local merged = config.merge_layer(config.defaults, { policy = { deny_read = { "~/.mine", "!~/.kube" } } })
    local list = protect.effective(merged.policy.deny_read)
    local has = {}
    for _, e in ipairs(list) do
      has[e] = true
    end
    assert.is_true(has["~/.ssh"] and has["~/.mine"])
    assert.is_nil(has["~/.kube"])
    -- rw_paths still replaces
    merged = config.merge_layer(config.defaults, { policy = { rw_paths = { "/x" } } })
    assert.are.same({ "/x" }, merged.policy.rw_paths)
  end)

  it("validation names the new keys", function()
    local cases = {
      { { policy = { deny_write = "x" } }, "sandbox.policy.deny_write: expected a list of strings" },
      {
        { policy = { secret_scan_depth = 65 } },
        "sandbox.policy.secret_scan_depth: expected a whole number from 0 to 64",
      },
      { { policy = { seccomp = "yes" } }, "sandbox.policy.seccomp: expected boolean, got string" },
      { { policy = { limits = { processes = 0 } } }, "sandbox.policy.limits.processes: expected a positive" },
      { { policy = { limits = { stack = 1 } } }, "sandbox.policy.limits.stack: unknown key" },
      { { policy = { allow_sockets = { 1 } } }, "sandbox.policy.allow_sockets%[1%]: expected string" },
    }
    for _, c in ipairs(cases) do
      local ok, err = config.validate(c[1])
      assert.is_false(ok)
      assert.matches("^" .. c[2]:gsub("%-", "%%-"), err)
    end
    assert.is_true((config.validate({ policy = { limits = { memory_mb = false } } })))
  end)

  describe("in a project", function()
    local dir, home, proj
    before_each(function()
      -- under HOME: /var/tmp is a shared temp folder, which gets no project entries
      h.sh("mkdir -p " .. h.shell_quote(os.getenv("HOME") .. "/.cache"))
      local made = h.capture("mktemp -d " .. h.shell_quote(os.getenv("HOME") .. "/.cache/flemma-unit.XXXXXX"))
      dir = core.resolve((made:gsub("%s+$", "")), "/")
      home, proj = dir .. "/home", dir .. "/home/proj"
      h.sh("mkdir -p " .. proj .. "/.git/hooks " .. proj .. "/deep/er " .. home .. "/.ssh " .. home .. "/.config")
      h.write(home .. "/.ssh/id", "k")
      h.write(proj .. "/.env", "k")
      h.write(proj .. "/deep/er/.env", "k")
      h.sh("mkdir -p " .. proj .. "/node_modules/x && touch " .. proj .. "/node_modules/x.key " .. proj .. "/a.pem")
      surroundings.use(h.project_surroundings(function()
        return proj
      end, home))
    end)
    after_each(function()
      surroundings.use(nil)
      os.execute("rm -rf " .. h.shell_quote(dir))
    end)

    local function resolve(over)
      local p = config.merge_layer(config.defaults, { policy = over or {} }).policy
      p.rw_paths = p.rw_paths == config.defaults.policy.rw_paths and { "$CWD" } or p.rw_paths
      return policy.resolve(p, nil)
    end

    it("hides default secrets and the secret files anywhere in the project", function()
      local r = resolve({ rw_paths = { "$CWD" } })
      local rules = {}
      for _, x in ipairs(r.hidden) do
        rules[x.path] = x.rule
      end
      -- the private home takes ~/.ssh out of view: no mount needed
      assert.is_nil(rules[home .. "/.ssh"])
      assert.matches("private home", policy.hidden_rule(home .. "/.ssh/id", r).rule)
      -- secret files are the helper's scan, asked by name on the host side
      assert.are.same({ proj }, r.secret_scan.roots)
      assert.are.equal("secret_files", policy.hidden_rule(proj .. "/.env", r).rule)
      assert.are.equal("secret_files", policy.hidden_rule(proj .. "/a.pem", r).rule)
      assert.are.equal("secret_files", policy.hidden_rule(proj .. "/deep/er/.env", r).rule)
      assert.are.equal("secret_files", policy.hidden_rule(proj .. "/.env.local", r).rule)
      assert.is_nil(policy.hidden_rule(proj .. "/node_modules/x.key", r)) -- node_modules is not entered
      assert.is_nil(policy.hidden_rule(proj .. "/env.md", r))
      assert.is_false(policy.is_readable(home .. "/.ssh/id", r))
      assert.is_true(policy.is_readable(proj .. "/README", r))
      r = resolve({ rw_paths = { "$CWD" }, secret_scan_depth = 2 })
      assert.is_true(policy.is_readable(proj .. "/deep/er/.env", r))
      r = resolve({ rw_paths = { "$CWD" }, secret_scan_depth = 0 })
      assert.is_true(policy.is_readable(proj .. "/.env", r))
    end)

    it("protects what exists, watches what is missing, and pins the folders above nested git folders", function()
      h.sh("mkdir -p " .. proj .. "/vendor/lib/.git")
      local r = resolve({ rw_paths = { "$CWD" } })
      local by, watched = {}, {}
      for _, p in ipairs(r.protected) do
        by[p.path] = p
      end
      for _, p in ipairs(r.watched) do
        watched[p.path] = p
      end
      assert.is_true(by[proj .. "/.git"].dir)
      assert.is_true(by[proj .. "/vendor/lib/.git"].dir)
      assert.is_truthy(watched[proj .. "/.envrc"])
      assert.is_true(watched[proj .. "/.vscode"].dir)
      assert.is_nil(by[proj .. "/.envrc"])
      table.sort(r.pins)
      assert.are.same({ proj .. "/vendor", proj .. "/vendor/lib" }, r.pins)
      assert.are.same({ proj }, r.projects)
      assert.are.same({ proj }, r.project_roots)
      local ok, why = policy.is_writable(proj .. "/.git/hooks/pre-commit", r)
      assert.is_false(ok)
      assert.matches("protected %(deny_write %.git/%)", why)
      ok, why = policy.is_writable(proj .. "/src/.git/config", r)
      assert.is_false(ok, "a .git that does not exist yet is git's too")
      assert.matches("git tool", why)
      assert.is_false((policy.is_writable(proj .. "/.envrc", r)))
      assert.is_true((policy.is_writable(proj .. "/src/x.c", r)))
      -- a nested ".git" that is a symlink: the folder it points to is git's
      h.sh("mkdir -p " .. proj .. "/lib/real-git && ln -s real-git " .. proj .. "/lib/.git")
      r = resolve({ rw_paths = { "$CWD" } })
      assert.is_false((policy.is_writable(proj .. "/lib/real-git/config", r)))
    end)

    it("keeps every folder on Neovim's runtimepath read-only, but not a writable root itself", function()
      h.sh("mkdir -p " .. dir .. "/plugins/a/plugin " .. proj .. "/vendored-plugin")
      surroundings.use(h.project_surroundings(
        function()
          return proj
        end,
        home,
        {
          runtimepath = function()
            return { dir .. "/plugins/a", proj .. "/vendored-plugin", proj }
          end,
        }
      ))
      local r = resolve({ rw_paths = { "$CWD", dir .. "/plugins" } })
      local ok, why = policy.is_writable(dir .. "/plugins/a/plugin/evil.lua", r)
      assert.is_false(ok)
      assert.matches("deny_write %$NVIM_RUNTIMEPATH/", why)
      assert.is_false((policy.is_writable(proj .. "/vendored-plugin/init.lua", r)))
      assert.is_true((policy.is_writable(proj .. "/src.lua", r)), "the project on the runtimepath: you chose it")
      -- control: without the rule the plugin folder is writable
      r = resolve({ rw_paths = { "$CWD", dir .. "/plugins" }, deny_write = { "!$NVIM_RUNTIMEPATH/" } })
      assert.is_true((policy.is_writable(dir .. "/plugins/a/plugin/evil.lua", r)))
    end)

    it("takes ~/.cache and ~/.local/share for tool folders, not projects, but keeps their rules", function()
      h.sh("mkdir -p " .. home .. "/.cache/nvim " .. home .. "/.local/share/x/.git")
      local r = resolve({ rw_paths = { "$CWD", "~/.cache", "~/.local/share" } })
      assert.are.same({ proj }, r.projects)
      assert.is_true((policy.is_writable(home .. "/.local/share/x/.git/config", r)), "a tool's clone there")
      assert.is_false((policy.is_writable(home .. "/.cache/nvim/luac/x", r)), "$NVIM_CACHE/ still applies")
      assert.is_false((policy.is_writable(home .. "/.local/share/systemd/user/x.service", r)))
    end)

    it("keeps core.hooksPath read-only, from the repository's config or the user's", function()
      h.sh("mkdir -p " .. proj .. "/.husky")
      h.write(proj .. "/.git/config", "[core]\n\thooksPath = .husky\n")
      local r = resolve({ rw_paths = { "$CWD" } })
      assert.is_false((policy.is_writable(proj .. "/.husky/pre-commit", r)))
      h.write(proj .. "/.git/config", "[core]\n\tbare = false\n")
      h.write(home .. "/.gitconfig", '[core]\n  hooksPath = "githooks"\n')
      r = resolve({ rw_paths = { "$CWD" } })
      assert.is_false((policy.is_writable(proj .. "/githooks/pre-commit", r)), "missing: watched")
      assert.is_true((policy.is_writable(proj .. "/.husky/pre-commit", r)))
      os.remove(home .. "/.gitconfig")
    end)

    it("protects home files only when a folder above them is writable, not when chosen itself", function()
      local r = resolve({ rw_paths = { "$CWD" } })
      assert.is_true((policy.is_writable(proj .. "/x", r)))
      r = resolve({ rw_paths = { "~" }, allow_home_rw = true })
      assert.is_false((policy.is_writable(home .. "/.bashrc", r)))
      assert.is_false((policy.is_writable(home .. "/.config/systemd/user/x.service", r)))
      local first_missing
      for _, p in ipairs(r.watched) do
        if p.path == home .. "/.config/systemd" then
          first_missing = p
        end
      end
      assert.is_truthy(first_missing, "the first missing folder is watched")
      h.sh("mkdir -p " .. home .. "/.config/nvim")
      r = resolve({ rw_paths = { "~/.config/nvim" } })
      assert.is_true((policy.is_writable(home .. "/.config/nvim/init.lua", r)))
      r = resolve({ rw_paths = { "~" }, allow_home_rw = true })
      assert.is_false((policy.is_writable(home .. "/.config/nvim/init.lua", r)))
    end)

    it("follows a worktree's .git file to its gitdir and common dir", function()
      local main = dir .. "/main/.git"
      h.sh("mkdir -p " .. main .. "/worktrees/wt/ " .. main .. "/hooks && rm -rf " .. proj .. "/.git")
      h.write(main .. "/worktrees/wt/commondir", "../..\n")
      h.write(proj .. "/.git", "gitdir: " .. main .. "/worktrees/wt\n")
      local r = resolve({ rw_paths = { "$CWD", dir .. "/main" } })
      assert.is_false((policy.is_writable(main .. "/hooks/post-checkout", r)))
      assert.is_false((policy.is_writable(main .. "/config", r)))
      local okh, whyh = policy.is_writable(proj .. "/.husky/pre-commit", r)
      assert.is_true(okh, whyh)
    end)

    it("never hides a folder that holds a writable path", function()
      local r, skipped = resolve({ rw_paths = { "~/.ssh" } })
      for _, x in ipairs(r.hidden) do
        assert.are_not.equal(home .. "/.ssh", x.path)
      end
      local found
      for _, s in ipairs(skipped) do
        found = found or (s.path == "~/.ssh" and s.reason:match("holds the writable folder"))
      end
      assert.is_truthy(found)
    end)
  end)
end)
