--- flemma/clone_tools.lua's scope (run in Neovim, Flemma's sandbox and
--- config modules stood in for: a real Flemma chat in clone mode is
--- spec/flemma/workspace_spec's): a chat's clone mode under Flemma is nil
--- where Flemma does not run its commands through our backend, false in
--- direct mode, else what its copies come from. on_copy's path is the
--- real Flemma's.
local workspace = require("flemma_sandbox.flemma.clone_tools")

describe("flemma.clone_tools.scope", function()
  local saved_sandbox, saved_config, fake, bufnr

  before_each(function()
    saved_sandbox, saved_config = package.loaded["flemma.sandbox"], package.loaded["flemma.config"]
    fake = {
      config = { enabled = true, backend = "flemma_sandbox" },
      detected = "flemma_sandbox",
      backend_config = { sandboxes = { workspace = "clone" }, path = "/opt/bwrap" },
      policy = { rw_paths = { "/var/tmp" }, network = false },
    }
    package.loaded["flemma.sandbox"] = {
      resolve_config = function()
        if fake.config == "error" then
          error("Flemma is not set up")
        end
        return fake.config
      end,
      detect_available_backend = function()
        if fake.detected == "error" then
          error("detection failed")
        end
        return fake.detected
      end,
      get_policy = function()
        if fake.policy == "error" then
          error("no policy for this buffer")
        end
        return fake.policy
      end,
    }
    package.loaded["flemma.config"] = {
      materialize = function()
        return { sandbox = { backends = { flemma_sandbox = fake.backend_config } } }
      end,
    }
    bufnr = vim.api.nvim_create_buf(false, true)
    vim.bo[bufnr].filetype = "chat"
  end)

  after_each(function()
    package.loaded["flemma.sandbox"], package.loaded["flemma.config"] = saved_sandbox, saved_config
    vim.api.nvim_buf_delete(bufnr, { force = true })
  end)

  it("is nil for no buffer number, a buffer that is gone, or one that is no chat", function()
    assert.is_nil(workspace.scope(nil))
    assert.is_nil(workspace.scope(999999))
    vim.bo[bufnr].filetype = "markdown"
    assert.is_nil(workspace.scope(bufnr))
  end)

  it("is nil where Flemma does not run the chat's commands through our backend", function()
    for _, case in ipairs({
      { config = "error" },
      { config = { enabled = false, backend = "flemma_sandbox" } },
      { config = { enabled = true, backend = "bwrap" } },
      { config = { enabled = true, backend = "auto" }, detected = "bwrap" },
      { config = { enabled = true, backend = "required" }, detected = "error" },
    }) do
      fake.config, fake.detected = case.config, case.detected or "flemma_sandbox"
      assert.is_nil(workspace.scope(bufnr), vim.inspect(case))
    end
  end)

  it("is false in direct mode", function()
    fake.backend_config = { sandboxes = { workspace = "direct" } }
    assert.is_false(workspace.scope(bufnr))
    fake.backend_config = nil -- the defaults: direct
    assert.is_false(workspace.scope(bufnr))
  end)

  it("is false when the policy cannot be had or the config is bad", function()
    fake.policy = "error"
    assert.is_false(workspace.scope(bufnr))
    fake.policy = { rw_paths = {} }
    fake.backend_config = { sandboxes = { workspace = "clone" }, seccomp = "maybe" }
    assert.is_false(workspace.scope(bufnr))
  end)

  it("in clone mode holds the resolved policy, the sandboxes settings, the config and the bwrap program", function()
    fake.config = { enabled = true, backend = "auto" }
    local scope = assert(workspace.scope(bufnr))
    assert.are.equal("clone", scope.sandboxes.workspace)
    assert.are.equal("/opt/bwrap", scope.bwrap)
    assert.are.same({ "/var/tmp" }, scope.resolved.rw_paths)
    assert.are.equal("off", scope.resolved.network_mode)
    assert.are.equal(scope.config.sandboxes, scope.sandboxes)
  end)

  it("knows Flemma's file tools that run in Neovim", function()
    assert.are.same({ read = true, write = true, edit = true, ls = true }, workspace.FILE_TOOLS)
  end)
end)
