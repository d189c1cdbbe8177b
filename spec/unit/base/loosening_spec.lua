--- The shared rules of what loosens the sandbox (loosening.lua), which
--- both trust checks (standalone frontmatter, Flemma's) use.
local loosening = require("flemma_sandbox.base.loosening")

describe("what loosens", function()
  it("a limit: larger, or none where there was one; a disk reserve: smaller", function()
    assert.is_true(loosening.limit("processes", 100, 200))
    assert.is_false(loosening.limit("processes", 100, 50))
    assert.is_true(loosening.limit("processes", 100, false))
    assert.is_false(loosening.limit("processes", false, false))
    assert.is_true(loosening.limit("disk_reserve_mb", 2048, 100))
    assert.is_false(loosening.limit("disk_reserve_mb", 2048, 4096))
    assert.is_true(loosening.limit("disk_reserve_mb", 2048, false))
  end)

  it("the network: a mode that reaches further (Flemma's true is the allowlist)", function()
    assert.is_true(loosening.network(false, "allowlist"))
    assert.is_true(loosening.network("allowlist", "ask"))
    assert.is_true(loosening.network("ask", "host"))
    assert.is_false(loosening.network("host", "allowlist"))
    assert.is_false(loosening.network("allowlist", true))
    assert.is_true(loosening.network(false, true))
  end)

  it("a list where an entry opens something: the entries the base lacks", function()
    assert.are.same({ "/data" }, loosening.added({ "$CWD", "/data" }, { "$CWD" }))
    assert.are.same({}, loosening.added({ "$CWD" }, { "$CWD", "/tmp" }))
    assert.are.same({ "bash" }, loosening.added({ "bash" }, nil))
  end)

  it(
    "a chat's sandbox: a fresh one per call, a shorter idle time or fewer running tighten; a new name loosens",
    function()
      assert.is_false(loosening.sandboxes("live", true, false))
      assert.is_true(loosening.sandboxes("live", false, true))
      assert.is_false(loosening.sandboxes("idle_ttl_s", 900, 60))
      assert.is_true(loosening.sandboxes("idle_ttl_s", 900, 3600))
      assert.is_true(loosening.sandboxes("max_running", nil, 2))
      assert.is_true(loosening.sandboxes("name", false, "shared"))
      assert.is_false(loosening.sandboxes("name", "shared", "shared"))
      assert.is_true(loosening.sandboxes("other", nil, 1))
    end
  )

  it("Flemma's backend config takes sandboxes, with errors that name Flemma's key", function()
    local validate = require("flemma_sandbox.config.validate")
    local key = "sandbox.backends.flemma_sandbox"
    local layer = assert(validate.from_backend_config({ sandboxes = { name = "shared", live = false } }, key))
    assert.are.same({ name = "shared", live = false }, layer.sandboxes)
    local _, err = validate.from_backend_config({ sandboxes = { name = "a b" } }, key)
    assert.matches("^sandbox%.backends%.flemma_sandbox%.sandboxes%.name: ", err)
    _, err = validate.from_backend_config({ sandboxes = { idle_ttl_s = 0 } }, key)
    assert.matches("^sandbox%.backends%.flemma_sandbox%.sandboxes%.idle_ttl_s: ", err)
  end)
end)
