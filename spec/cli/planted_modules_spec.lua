--- The command line runs in the user's project: a core.so and a helper
--- program a sandboxed command planted there (package.cpath's "./?.so"),
--- or Lua files at our module names, never run (issue 38, item 1).
local cli = require("support.cli")
local planted = require("support.planted")
local h = require("support.helpers")

local ROOT = vim.fn.getcwd()

describe("planted modules, the command line", function()
  local w
  cli.each_world(function(world)
    w = world
    planted.plant(ROOT, w.proj, w.base .. "/marks")
  end)

  it("run, status and list in the project run nothing planted there", function()
    local r = cli.run(w, { "run", "--direct", "box", "--", "sh", "-c", "echo ran" })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("ran", r.stdout)
    assert.are.equal(0, cli.run(w, { "status", "box" }).code)
    assert.are.equal(0, cli.run(w, { "list" }).code)
    assert.are.equal("", planted.marks(w.base .. "/marks"))
  end)

  it("control: without the guard, the lookup the command line made names the planted core", function()
    -- what surroundings.lua asked before: package.cpath with its "./?.so"
    local r = h.run({
      "nvim",
      "--headless",
      "-u",
      "NONE",
      "-i",
      "NONE",
      "-c",
      "lua io.stdout:write(tostring(package.searchpath('flemma_sandbox.core', package.cpath)))",
      "-c",
      "qa!",
    }, nil, w.proj)
    assert.matches("^%./flemma_sandbox/core%.so", r.stdout)
  end)
end)
