local core = require("flemma_sandbox.core")
local h = require("support.helpers")

describe("core.bwrap_argv", function()
  local dir
  before_each(function()
    dir = h.tmpdir()
    h.sh("mkdir " .. h.shell_quote(dir .. "/proj") .. " && touch " .. h.shell_quote(dir .. "/secret"))
  end)
  after_each(function()
    h.rmdir(dir)
  end)

  local function policy(over)
    local p = { rw_paths = { dir .. "/proj", "/tmp" }, network = false, allow_privileged = false }
    for k, v in pairs(over or {}) do
      p[k] = v
    end
    return p
  end

  it("binds a kept /dev/shm folder over the one --dev makes; without it, a tmpfs", function()
    h.sh("mkdir " .. h.shell_quote(dir .. "/shm") .. " " .. h.shell_quote(dir .. "/tmp"))
    local kept = policy({
      persist_paths = { "/tmp", "/dev/shm" },
      persist_sources = { dir .. "/tmp", dir .. "/shm" },
      tmpfs_size = 1048576,
    })
    local text = table.concat(assert(core.bwrap_argv(kept, nil, { "true" })), " ")
    assert.truthy(text:find("--dev /dev --bind " .. dir .. "/shm /dev/shm --proc", 1, true), text)
    assert.truthy(text:find("--bind " .. dir .. "/tmp /tmp", 1, true), text)
    assert.is_nil(text:find("--tmpfs /dev/shm", 1, true), text)
    -- control: no kept folder, the sized tmpfs as before
    text = table.concat(assert(core.bwrap_argv(policy({ tmpfs_size = 1048576 }), nil, { "true" })), " ")
    assert.truthy(text:find("--dev /dev --size 1048576 --tmpfs /dev/shm", 1, true), text)
  end)

  it("binds shallowest first, a writable path before a protected one at equal depth", function()
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/proj/.git/hooks/keep"))
    local argv = assert(core.bwrap_argv(
      policy({
        rw_paths = { dir .. "/proj", dir .. "/proj/.git/hooks/keep", "/tmp" },
        ro_paths = { dir .. "/proj/.git/hooks", dir .. "/proj/missing-yet", "/tmp" },
      }),
      nil,
      { "true" }
    ))
    local binds = {}
    for i = 1, #argv do
      if argv[i] == "--bind" or argv[i] == "--ro-bind" then
        binds[#binds + 1] = argv[i] .. " " .. argv[i + 1]
      end
    end
    assert.are.same({
      "--ro-bind /",
      "--bind /tmp",
      "--ro-bind /tmp",
      "--bind " .. dir .. "/proj",
      "--ro-bind " .. dir .. "/proj/.git/hooks",
      "--bind " .. dir .. "/proj/.git/hooks/keep",
    }, binds)
  end)

  it("mounts a private folder before what is bound into it, and '/' before all", function()
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/home/proj") .. " && touch " .. h.shell_quote(dir .. "/home/.gitconfig"))
    local argv, skipped = core.bwrap_argv(
      policy({
        rw_paths = { dir .. "/home/proj", "/" },
        ro_paths = {},
        private_paths = { dir .. "/home", "/tmp", dir .. "/secret", dir .. "/missing" },
        show_paths = { dir .. "/home/.gitconfig" },
      }),
      nil,
      { "true" }
    )
    local mounts = {}
    for i = 1, #argv do
      if argv[i] == "--bind" or argv[i] == "--ro-bind" or argv[i] == "--tmpfs" then
        mounts[#mounts + 1] = argv[i] .. " " .. argv[i + 1]
      end
    end
    assert.are.same({
      "--ro-bind /",
      "--bind /",
      "--tmpfs /tmp",
      "--tmpfs " .. dir .. "/home",
      "--bind " .. dir .. "/home/proj",
      "--ro-bind " .. dir .. "/home/.gitconfig",
    }, mounts)
    assert.are.same({
      { path = dir .. "/secret", reason = "not a folder" },
      { path = dir .. "/missing", reason = "does not exist" },
    }, skipped)
  end)

  it("makes inner tmpfs folders whether or not the host has them, and remounts read-only last", function()
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/home/.cache/nvim"))
    local argv = assert(core.bwrap_argv(
      policy({
        rw_paths = {},
        private_paths = { dir .. "/home" },
        inner_tmpfs = { dir .. "/home/.npm", dir .. "/home/.cache" },
        show_paths = { dir .. "/home/.cache/nvim" },
        readonly_paths = { dir .. "/home" },
      }),
      nil,
      { "true" }
    ))
    local ops = {}
    for i = 1, #argv do
      if argv[i] == "--ro-bind" or argv[i] == "--tmpfs" or argv[i] == "--remount-ro" then
        ops[#ops + 1] = argv[i] .. " " .. argv[i + 1]
      end
    end
    assert.are.same({
      "--ro-bind /",
      "--tmpfs " .. dir .. "/home",
      "--tmpfs " .. dir .. "/home/.npm", -- not on the host: made inside
      "--tmpfs " .. dir .. "/home/.cache",
      "--ro-bind " .. dir .. "/home/.cache/nvim",
      "--remount-ro " .. dir .. "/home",
    }, ops)
    local dash
    for i, word in ipairs(argv) do
      dash = dash or (word == "--" and i)
    end
    assert.are.equal("--remount-ro", argv[dash - 2])
  end)

  it("builds the exact argv for a default policy", function()
    local argv, skipped = core.bwrap_argv(policy(), { path = "/usr/bin/bwrap" }, { "bash", "-c", "echo hi" })
    assert.are.same({
      "/usr/bin/bwrap",
      "--ro-bind",
      "/",
      "/",
      "--bind",
      "/tmp",
      "/tmp",
      "--bind",
      dir .. "/proj",
      dir .. "/proj",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
      "--unshare-user",
      "--cap-drop",
      "ALL",
      "--unshare-pid",
      "--unshare-uts",
      "--unshare-ipc",
      "--unshare-net",
      "--die-with-parent",
      "--new-session",
      "--",
      "bash",
      "-c",
      "echo hi",
    }, argv)
    assert.are.same({}, skipped)
  end)

  it("shares the network and keeps privileges only when asked", function()
    local argv = core.bwrap_argv(policy({ network = true, allow_privileged = true }), nil, { "true" })
    local joined = " " .. table.concat(argv, " ") .. " "
    assert.matches(" %-%-share%-net ", joined)
    assert.not_matches("unshare%-net", joined)
    assert.not_matches("unshare%-user", joined)
    assert.not_matches("cap%-drop", joined)
    assert.are.equal("bwrap", argv[1])
  end)

  it("never mounts a tmpfs on /run", function()
    local argv = core.bwrap_argv(policy(), nil, { "true" })
    for i, word in ipairs(argv) do
      if word == "--tmpfs" then
        assert.are_not.equal("/run", argv[i + 1])
      end
    end
  end)

  it("puts extra_args before '--' and the inner command after it, unparsed", function()
    local argv = core.bwrap_argv(policy(), { extra_args = { "--tmpfs", "/var/tmp" } }, { "--help", "--version" })
    local n = #argv
    assert.are.same({ "--tmpfs", "/var/tmp", "--", "--help", "--version" }, { unpack(argv, n - 4, n) })
  end)

  it("skips rw paths that do not exist or lie under /dev or /proc, with reasons", function()
    local argv, skipped = core.bwrap_argv(
      policy({ rw_paths = { dir .. "/missing", "/proc/self", "/dev/shm", dir .. "/proj" } }),
      nil,
      { "true" }
    )
    assert.are.same({
      { path = dir .. "/missing", reason = "does not exist" },
      { path = "/proc/self", reason = "inside /dev or /proc, which the sandbox replaces" },
      { path = "/dev/shm", reason = "inside /dev or /proc, which the sandbox replaces" },
    }, skipped)
    assert.are.same({ "--bind", dir .. "/proj", dir .. "/proj" }, { unpack(argv, 5, 7) })
    assert.are.equal("--dev", argv[8])
  end)

  it("hides deny paths: a tmpfs over a folder, /dev/null over a file", function()
    local argv = core.bwrap_argv(policy({ deny_paths = { dir .. "/proj", dir .. "/secret" } }), nil, { "true" })
    local joined = table.concat(argv, " ")
    assert.truthy(joined:find("--proc /proc --tmpfs " .. dir .. "/proj --remount-ro " .. dir .. "/proj", 1, true))
    assert.truthy(joined:find("--ro-bind /dev/null " .. dir .. "/secret", 1, true))
  end)

  it("sets a clean, sorted environment when policy.env is given", function()
    local argv = core.bwrap_argv(policy({ env = { PATH = "/usr/bin", HOME = "/h" } }), nil, { "true" })
    local joined = table.concat(argv, " ")
    assert.truthy(joined:find("--clearenv --setenv HOME /h --setenv PATH /usr/bin --", 1, true))
  end)

  it("returns nil, err for bad data", function()
    local cases = {
      { policy({ rw_paths = { "relative/path" } }), { "true" }, "not an absolute path" },
      { policy(), {}, "inner command is empty" },
      { policy(), { "" }, "inner command is empty" },
      { policy(), { "echo", "a\0b" }, "inner_cmd[2] contains a NUL byte" },
      { policy({ rw_paths = { "/tmp\0x" } }), { "true" }, "policy.rw_paths[1] contains a NUL byte" },
      { policy({ env = { ["A=B"] = "x" } }), { "true" }, "policy.env" },
    }
    for _, c in ipairs(cases) do
      local argv, err = core.bwrap_argv(c[1], nil, c[2])
      assert.is_nil(argv)
      assert.matches(c[3], err, 1, true)
    end
  end)

  it("raises for wrong types, naming the field", function()
    assert.has_error(function()
      core.bwrap_argv({ rw_paths = {}, allow_privileged = false }, nil, { "true" })
    end, "bad argument #1 to 'bwrap_argv' (policy.network: boolean expected, got nil)")
    assert.has_error(function()
      core.bwrap_argv(policy({ rw_paths = "/tmp" }), nil, { "true" })
    end, "bad argument #1 to 'bwrap_argv' (policy.rw_paths: table expected, got string)")
    assert.has_error(function()
      core.bwrap_argv(policy(), nil, { "echo", 1 })
    end, "bad argument #3 to 'bwrap_argv' (inner_cmd[2]: string expected, got number)")
    assert.has_error(function()
      core.bwrap_argv(policy(), { path = 1 }, { "true" })
    end, "bad argument #2 to 'bwrap_argv' (backend_config.path: string expected, got number)")
    assert.has_error(function()
      core.bwrap_argv(policy(), "x", { "true" })
    end, "bad argument #2 to 'bwrap_argv' (backend_config: table expected, got string)")
  end)
end)
