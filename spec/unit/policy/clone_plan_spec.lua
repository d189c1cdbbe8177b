--- policy/clone_plan.lua: in clone mode each git repository among the
--- writable projects has a copy in the chat's folder; here which
--- repositories, where their copies are, the lists written beside a copy
--- (read defensively) and what clone mode changes in a resolved policy.
local workspace = require("flemma_sandbox.policy.clone_plan")
local h = require("support.helpers")

describe("policy.clone_plan", function()
  local dir

  local function sh(cmd)
    local status = os.execute(cmd)
    -- 0 from LuaJIT, true from a LuaJIT built with Lua 5.2's os.execute
    assert(status == 0 or status == true, cmd)
  end

  --- A repository as repository_of sees one: a .git folder holding HEAD.
  local function repo(path)
    sh("mkdir -p " .. path .. "/.git")
    h.write(path .. "/.git/HEAD", "ref: refs/heads/main\n")
  end

  before_each(function()
    dir = h.tmpdir()
  end)

  after_each(function()
    h.rmdir(dir)
  end)

  describe("repository_of", function()
    it("is the nearest folder at or above the root with a .git folder holding HEAD", function()
      repo(dir .. "/r")
      sh("mkdir -p " .. dir .. "/r/src/deep")
      assert.are.same({ dir .. "/r", "." }, { workspace.repository_of(dir .. "/r") })
      assert.are.same({ dir .. "/r", "src/deep" }, { workspace.repository_of(dir .. "/r/src/deep") })
    end)

    it("takes the inner repository of nested ones", function()
      repo(dir .. "/r")
      repo(dir .. "/r/vendor/x")
      assert.are.same({ dir .. "/r/vendor/x", "." }, { workspace.repository_of(dir .. "/r/vendor/x") })
    end)

    it("skips a .git file, a .git without HEAD and a .git link", function()
      sh("mkdir -p " .. dir .. "/a " .. dir .. "/b/.git " .. dir .. "/c")
      h.write(dir .. "/a/.git", "gitdir: /elsewhere\n")
      repo(dir .. "/real")
      sh("ln -s " .. dir .. "/real/.git " .. dir .. "/c/.git")
      assert.is_nil(workspace.repository_of(dir .. "/a"))
      assert.is_nil(workspace.repository_of(dir .. "/b"))
      assert.is_nil(workspace.repository_of(dir .. "/c"))
    end)
  end)

  describe("clone_for", function()
    it("is the top's name and a hash of its path in the chat's workspace folder", function()
      local a = workspace.clone_for("/chat", "/home/u/my project")
      assert.matches("^/chat/workspace/my_project%-%x+$", a)
      assert.are.equal(12, #a:match("%-(%x+)$"))
      assert.are_not.equal(a, workspace.clone_for("/chat", "/other/my project"))
      assert.are.equal(a, workspace.clone_for("/chat", "/home/u/my project"))
    end)
  end)

  describe("of", function()
    it("is empty in direct mode, without a chat, or without sandboxes", function()
      repo(dir .. "/r")
      local resolved = { chat = { dir = dir .. "/chat" }, project_roots = { dir .. "/r" } }
      assert.are.same({}, workspace.of(resolved, { workspace = "direct" }))
      assert.are.same({}, workspace.of(resolved, nil))
      assert.are.same({}, workspace.of({ project_roots = { dir .. "/r" } }, { workspace = "clone" }))
    end)

    it("has one copy per repository, once for several roots in it, none for a root outside git", function()
      repo(dir .. "/r")
      sh("mkdir -p " .. dir .. "/r/a " .. dir .. "/r/b " .. dir .. "/plain")
      local resolved = {
        chat = { dir = dir .. "/chat" },
        project_roots = { dir .. "/r/a", dir .. "/plain", dir .. "/r/b" },
      }
      local spaces = workspace.of(resolved, { workspace = "clone" })
      assert.are.same({ { top = dir .. "/r", clone = workspace.clone_for(dir .. "/chat", dir .. "/r") } }, spaces)
    end)
  end)

  describe("ignored", function()
    it("lists plain folder names the user's tree has, up to IGNORED_LIMIT", function()
      sh("mkdir -p " .. dir .. "/top/node_modules " .. dir .. "/top/build " .. dir .. "/top/.git")
      sh("ln -s " .. dir .. "/top/build " .. dir .. "/top/linked")
      h.write(dir .. "/top/file", "")
      h.write(
        dir .. "/clone.ignored",
        "node_modules/\nbuild/\nmissing/\nlinked/\nfile/\n.git/\n../\n./\na/b/\nno-slash\n"
      )
      local space = { top = dir .. "/top", clone = dir .. "/clone" }
      assert.are.same({ "node_modules", "build" }, workspace.ignored(space))
    end)

    it("stops at IGNORED_LIMIT", function()
      local lines = {}
      for i = 1, workspace.IGNORED_LIMIT + 5 do
        sh("mkdir -p " .. dir .. "/top/d" .. i)
        lines[#lines + 1] = "d" .. i .. "/"
      end
      h.write(dir .. "/clone.ignored", table.concat(lines, "\n") .. "\n")
      assert.are.equal(workspace.IGNORED_LIMIT, #workspace.ignored({ top = dir .. "/top", clone = dir .. "/clone" }))
    end)

    it("is empty without the list", function()
      assert.are.same({}, workspace.ignored({ top = dir, clone = dir .. "/none" }))
    end)
  end)

  describe("submodules", function()
    it("reads path TAB absolute objects folder, refusing absolute paths, .. and malformed lines", function()
      h.write(dir .. "/clone.submodules", table.concat({
        "libs/a\t/home/u/r/.git/modules/a",
        "/abs\t/x",
        "../up\t/x",
        "b/../../up\t/x",
        "rel-objects\tnot/absolute",
        "no tab here",
        "c\t/o\textra",
        "deep/sub/d\t/o/d",
      }, "\n") .. "\n")
      assert.are.same({
        { path = "libs/a", objects = "/home/u/r/.git/modules/a" },
        { path = "deep/sub/d", objects = "/o/d" },
      }, workspace.submodules({ clone = dir .. "/clone" }))
    end)
  end)

  describe("fields", function()
    it("in direct mode gives none and changes no list", function()
      local resolved = { protected = { { path = "/r/.git", rule = "g" } }, ro_paths = { "/r/.git" }, pins = {} }
      assert.is_nil(workspace.fields(resolved, { workspace = "direct" }))
      local before = { protected = { { path = "/r/.git", rule = "g" } }, ro_paths = { "/r/.git" }, pins = {} }
      assert.are.same(before, resolved)
    end)

    it("makes each copy's .git and its submodules' the sandbox's own, not protected", function()
      repo(dir .. "/r")
      local chat = dir .. "/chat"
      local clone = workspace.clone_for(chat, dir .. "/r")
      sh("mkdir -p " .. chat .. "/workspace")
      h.write(clone .. ".submodules", "libs/a\t/objects/a\n")
      local protected = {
        { path = dir .. "/r/.git", rule = "a git folder" },
        { path = dir .. "/r/libs/a/.git/hooks", rule = "sub" },
        { path = dir .. "/r/.envrc", rule = "deny_write" },
      }
      local resolved = {
        chat = { dir = chat },
        project_roots = { dir .. "/r" },
        protected = protected,
        ro_paths = { dir .. "/r/.git/config", "/usr" },
        pins = { dir .. "/r/.gitmodules", dir .. "/r/.git/HEAD" },
      }
      local fields = assert(workspace.fields(resolved, { workspace = "clone" }))
      assert.are.same({ { top = dir .. "/r", clone = clone } }, fields.workspaces)
      assert.are.same({ dir .. "/r/.git", dir .. "/r/libs/a/.git" }, fields.own_git)
      assert.are.same({ { path = dir .. "/r/.envrc", rule = "deny_write" } }, fields.protected)
      assert.are.same({ "/usr" }, fields.ro_paths)
      assert.are.same({ dir .. "/r/.gitmodules" }, fields.pins)
      -- the resolved policy as it was
      assert.are.equal(protected, resolved.protected)
      assert.are.equal(3, #resolved.protected)
      assert.are.same({ dir .. "/r/.git/config", "/usr" }, resolved.ro_paths)
      assert.is_nil(resolved.workspaces)
      assert.is_nil(resolved.own_git)
    end)
  end)
end)
