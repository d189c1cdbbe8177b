--- run/shadow_restore.lua (run in Neovim, real bwrap and git): the argv
--- that writes back the paths of $store/apply in the shadow store's bwrap.
--- A path still as the change left it is written; one that changed since
--- is a conflict and left alone; a path outside the writable root cannot
--- be written there (the root alone is writable).
local git_box = require("flemma_sandbox.backends.git_box")
local h = require("support.helpers")
local process = require("flemma_sandbox.base.process")
local shadow = require("flemma_sandbox.run.shadow")
local shadow_restore = require("flemma_sandbox.run.shadow_restore")

describe("run.shadow_restore", function()
  local dir, top

  --- A store of the repository at top, with rel as its writable root.
  local function spec_for(rel)
    local spec = {
      bwrap = vim.fn.exepath("bwrap"),
      git = vim.fn.exepath("git"),
      top = top,
      rel = rel,
      store = dir .. "/store",
      hidden = {},
      secrets = {},
      keep = 5,
    }
    assert(shadow.prepare(spec))
    for _, step in ipairs({ "init", "settled" }) do
      local out, code = process.run(shadow.step_argv(spec, step))
      assert.are.equal(0, code, out)
    end
    return spec
  end

  --- The blob id of text, written into the repository's objects (which
  --- the store borrows).
  local function blob(text)
    h.write(dir .. "/blob", text)
    return vim.trim(vim.fn.system({ "git", "-C", top, "hash-object", "-w", dir .. "/blob" }))
  end

  --- Writes $store/apply and runs the restore: its answers.
  local function restore(spec, lines)
    h.write(spec.store .. "/apply", table.concat(lines, "\n") .. "\n")
    local out = process.run(shadow_restore.argv(spec))
    return git_box.answers(out), out
  end

  before_each(function()
    dir = h.tmpdir()
    top = dir .. "/proj"
    h.sh(
      "mkdir -p "
        .. h.shell_quote(top .. "/sub")
        .. " && cd "
        .. h.shell_quote(top)
        .. " && git init -q . && printf 'one\\n' > sub/a.txt && printf 'top\\n' > b.txt"
        .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
    )
  end)

  after_each(function()
    h.rmdir(dir)
  end)

  it("writes back a path that is still as the change left it, and removes one the change made", function()
    local spec = spec_for(".")
    local one, two = blob("one\n"), blob("two\n")
    h.write(top .. "/sub/a.txt", "two\n")
    h.write(top .. "/sub/new.txt", "two\n")
    local answers, out = restore(spec, {
      "100644 " .. two .. " 100644 " .. one .. " sub/a.txt",
      "100644 " .. two .. " 0 0 sub/new.txt",
    })
    assert.are.equal("one\n", h.read(top .. "/sub/a.txt"))
    assert.is_nil(h.read(top .. "/sub/new.txt"))
    local done = {}
    for _, a in ipairs(answers) do
      done[#done + 1] = a.answer .. " " .. tostring(a.path)
    end
    assert.are.same({ "done sub/a.txt", "done sub/new.txt", "applied nil" }, done, out)
  end)

  it("leaves a path that changed since as it is, a conflict", function()
    local spec = spec_for(".")
    local one, two = blob("one\n"), blob("two\n")
    h.write(top .. "/sub/a.txt", "the user's, since\n")
    local answers = restore(spec, { "100644 " .. two .. " 100644 " .. one .. " sub/a.txt" })
    assert.are.equal("the user's, since\n", h.read(top .. "/sub/a.txt"))
    assert.are.equal("conflict", answers[1].answer)
    assert.are.equal("changed since", answers[1].why)
    assert.are.equal("applied", answers[2].answer)
  end)

  it("writes in the writable root only: a path beside it is not written (control: inside it is)", function()
    local spec = spec_for("sub")
    local one, two = blob("top\n"), blob("two\n")
    h.write(top .. "/b.txt", "two\n")
    h.write(top .. "/sub/a.txt", "two\n")
    local answers = restore(spec, {
      "100644 " .. two .. " 100644 " .. one .. " b.txt",
      "100644 " .. two .. " 100644 " .. one .. " sub/a.txt",
    })
    assert.are.equal("two\n", h.read(top .. "/b.txt"))
    assert.are.equal("conflict", answers[1].answer)
    assert.are.equal("top\n", h.read(top .. "/sub/a.txt"), "control: the writable root is written")
    assert.are.equal("done", answers[2].answer)
  end)

  it("never writes through a link on the way", function()
    local spec = spec_for(".")
    local one, two = blob("one\n"), blob("two\n")
    h.sh(
      "mkdir " .. h.shell_quote(dir .. "/outside") .. " && printf 'two\\n' > " .. h.shell_quote(dir .. "/outside/a.txt")
    )
    h.sh("cd " .. h.shell_quote(top) .. " && rm -rf sub && ln -s " .. h.shell_quote(dir .. "/outside") .. " sub")
    local answers = restore(spec, { "100644 " .. two .. " 100644 " .. one .. " sub/a.txt" })
    assert.are.equal("two\n", h.read(dir .. "/outside/a.txt"))
    assert.are.equal("conflict", answers[1].answer)
    assert.are.equal("a link or a file is on the way", answers[1].why)
  end)
end)
