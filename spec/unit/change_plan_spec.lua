--- run/change_plan.lua: what undo or redo does to each path of a call's
--- change, read from the shadow store's "plan" output: a path still as
--- the call left it is written, one changed since is a conflict, one
--- already back is left alone, a name no call may write never is;
--- removals go first; any byte of a name survives the trip to sh.
local change_plan = require("flemma_sandbox.run.change_plan")

local Z = string.rep("0", 40)
local A, B = string.rep("a", 40), string.rep("b", 40)

--- The plan step's output: now, the change (raw diff-tree -z), the paths
--- that differ now from its start, and from its end.
local function plan_output(changes, moved, off_end)
  local parts = { "now " .. string.rep("c", 40) .. " " .. string.rep("d", 40) .. "\0\0" }
  for _, c in ipairs(changes) do
    parts[#parts + 1] = string.format(":%s %s %s %s %s\0%s\0", c[1], c[2], c[3], c[4], c[5], c[6])
  end
  parts[#parts + 1] = "\0"
  for _, p in ipairs(moved) do
    parts[#parts + 1] = p .. "\0"
  end
  parts[#parts + 1] = "\0"
  for _, p in ipairs(off_end) do
    parts[#parts + 1] = p .. "\0"
  end
  parts[#parts + 1] = "\0"
  return table.concat(parts)
end

local function none()
  return nil
end

local function never()
  return false
end

local function paths(list)
  local out = {}
  for _, c in ipairs(list) do
    out[#out + 1] = c.path
  end
  return out
end

describe("change_plan", function()
  it("writes what is as the call left it, keeps what changed since, skips what is back already", function()
    local out = plan_output({
      { "100644", "100644", A, B, "M", "kept.txt" },
      { "100644", "100644", A, B, "M", "mine.txt" },
      { "100644", "100644", A, B, "M", "back.txt" },
      { "000000", "100644", Z, B, "A", "gone.txt" },
      { "100644", "000000", A, Z, "D", "made.txt" },
    }, { "mine.txt", "back.txt" }, { "mine.txt" })
    local parsed = assert(change_plan.parse(out))
    local plan = change_plan.decide(parsed, none, never)
    assert.are.same({ "kept.txt", "gone.txt", "made.txt" }, paths(plan.apply))
    assert.are.same({ "mine.txt" }, paths(plan.conflicts))
    assert.are.equal(1, plan.already)
    assert.are.same({ "M", "A", "D" }, { plan.apply[1].status, plan.apply[2].status, plan.apply[3].status })
  end)

  it("never writes a chat file, a .git path, the quarantine's names, a submodule or what the policy refuses", function()
    local out = plan_output({
      { "100644", "100644", A, B, "M", "u.chat" },
      { "100644", "100644", A, B, "M", "sub/.GIT/config" },
      { "100644", "000000", A, Z, "D", ".mcp.json.flemma-quarantine-1" },
      { "160000", "160000", A, B, "M", "vendor/lib" },
      { "100644", "100644", A, B, "M", ".nvim.lua" },
      { "100644", "100644", A, B, "M", "plain.txt" },
    }, {}, {})
    local plan = change_plan.decide(assert(change_plan.parse(out)), function(path)
      return path == ".nvim.lua" and "protected" or nil
    end, never)
    assert.are.same({ "plain.txt" }, paths(plan.apply))
    assert.are.equal(5, #plan.skipped)
    -- control: with no rule refusing it, the same .nvim.lua is written
    plan = change_plan.decide(assert(change_plan.parse(out)), none, never)
    assert.are.same({ ".nvim.lua", "plain.txt" }, paths(plan.apply))
  end)

  it("keeps a file with unsaved changes as a conflict", function()
    local out = plan_output({ { "100644", "100644", A, B, "M", "open.txt" } }, {}, {})
    local plan = change_plan.decide(assert(change_plan.parse(out)), none, function()
      return true
    end)
    assert.are.same({ "open.txt" }, paths(plan.conflicts))
    assert.are.equal("unsaved changes in Neovim", plan.conflicts[1].why)
  end)

  it("orders removals first and carries any byte of a name through sh and back", function()
    local odd = "a b/\195\188\nx\\y-_.txt"
    local text = change_plan.apply_text({
      { path = "dir", from_mode = "0", from_oid = Z, to_mode = "100644", to_oid = B },
      { path = "dir/inner", from_mode = "100644", from_oid = A, to_mode = "0", to_oid = Z },
      { path = odd, from_mode = "100644", from_oid = A, to_mode = "100644", to_oid = B },
    })
    local lines = {}
    for line in text:gmatch("[^\n]+") do
      lines[#lines + 1] = line
    end
    assert.are.equal(3, #lines, "one line per path, whatever its name holds")
    assert.matches(" dir/inner$", lines[1])
    local enc = lines[3]:match("^%d+ %x+ %d+ %x+ (.+)$")
    local f = assert(io.popen('sh -c \'p=$(printf "%bx" "$1"); printf %s "${p%x}"\' sh \'' .. enc .. "'"))
    assert.are.equal(odd, f:read("*a"))
    f:close()
    -- the restore's answers as it prints them (libexec/shadow_restore.sh), with git's stderr between
    local json_enc = enc:gsub("\\", "\\\\")
    local done_line = '{"answer":"done","mode":"100644","oid":"' .. B .. '","path":"' .. json_enc .. '"}\n'
    local said = done_line
      .. "error: a line of git's\n"
      .. '{"answer":"conflict","why":"changed since","path":"dir"}\n{"answer":"applied"}\n'
    local written, done_paths, conflicts, finished =
      change_plan.read_applied(require("flemma_sandbox.backends.git_box").answers(said), Z)
    assert.are.same({ odd }, done_paths)
    assert.are.equal("100644 " .. B .. "\t" .. odd .. "\0", written)
    assert.are.same({ { path = "dir", why = "changed since" } }, conflicts)
    assert.is_true(finished)
  end)

  it("says why when the store gave no plan", function()
    local parsed, err = change_plan.parse("fatal: bad object refs/after/0000000003\n")
    assert.is_nil(parsed)
    assert.matches("bad object", err)
  end)
end)
