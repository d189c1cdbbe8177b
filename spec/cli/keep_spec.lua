--- flemma-sandbox discard, delete --force and gc keep a copy's work (its
--- commits and what it left uncommitted) in the user's repository under
--- refs/flemma-sandbox/discarded/ and say how to get it back; discard asks
--- on a terminal when the copy holds work not applied, --force skips the
--- question, and without a terminal nor --force nothing is discarded.
local cli = require("support.cli")
local h = require("support.helpers")

describe("flemma-sandbox keeps a copy's work it throws away", function()
  local w
  cli.each_world(function(world)
    w = world
  end)

  local function git(args)
    return h.run(vim.list_extend({ "git", "-C", w.proj }, args)).stdout
  end

  --- A sandbox whose copy holds a commit of its own and work not committed.
  local function sandbox_with_work(name)
    local r = cli.run(w, {
      "run",
      name,
      "--",
      "sh",
      "-c",
      "echo c > c.txt && git add c.txt && git -c user.name=m -c user.email=m@m commit -qm 'the model'"
        .. " && echo changed > a.txt && echo u > u.txt",
    })
    assert.are.equal(0, r.code, r.stderr)
  end

  --- The one kept ref: named in what was said, holding the work in the
  --- user's own objects (the copy is gone), brought back with git.
  local function assert_kept(said)
    local ref = vim.trim(git({ "for-each-ref", "--format=%(refname)", "refs/flemma-sandbox/discarded/" }))
    assert.matches("^refs/flemma%-sandbox/discarded/[^/\n]+/%d+T%d+Z$", ref)
    assert.truthy(said:find(ref, 1, true), said)
    assert.are.equal("u\n", git({ "show", ref .. ":u.txt" }))
    assert.matches("the model\n", git({ "log", "--format=%s", ref }))
    local r = h.run({ "git", "-C", w.proj, "restore", "--source=" .. ref, "--", "a.txt", "c.txt" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("changed\n", h.read(w.proj .. "/a.txt"))
    assert.are.equal("c\n", h.read(w.proj .. "/c.txt"))
  end

  local function copy_of(name)
    for _, path in ipairs(vim.fn.glob(cli.folder(w, name) .. "/workspace/*", false, true)) do
      if vim.fn.isdirectory(path .. "/.git") == 1 then
        return path
      end
    end
  end

  it("discard without a terminal nor --force discards nothing; --force keeps the work", function()
    sandbox_with_work("work")
    local clone = copy_of("work")
    assert.are.equal(1, vim.fn.isdirectory(clone))
    -- no controlling terminal (setsid): nobody to ask
    local r = h.run({ "setsid", "-w", cli.BIN, "discard", "work" }, cli.env(w), w.proj)
    assert.are_not.equal(0, r.code)
    assert.matches("no terminal to ask on: add %-%-force", r.stderr)
    assert.are.equal(1, vim.fn.isdirectory(clone))
    assert.are.equal("", git({ "for-each-ref", "refs/flemma-sandbox/" }))
    r = h.run({ "setsid", "-w", cli.BIN, "discard", "--force", "work" }, cli.env(w), w.proj)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal(0, vim.fn.isdirectory(clone))
    assert_kept(r.stdout)
  end)

  it("discard asks on the terminal: n keeps the copy, y discards it and keeps the work", function()
    sandbox_with_work("work")
    local clone = copy_of("work")
    local function on_terminal(answer)
      -- script(1) gives the command a terminal of its own; the answer is typed there
      local line = "printf '"
        .. answer
        .. "\\n' | script -qec "
        .. h.shell_quote(cli.BIN .. " discard work")
        .. " /dev/null"
      return h.run({ "sh", "-c", line }, cli.env(w), w.proj)
    end
    local r = on_terminal("n")
    assert.matches("throw work's copy away%?", r.stdout)
    assert.matches("not discarded", r.stdout)
    assert.are.equal(1, vim.fn.isdirectory(clone))
    r = on_terminal("y")
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    assert.are.equal(0, vim.fn.isdirectory(clone))
    assert_kept(r.stdout)
  end)

  it("delete --force keeps the work; gc prunes kept work older than 14 days only", function()
    sandbox_with_work("work")
    local r = cli.run(w, { "delete", "--force", "work" })
    assert.are.equal(0, r.code, r.stderr)
    assert_kept(r.stdout)
    local kept = vim.trim(git({ "for-each-ref", "--format=%(refname)", "refs/flemma-sandbox/discarded/" }))
    local old = "refs/flemma-sandbox/discarded/old/" .. os.date("!%Y%m%dT%H%M%SZ", os.time() - 15 * 86400)
    git({ "update-ref", old, "HEAD" })
    r = cli.run(w, { "gc" })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("pruned kept work older than 14 days: [^\n]*" .. vim.pesc(old), r.stdout)
    assert.are.equal(kept, vim.trim(git({ "for-each-ref", "--format=%(refname)", "refs/flemma-sandbox/" })))
  end)
end)
