--- policy/resolution.lua: the parts of one resolution of a policy: how a
--- configured path expands and what that looked at, the roots bound from
--- the host, the private folders made as tmpfs, the network mode, the chat
--- files, and what the cache watches.
local resolution = require("flemma_sandbox.policy.resolution")
local surroundings = require("flemma_sandbox.base.surroundings")
local h = require("support.helpers")

describe("policy.resolution", function()
  describe("expander", function()
    local dir

    before_each(function()
      dir = h.tmpdir()
    end)

    after_each(function()
      h.rmdir(dir)
    end)

    it("expands variables, resolves against the cwd and notes the raw and real paths", function()
      os.execute("mkdir -p " .. dir .. "/real && ln -s " .. dir .. "/real " .. dir .. "/link")
      local looked = {}
      local expand = resolution.expander({ BASE = dir }, "/", looked)
      local real, err, raw = expand("$BASE/link/f")
      assert.is_nil(err)
      assert.are.equal(dir .. "/real/f", real)
      assert.are.equal(dir .. "/link/f", raw)
      assert.are.same({ dir .. "/link/f", dir .. "/real/f" }, looked)
    end)

    it("places a relative entry in the cwd it was given", function()
      local expand = resolution.expander({}, dir, {})
      assert.are.equal(dir .. "/sub", (expand("sub")))
    end)

    it("names the variable that is not set, and notes nothing", function()
      local looked = {}
      local real, err = resolution.expander({}, "/", looked)("$NOPE/x")
      assert.is_nil(real)
      assert.are.equal("variable NOPE is not set", err)
      assert.are.same({}, looked)
    end)
  end)

  describe("network_mode_of", function()
    it("maps policy.network to its mode", function()
      assert.are.equal("off", resolution.network_mode_of({ network = false }))
      assert.are.equal("allowlist", resolution.network_mode_of({ network = true }))
      assert.are.equal("allowlist", resolution.network_mode_of({ network = "allowlist" }))
      assert.are.equal("allowlist", resolution.network_mode_of({}))
      assert.are.equal("ask", resolution.network_mode_of({ network = "ask" }))
      assert.are.equal("host", resolution.network_mode_of({ network = "host" }))
    end)
  end)

  describe("bound_roots", function()
    it("leaves out the private writable roots and keeps what lies inside them", function()
      local bound = resolution.bound_roots({ "/tmp", "/p", "/tmp/project", "/run/user/1/t" }, {
        writable = { "/tmp", "/run/user/1/t" },
      })
      assert.are.same({ "/p", "/tmp/project" }, bound)
    end)
  end)

  describe("private_split", function()
    it("makes tmpfs of the private folders that are neither inner nor kept", function()
      local private = {
        folders = { { path = "/home/u" }, { path = "/tmp" }, { path = "/home/u/.cache" }, { path = "/var/kept" } },
        inner = { "/home/u/.cache", "/home/u/.local/kept" },
      }
      local paths, inner = resolution.private_split(private, { paths = { "/var/kept", "/home/u/.local/kept" } })
      assert.are.same({ "/home/u", "/tmp" }, paths)
      assert.are.same({ "/home/u/.cache" }, inner)
    end)
  end)

  describe("chat_files_of", function()
    after_each(function()
      surroundings.use(nil)
    end)

    it("is the buffer's file and the other chats of its folder, sorted", function()
      surroundings.use({
        buffer_file = function(bufnr)
          return bufnr == 7 and "/c/m.chat" or nil
        end,
      })
      local file, real, files = resolution.chat_files_of(7, { "/c/z.chat", "/c/a.chat" })
      assert.are.equal("/c/m.chat", file)
      assert.are.equal("/c/m.chat", real)
      assert.are.same({ "/c/a.chat", "/c/m.chat", "/c/z.chat" }, files)
    end)

    it("is nil for a buffer without a file", function()
      surroundings.use({
        buffer_file = function()
          return nil
        end,
      })
      local file, real, files = resolution.chat_files_of(1, {})
      assert.is_nil(file)
      assert.is_nil(real)
      assert.are.same({}, files)
    end)
  end)

  describe("note_looked", function()
    local dir

    before_each(function()
      dir = h.tmpdir()
    end)

    after_each(function()
      h.rmdir(dir)
    end)

    it("watches the roots, the projects' tops, the rules, each .git and what git reads links and hooks from", function()
      os.execute("mkdir -p " .. dir .. "/p/.git " .. dir .. "/p/wt")
      h.write(dir .. "/p/wt/.git", "gitdir: x\n")
      local looked = {}
      resolution.note_looked(
        looked,
        { "/root1" },
        { dir .. "/p" },
        { { { path = "/prot" } }, { { path = "/watch" } } },
        {
          dot_gits = { dir .. "/p/.git", dir .. "/p/wt/.git" },
          protect = { { path = dir .. "/p/.git" } },
          configs = { "/h/.gitconfig" },
        },
        "/c/chat.chat"
      )
      assert.are.same({
        "/root1",
        dir .. "/p/",
        "/prot",
        "/watch",
        dir .. "/p/.git",
        dir .. "/p/wt/.git",
        dir .. "/p/wt/.git/",
        dir .. "/p/.git",
        dir .. "/p/.git/config/",
        dir .. "/p/.git/config.worktree/",
        dir .. "/p/.git/commondir/",
        "/h/.gitconfig/",
        "/c/chat.chat",
      }, looked)
    end)
  end)
end)
