--- flemma/frontmatter_check.lua (run in Neovim, Flemma's config module stood in for:
--- the real Flemma's path is spec/flemma's): what a buffer's frontmatter
--- changes in Flemma's sandbox and tools config, key by key, counts as
--- loosening (compared with flemma-sandbox's own defaults where Flemma's
--- config names no value), and such a buffer's tool calls are refused
--- until the user trusts that exact frontmatter text.
local trust = require("flemma_sandbox.flemma.frontmatter_check")
local h = require("support.helpers")

describe("flemma.frontmatter_check", function()
  local base, with, saved_config, dir

  --- Flemma's config as materialized without and with the buffer's frontmatter.
  local function configs(without, frontmatter)
    base, with = without, frontmatter
  end

  --- The loosening lines of buffer 0 (the stand-in ignores the buffer).
  local function loose()
    return trust.loosening(vim.api.nvim_get_current_buf())
  end

  local function backend(t)
    return { sandbox = { enabled = true, backends = { flemma_sandbox = t } }, tools = {} }
  end

  before_each(function()
    saved_config = package.loaded["flemma.config"]
    package.loaded["flemma.config"] = {
      materialize = function(bufnr)
        return vim.deepcopy(bufnr and with or base)
      end,
    }
    dir = h.tmpdir()
  end)

  after_each(function()
    package.loaded["flemma.config"] = saved_config
    h.rmdir(dir)
  end)

  it("finds nothing without Flemma", function()
    package.loaded["flemma.config"] = nil
    local real = package.preload["flemma.config"]
    package.preload["flemma.config"] = function()
      error("no Flemma")
    end
    local got = loose()
    package.preload["flemma.config"] = real
    assert.are.same({}, got)
  end)

  it("finds nothing when the frontmatter changes nothing, or only what is neutral", function()
    local cfg = { sandbox = { enabled = true, policy = { network = false } }, tools = { max_concurrent = 2 } }
    configs(cfg, cfg)
    assert.are.same({}, loose())
    configs(cfg, {
      sandbox = { enabled = true, policy = { network = false } },
      tools = { max_concurrent = 8, default_timeout = 999, autopilot = { enabled = true, max_turns = 50 } },
    })
    assert.are.same({}, loose())
  end)

  it("finds the switches that open the sandbox, and not their tightening", function()
    configs({ sandbox = { enabled = true, policy = { network = false, allow_privileged = false } }, tools = {} }, {
      sandbox = { enabled = false, policy = { network = true, allow_privileged = true } },
      tools = { require_approval = false, auto_approve_sandboxed = true },
    })
    assert.are.same({
      "sandbox.enabled = false",
      "sandbox.policy.allow_privileged = true",
      "sandbox.policy.network = true",
      "tools.auto_approve_sandboxed = true",
      "tools.require_approval = false",
    }, loose())
    configs(
      { sandbox = { enabled = false, policy = { network = true } }, tools = { require_approval = false } },
      { sandbox = { enabled = true, policy = { network = false } }, tools = { require_approval = true } }
    )
    assert.are.same({}, loose())
  end)

  it("finds added writable paths and auto-approved tools, not removed ones", function()
    configs(
      { sandbox = { policy = { rw_paths = { "$CWD" } } }, tools = { auto_approve = { "read" } } },
      { sandbox = { policy = { rw_paths = { "$CWD", "~" } } }, tools = { auto_approve = { "read", "bash" } } }
    )
    assert.are.same({
      'sandbox.policy.rw_paths = { "$CWD", "~" }',
      'tools.auto_approve = { "read", "bash" }',
    }, loose())
    configs(
      { sandbox = { policy = { rw_paths = { "$CWD", "/tmp" } } }, tools = {} },
      { sandbox = { policy = { rw_paths = { "$CWD" } } }, tools = {} }
    )
    assert.are.same({}, loose())
  end)

  it("compares a backend key Flemma does not name with flemma-sandbox's own default", function()
    -- cpu_seconds 600 and seccomp on are flemma-sandbox's defaults
    configs(backend({}), backend({ limits = { cpu_seconds = 600 }, seccomp = true }))
    assert.are.same({}, loose())
    configs(backend({}), backend({ limits = { cpu_seconds = 60, disk_reserve_mb = 4096 } }))
    assert.are.same({}, loose(), "a lower limit and a larger reserve tighten")
    configs(backend({}), backend({ limits = { cpu_seconds = 100000, processes = false }, seccomp = false }))
    assert.are.same({
      "sandbox.backends.flemma_sandbox.limits.cpu_seconds = 100000",
      "sandbox.backends.flemma_sandbox.limits.processes = false",
      "sandbox.backends.flemma_sandbox.seccomp = false",
    }, loose())
  end)

  it("reads the sandboxes keys as loosening.lua does: a name or live loosens, clone and checkpoints tighten", function()
    configs(backend({}), backend({ sandboxes = { workspace = "clone", checkpoints = true, live = false } }))
    assert.are.same({}, loose())
    configs(backend({}), backend({ sandboxes = { name = "shared", max_running = 99 } }))
    assert.are.same({
      "sandbox.backends.flemma_sandbox.sandboxes.max_running = 99",
      'sandbox.backends.flemma_sandbox.sandboxes.name = "shared"',
    }, loose())
  end)

  it("counts any other backend key as loosening, and one the frontmatter removes", function()
    configs(backend({}), backend({ path = "/tmp/evil-bwrap", env_allow = { "AWS_SECRET_ACCESS_KEY" } }))
    assert.are.same({
      'sandbox.backends.flemma_sandbox.env_allow = { "AWS_SECRET_ACCESS_KEY" }',
      'sandbox.backends.flemma_sandbox.path = "/tmp/evil-bwrap"',
    }, loose())
    configs(backend({ deny_read = { "~/.secrets" } }), backend({}))
    assert.are.same({ "sandbox.backends.flemma_sandbox.deny_read = nil" }, loose())
  end)

  it("ignores an empty list Flemma's schema fills in for a backend key", function()
    configs(backend({}), backend({ env_allow = {} }))
    assert.are.same({}, loose())
  end)

  describe("refusal and set", function()
    local bufnr

    before_each(function()
      vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/c.chat"))
      bufnr = vim.api.nvim_get_current_buf()
      vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, {
        "```lua",
        "flemma.opt.sandbox.enabled = false",
        "```",
        "@You:",
        "hi",
      })
      configs({ sandbox = { enabled = true }, tools = {} }, { sandbox = { enabled = false }, tools = {} })
    end)

    after_each(function()
      trust.set(bufnr, false)
      -- this test's buffer only (another spec's, whose file is gone, would
      -- stop a wipe of the current one at E211)
      if vim.api.nvim_buf_is_valid(bufnr) then
        pcall(vim.api.nvim_buf_delete, bufnr, { force = true })
      end
    end)

    it("refuses a loosening frontmatter until that exact text is trusted", function()
      local why, lines = trust.refusal(bufnr)
      assert.are.equal(
        "this buffer's frontmatter loosens the sandbox (sandbox.enabled = false) and is not trusted:"
          .. " :FlemmaSandbox trust applies it",
        why
      )
      assert.are.same({ "sandbox.enabled = false" }, lines)
      assert.are.same({ true, "trusted; now applied: sandbox.enabled = false" }, { trust.set(bufnr, true) })
      assert.is_nil((trust.refusal(bufnr)))
      -- another text is another frontmatter: refused again
      vim.api.nvim_buf_set_lines(bufnr, 1, 2, false, { "flemma.opt.sandbox.enabled = false -- changed" })
      assert.is_truthy((trust.refusal(bufnr)))
    end)

    it("forgets the trust", function()
      trust.set(bufnr, true)
      local ok, message = trust.set(bufnr, false)
      assert.is_true(ok)
      assert.matches("^no longer trusted", message)
      assert.is_truthy((trust.refusal(bufnr)))
    end)

    it("has nothing to trust without a frontmatter, and refuses nothing that loosens nothing", function()
      vim.api.nvim_buf_set_lines(bufnr, 0, 3, false, {})
      assert.are.same({ false, "this buffer has no frontmatter" }, { trust.set(bufnr, true) })
      configs({ sandbox = {}, tools = {} }, { sandbox = {}, tools = {} })
      assert.are.same({ nil, {} }, { trust.refusal(bufnr) })
    end)
  end)
end)
