--- The seam between the wrap and the run's end: the wrap's record
--- (backends/helper.lua wrap_record, flemma_sandbox.WrapRecord) comes with
--- the argv in direct and clone mode alike, and run/end_of_run.lua takes
--- the run's files from it, never from the argv (whose first word in clone
--- mode is the workspace view's bwrap).
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")
local helper = require("flemma_sandbox.backends.helper")
local end_of_run = require("flemma_sandbox.run.end_of_run")
local surroundings = require("flemma_sandbox.base.surroundings")

describe("the wrap's record", function()
  local p

  project.each(
    "git init -q . && printf 'one\\n' > a.txt && git add -A && git -c user.name=u -c user.email=u@e commit -qm init",
    function(world)
      p = world
    end
  )

  it("comes with the argv; in clone mode the argv's first word is not the helper", function()
    for _, workspace in ipairs({ "direct", "clone" }) do
      sandbox.setup({
        backend = "bwrap",
        policy = { rw_paths = { "$CWD" }, network = false },
        sandboxes = { workspace = workspace },
      })
      local bufnr = n.open_chat(p.dir .. "/" .. workspace .. ".chat", { "@You:", "hi" })
      local argv, err, record = sandbox.wrap_command({ "true" }, bufnr)
      assert(argv, err)
      assert(record, "a record in " .. workspace .. " mode")
      assert.are.equal(argv, record.argv)
      assert.are.equal(workspace == "clone", record.clone)
      -- the host program, or the attach for a call in a chat's live sandbox
      local front = helper.program(record.live_dir and "attach" or "host")
      assert.are.equal(workspace == "direct", argv[1] == front, argv[1])
      assert.matches("/" .. vim.pesc(record.run) .. "%.check$", record.check_file)
      assert.matches("/" .. vim.pesc(record.run) .. "%.records$", record.records_file)
      assert.matches("/" .. vim.pesc(record.run) .. "%.running$", record.running_file)
      -- the helper is given that check file: in its words, or in the file
      -- Neovim wrote for a large policy
      assert.is_truthy(vim.tbl_contains(argv, record.check_file) or h.read(record.check_file))
      os.remove(record.check_file)
    end
  end)

  it("is what the run's end takes: its records, what it moved, its files removed", function()
    local base = assert(helper.run_base())
    local record = helper.wrap_record(base, { "bwrap", "--" }, nil, true)
    assert.are.equal(record, end_of_run.prepare(record))
    assert.are.equal("", h.read(record.records_file), "made before the run")
    -- what the helper leaves: a record, its files, a quarantine entry of this run
    h.write(record.records_file, '{"type":"blocked","host":"x.test","why":"not listed"}\n')
    for _, file in ipairs(record.leftovers) do
      h.write(file, "")
    end
    local entry = assert(surroundings.state_dir("quarantine")) .. "/spec-" .. record.run
    h.sh("mkdir -p " .. h.shell_quote(entry))
    h.write(entry .. "/from", p.proj .. "/.nvim.lua\n")
    h.write(entry .. "/run", record.run .. "\n")
    h.write(entry .. "/.nvim.lua", "planted\n")
    local got
    end_of_run.finish(record, function(stderr, recs, moved)
      got = { stderr = stderr, recs = recs, moved = moved }
    end)
    assert.truthy(vim.wait(5000, function()
      return got ~= nil
    end, 10))
    h.sh("rm -rf " .. h.shell_quote(entry))
    assert.are.equal("", got.stderr, "no killed helper's check to do")
    assert.are.equal(1, #got.recs)
    assert.are.same({ "blocked", "x.test" }, { got.recs[1].type, got.recs[1].host })
    assert.are.equal(1, #got.moved)
    assert.are.equal(p.proj .. "/.nvim.lua", got.moved[1].from)
    for _, file in ipairs(record.leftovers) do
      assert.is_nil(h.read(file), file)
    end
    assert.is_nil(h.read(record.records_file), "taken")
  end)

  it("is needed: without one (a command not through the helper) there is nothing to take", function()
    assert.is_nil(end_of_run.prepare(nil))
    -- a bare check file is no record: no name is made from it
    assert.is_nil(end_of_run.prepare({ check_file = "/nonexistent/x.check" }))
    local got
    end_of_run.finish(nil, function(stderr, recs, moved)
      got = { stderr, recs, moved }
    end)
    assert.are.same({ "", {}, {} }, got)
  end)
end)
