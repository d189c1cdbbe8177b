--- backends/programs.lua: each role's program, flemma-sandbox-ROLE, is
--- found next to core.so (make builds them there), and each one found is
--- the program of its role (run: the tool program answers --info).
local programs = require("flemma_sandbox.backends.programs")
local surroundings = require("flemma_sandbox.base.surroundings")
local h = require("support.helpers")

describe("backends.programs", function()
  local dir = surroundings.core_so():match("^(.*)/core%.so$")

  it("finds each role's program next to core.so, an executable file", function()
    for _, role in ipairs({ "init", "host", "attach", "tool" }) do
      local path, err = programs.path(role)
      assert.is_nil(err)
      assert.are.equal(dir .. "/flemma-sandbox-" .. role, path)
      assert.are.equal(
        "",
        h.capture("test -f " .. h.shell_quote(path) .. " && test -x " .. h.shell_quote(path) .. " || echo no")
      )
    end
  end)

  it("lists all four roles at once, the same paths", function()
    local all, err = programs.all()
    assert.is_nil(err)
    assert.are.same({
      init = programs.path("init"),
      host = programs.path("host"),
      attach = programs.path("attach"),
      tool = programs.path("tool"),
    }, all)
  end)

  it("names a program that runs: the tool program answers --info", function()
    local r = h.run({ programs.path("tool"), "--info" })
    assert.are.equal(0, r.code, r.stderr)
    assert.is_true(#r.stdout > 0)
  end)

  it("says what is missing for a role that has no program, and names make", function()
    local path, err = programs.path("nosuchrole")
    assert.is_nil(path)
    assert.matches("flemma%-sandbox%-nosuchrole was not found next to core%.so", err)
    assert.matches("run make", err)
  end)
end)
