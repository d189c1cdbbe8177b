--- api/call_undo.lua (run in Neovim, real bwrap, git and checkpoints):
--- prepare() picks the call and plans its undo (or redo) writing
--- nothing; carry_out() writes the plan: the call's change taken back,
--- and put back by a redo. Without checkpoints, prepare says why.
local call_undo = require("flemma_sandbox.api.call_undo")
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")

describe("api.call_undo", function()
  local p

  --- prepare(): the prep or the error, once done was called.
  local function prepare(bufnr, opts)
    local prep, err, finished
    call_undo.prepare(bufnr, opts or {}, function(pr, e)
      prep, err, finished = pr, e, true
    end)
    assert.is_true(vim.wait(20000, function()
      return finished == true
    end, 10))
    return prep, err
  end

  --- carry_out(): its report.
  local function carry_out(prep)
    local report
    call_undo.carry_out(prep, function(r)
      report = r
    end)
    assert.is_true(vim.wait(20000, function()
      return report ~= nil
    end, 10))
    return report
  end

  local function bash(bufnr, command)
    local r = n.run_tool("bash", { command = command }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, vim.inspect(r))
  end

  before_each(function()
    p = project.enter(
      "git init -q . && printf 'one\\n' > a.txt && printf 'keep\\n' > b.txt"
        .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
    )
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
      approval = { bash = "allow" },
    })
  end)

  after_each(function()
    project.leave(p)
  end)

  it("says there is nothing to undo before any call", function()
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    local prep, err = prepare(bufnr)
    assert.is_nil(prep)
    assert.matches("no call of this chat has a checkpoint", err)
  end)

  it("plans the undo of the last call without writing, then writes it; redo puts the change back", function()
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "printf 'two\\n' > a.txt && printf 'made\\n' > c.txt")
    local prep, err = prepare(bufnr)
    assert.is_nil(err)
    assert.is_false(prep.redo)
    assert.are.equal(1, #prep.targets)
    assert.are.equal(p.proj, prep.targets[1].spec.top)
    assert.are.equal("two\n", h.read(p.proj .. "/a.txt"), "prepare writes nothing")
    local report = carry_out(prep)
    assert.are.same({}, report.errors)
    assert.are.same({}, report.conflicts)
    assert.are.equal("one\n", h.read(p.proj .. "/a.txt"))
    assert.is_nil(h.read(p.proj .. "/c.txt"))
    assert.are.equal("keep\n", h.read(p.proj .. "/b.txt"))

    local again
    again, err = prepare(bufnr)
    assert.is_nil(again)
    assert.matches("every recorded call is undone already", err)

    local redo = assert(prepare(bufnr, { redo = true }))
    assert.are.equal(prep.n, redo.n)
    report = carry_out(redo)
    assert.are.same({}, report.errors)
    assert.are.equal("two\n", h.read(p.proj .. "/a.txt"))
    assert.are.equal("made\n", h.read(p.proj .. "/c.txt"))
  end)

  it("keeps a path changed since the call and lists it as a conflict", function()
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "printf 'two\\n' > a.txt")
    h.write(p.proj .. "/a.txt", "the user's\n")
    local report = carry_out(assert(prepare(bufnr)))
    assert.are.equal("the user's\n", h.read(p.proj .. "/a.txt"))
    assert.are.equal(1, #report.conflicts)
    assert.are.equal("a.txt", report.conflicts[1].path)
  end)
end)
