local h = require("support.helpers")
local surroundings = require("flemma_sandbox.base.surroundings")
local sandbox = require("flemma_sandbox")

describe("flemma_sandbox API", function()
  local dir, calls
  before_each(function()
    dir = h.tmpdir()
    h.sh(table.concat({
      "cd " .. h.shell_quote(dir),
      "mkdir -p proj chats home/u outside proj/sub",
      "echo secret > home/u/.bashrc",
      "ln -s " .. h.shell_quote(dir .. "/home/u/.bashrc") .. " proj/bashrc-link",
      "ln -s ../outside proj/out-link",
    }, " && "))
    surroundings.use({
      cwd = function()
        return dir .. "/proj"
      end,
      buffer_dir = function(bufnr)
        return bufnr == 7 and dir .. "/chats" or nil
      end,
      getenv = function(name)
        return ({ HOME = dir .. "/home/u", PATH = os.getenv("PATH") })[name]
      end,
    })
    sandbox.clear()
    sandbox.reset_enabled()
    sandbox.setup()
    calls = {}
    sandbox.register("fake", {
      priority = 1,
      available = function()
        return true
      end,
      wrap = function(policy, backend_config, inner)
        calls[#calls + 1] = { policy = policy, backend_config = backend_config }
        local argv = { "fake-sandbox" }
        for _, w in ipairs(inner) do
          argv[#argv + 1] = w
        end
        return argv
      end,
    })
  end)
  after_each(function()
    surroundings.use(nil)
    sandbox.setup()
    sandbox.reset_enabled()
    h.rmdir(dir)
  end)

  it("setup() registers bwrap at priority 100 without replacing an existing one", function()
    assert.are.equal(100, sandbox.get("bwrap").priority)
    local mine = function()
      return false, "mine"
    end
    sandbox.register("bwrap", { available = mine, wrap = mine, priority = 5 })
    sandbox.setup({})
    assert.are.equal(5, sandbox.get("bwrap").priority)
  end)

  it("resolves the policy: variables expanded, real paths, skipped entries explained", function()
    sandbox.setup({
      policy = {
        rw_paths = { "$CWD", "urn:flemma:buffer:path", "$NOPE/x", "~/missing", "$CWD/sub", "proj/../proj" },
      },
    })
    local policy, skipped = sandbox.get_policy(7)
    assert.are.same({ dir .. "/proj", dir .. "/chats" }, policy.rw_paths)
    assert.is_true(policy.network)
    assert.is_false(policy.allow_privileged)
    assert.are.same({ "$NOPE/x", "~/missing", "proj/../proj" }, {
      skipped[1].path,
      skipped[2].path,
      skipped[3].path,
    })
    assert.matches("NOPE is not set", skipped[1].reason)
    assert.matches("does not exist", skipped[2].reason)
  end)

  it("warns once per session about an unset variable, not about a missing buffer file", function()
    local warnings = {}
    surroundings.use({
      cwd = function()
        return dir .. "/proj"
      end,
      getenv = function() end,
      warn = function(message)
        warnings[#warnings + 1] = message
      end,
    })
    sandbox.setup({ policy = { rw_paths = { "$CWD", "$FLEMMA_BUFFER_PATH", "$PROJECT_TYPO/x" } } })
    sandbox.get_policy(3)
    sandbox.wrap_command({ "true" }, 3)
    assert.are.same({ "flemma-sandbox: skipping $PROJECT_TYPO/x: variable PROJECT_TYPO is not set" }, warnings)
  end)

  it("skips $FLEMMA_BUFFER_PATH for a buffer without a file", function()
    local policy, skipped = sandbox.get_policy(3)
    local playground = dir .. "/home/u/.local/share/flemma-sandbox/playground"
    -- "/tmp" is the private /tmp, not bound from the host
    assert.are.same({ dir .. "/proj", playground }, policy.rw_paths)
    assert.are.same({ "/tmp", "/run", dir .. "/home/u" }, policy.private_paths)
    assert.are.equal("$FLEMMA_BUFFER_PATH", skipped[1].path)
  end)

  it("makes the playground 0700 on first use, under XDG_DATA_HOME or ~/.local/share", function()
    local playground = dir .. "/home/u/.local/share/flemma-sandbox/playground"
    assert.is_nil(h.read(playground .. "/."))
    sandbox.get_policy(3)
    local mode = h.run({ "stat", "-c", "%a", playground }).stdout
    assert.are.equal("700\n", mode)
    surroundings.use({
      cwd = function()
        return dir .. "/proj"
      end,
      getenv = function(name)
        return ({ HOME = dir .. "/home/u", XDG_DATA_HOME = dir .. "/xdg" })[name]
      end,
    })
    sandbox.setup({ policy = { rw_paths = { "urn:flemma:playground" } } })
    assert.are.same({ dir .. "/xdg/flemma-sandbox/playground" }, (sandbox.get_policy(3)).rw_paths)
  end)

  it("wrap_command returns the command unchanged when disabled", function()
    sandbox.setup({ enabled = false })
    local cmd = { "echo", "hi" }
    assert.are.equal(cmd, sandbox.wrap_command(cmd, 7))
    sandbox.setup({ enabled = true })
    sandbox.set_enabled(false)
    assert.are.equal(cmd, sandbox.wrap_command(cmd, 7))
  end)

  it("wrap_command fails for an unknown explicit backend", function()
    sandbox.setup({ backend = "nope" })
    local argv, err = sandbox.wrap_command({ "true" }, 7)
    assert.is_nil(argv)
    assert.are.equal("Unknown sandbox backend: nope", err)
  end)

  it("wrap_command hands the explicit backend a resolved policy and its config", function()
    sandbox.setup({ backend = "fake", backends = { fake = { level = 3 } }, policy = { network = false } })
    local argv = sandbox.wrap_command({ "echo", "hi" }, 7)
    assert.are.same({ "fake-sandbox", "echo", "hi" }, argv)
    local playground = dir .. "/home/u/.local/share/flemma-sandbox/playground"
    assert.are.same({ dir .. "/proj", dir .. "/chats", playground }, calls[1].policy.rw_paths)
    assert.is_false(calls[1].policy.network)
    assert.are.same({ level = 3 }, calls[1].backend_config)
  end)

  it("auto mode without any available backend runs the command unsandboxed", function()
    h.only_unavailable_backend("never", "not here")
    local cmd = { "true" }
    assert.are.equal(cmd, sandbox.wrap_command(cmd, 7))
    local ok, err = sandbox.validate_backend(7)
    assert.is_false(ok)
    assert.matches("never: not here", err, 1, true)
    assert.are.same({ nil, err }, { sandbox.detect_available_backend() })
  end)

  it("backend = required fails closed when no backend works", function()
    sandbox.setup({ backend = "required" })
    h.only_unavailable_backend("never", "not here")
    local argv, err = sandbox.wrap_command({ "true" }, 7)
    assert.is_nil(argv)
    assert.matches('refused: backend = "required" and No sandbox backend available %(never: not here%)', err)
  end)

  it("wrap_command rejects a bad inner command with a clear error", function()
    assert.are.same({ nil, "inner_cmd: expected a non-empty list of strings" }, { sandbox.wrap_command({}, 7) })
    assert.are.same({ nil, "inner_cmd[2]: expected string, got number" }, { sandbox.wrap_command({ "a", 1 }, 7) })
  end)

  it("makes the home_writable folders at their names under $HOME, a host symlink there or not", function()
    h.sh(
      "mkdir -p "
        .. h.shell_quote(dir .. "/outside/cache")
        .. " && ln -s ../../outside/cache "
        .. h.shell_quote(dir .. "/home/u/.cache")
    )
    local policy = sandbox.get_policy(nil)
    assert.are.same(
      { dir .. "/home/u/.cache", dir .. "/home/u/.npm", dir .. "/home/u/.local/state" },
      policy.inner_tmpfs
    )
    assert.are.same({ dir .. "/home/u" }, policy.readonly_paths)
    -- never inside a folder bound from the host: it would be made there
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/home/u/.local"))
    sandbox.setup({ policy = { home_allow = { "~/.local" } } })
    assert.are.same({ dir .. "/home/u/.cache", dir .. "/home/u/.npm" }, sandbox.get_policy(nil).inner_tmpfs)
    sandbox.setup({ policy = { home_writable = { "~" } } })
    policy = sandbox.get_policy(nil)
    assert.are.same({}, policy.inner_tmpfs)
    assert.are.same({}, policy.readonly_paths)
  end)

  it("is_path_writable follows symlinks before checking rw_paths", function()
    assert.is_true((sandbox.is_path_writable(dir .. "/proj/new-file.txt", 7)))
    assert.is_true((sandbox.is_path_writable("sub/relative.txt", 7)))
    assert.is_true((sandbox.is_path_writable(dir .. "/chats/x.chat", 7)))
    assert.is_false((sandbox.is_path_writable(dir .. "/proj/bashrc-link", 7)))
    assert.is_false((sandbox.is_path_writable(dir .. "/proj/out-link/x", 7)))
    assert.is_false((sandbox.is_path_writable(dir .. "/proj/../outside/x", 7)))
    assert.is_false((sandbox.is_path_writable("/etc/passwd", 7)))
    assert.is_false((sandbox.is_path_writable("~/.bashrc", 7)))
    -- the home folder as a writable path: left out, unless allow_home_rw
    assert.is_false((sandbox.is_path_writable("~/notes.txt", 7, { sandbox = { policy = { rw_paths = { "~" } } } })))
    local home_rw = { sandbox = { policy = { rw_paths = { "~" }, allow_home_rw = true } } }
    assert.is_true((sandbox.is_path_writable("~/notes.txt", 7, home_rw)))
    local protected, why = sandbox.is_path_writable("~/.bashrc", 7, home_rw)
    assert.is_false(protected)
    assert.matches("is protected %(deny_write ", why)
    local ok, reason = sandbox.is_path_writable(dir .. "/proj/bashrc-link", 7)
    assert.is_false(ok)
    assert.are.equal(
      dir
        .. "/home/u/.bashrc is not in rw_paths (private home, read-only: nothing written there would reach the real "
        .. "home (policy.home_writable lists the folders commands may write: a chat keeps its own between its calls, "
        .. "another buffer's command gets them empty))",
      reason
    )
  end)

  it("is_path_writable is true for everything when the sandbox is off", function()
    sandbox.set_enabled(false)
    assert.is_true((sandbox.is_path_writable("/etc/passwd", 7)))
    assert.is_false(sandbox.get_override())
    sandbox.reset_enabled()
    assert.is_nil(sandbox.get_override())
  end)

  it("reads the per-buffer policy from Flemma-style opts", function()
    local policy = sandbox.get_policy(7, { sandbox = { policy = { rw_paths = { "$CWD" }, network = false } } })
    assert.are.same({ dir .. "/proj" }, policy.rw_paths)
    assert.is_false(policy.network)
    assert.is_false(sandbox.is_enabled({ sandbox = false }))
    assert.is_true(sandbox.is_enabled(7))
  end)

  it("set_enabled insists on a boolean", function()
    assert.has_error(function()
      sandbox.set_enabled("yes")
    end, "flemma-sandbox: set_enabled: expected boolean, got string")
  end)
end)
