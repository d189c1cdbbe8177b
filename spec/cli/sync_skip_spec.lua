--- flemma-sandbox run in clone mode skips the step after a run (the second
--- Neovim and the sync's git bwrap) when the run changed nothing in the
--- copy since the last sync (csrc/cli/cli_print.c); a run that changes a
--- file, even back to the same size and mtime, a branch or the index still
--- syncs (the controls), and so does every run while a process left
--- running in the sandbox lasts. What ran is told by a Neovim in front of the real
--- one (FLEMMA_SANDBOX_NVIM) that writes down the library's first argument:
--- "run" for the plan, "after-run" for the step after.
local cli = require("support.cli")
local h = require("support.helpers")

describe("flemma-sandbox run in clone mode", function()
  local w, log, env
  cli.each_world(function(world)
    w = world
    log = w.base .. "/nvim.log"
    local wrapper = w.base .. "/nvim-logged"
    h.write(
      wrapper,
      '#!/bin/sh\nprintf "%s\\n" "$FLEMMA_SANDBOX_CLI_ARG1" >> ' .. h.shell_quote(log) .. '\nexec nvim "$@"\n'
    )
    h.sh("chmod +x " .. h.shell_quote(wrapper))
    env = { FLEMMA_SANDBOX_NVIM = wrapper }
  end)

  --- Runs cmd in the sandbox "skip"; the library's steps that ran.
  local function run(cmd)
    h.write(log, "")
    local r = cli.run(w, vim.list_extend({ "run", "skip", "--" }, cmd), { env = env })
    assert.are.equal(0, r.code, r.stderr)
    local f = assert(io.open(log, "rb"))
    local steps = f:read("*a")
    f:close()
    return steps
  end

  local function git(...)
    return h.run(vim.list_extend({ "git", "-C", w.proj }, { ... })).stdout
  end

  --- Runs that change nothing until one skips the sync (the first syncs,
  --- and the one after a sync that wrote refs syncs once more).
  local function settle()
    for _ = 1, 3 do
      if run({ "true" }) == "run\n" then
        return
      end
    end
    error("every run synced")
  end

  it("skips the sync after a run that only reads, and syncs after one that writes", function()
    assert.are.equal("run\nafter-run\n", run({ "true" }))
    settle()
    assert.are.equal("run\n", run({ "sh", "-c", "cat a.txt >/dev/null && ls -la >/dev/null" }))
    assert.are.equal("run\n", run({ "true" }))
    -- control: a new file is synced
    assert.are.equal("run\nafter-run\n", run({ "sh", "-c", "echo new > n.txt" }))
    assert.are.equal("new\n", git("show", "sandbox-skip/wip:n.txt"))
  end)

  it("syncs after every run while a process it left runs in the sandbox", function()
    settle()
    -- a process left running could write through a shared mapping it
    -- made before, which sets no new mtime: no run skips while it lasts
    assert.are.equal("run\nafter-run\n", run({ "sh", "-c", "sleep 60 >/dev/null 2>&1 &" }))
    assert.are.equal("run\nafter-run\n", run({ "true" }))
    assert.are.equal("run\nafter-run\n", run({ "cat", "a.txt" }))
    -- control: once it is gone, runs skip again
    run({ "sh", "-c", "pkill -x sleep; while pgrep -x sleep >/dev/null; do sleep 0.05; done" })
    settle()
  end)

  it("syncs a file changed back to its size and mtime, a new branch and a changed index", function()
    settle()
    local steps = run({ "sh", "-c", "m=$(stat -c %y a.txt) && printf 'ORIGINAL\\n' > a.txt && touch -d \"$m\" a.txt" })
    assert.are.equal("run\nafter-run\n", steps)
    assert.are.equal("ORIGINAL\n", git("show", "sandbox-skip/wip:a.txt"))
    settle()
    assert.are.equal("run\nafter-run\n", run({ "git", "branch", "other" }))
    assert.are.equal(git("rev-parse", "sandbox-skip/master"), git("rev-parse", "sandbox-skip/other"))
    settle()
    assert.are.equal("run\nafter-run\n", run({ "git", "add", "a.txt" }))
  end)
end)
