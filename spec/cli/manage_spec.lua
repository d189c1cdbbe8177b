--- flemma-sandbox list, reset, delete and gc: the same sandboxes as the
--- chats', their folders and processes gone when removed.
local cli = require("support.cli")
local h = require("support.helpers")

describe("flemma-sandbox list, reset, delete, gc", function()
  local w
  cli.each_world(function(world)
    w = world
  end)

  it("lists the command line's sandboxes of this project, and every project's with --all", function()
    local r = cli.run(w, { "list" })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("none yet", r.stdout)
    assert.are.equal(0, cli.run(w, { "run", "--direct", "alpha", "--", "true" }).code)
    r = cli.run(w, { "list" })
    assert.matches("alpha%s+%d+ KiB.*command line", r.stdout)
    -- from a subfolder: the same project (the repository)
    vim.fn.mkdir(w.proj .. "/sub", "p")
    r = cli.run(w, { "list" }, { cwd = w.proj .. "/sub" })
    assert.matches("alpha", r.stdout)
    -- another project lists none of them, but --all does
    local elsewhere = w.base .. "/elsewhere"
    vim.fn.mkdir(elsewhere, "p")
    r = cli.run(w, { "list" }, { cwd = elsewhere })
    assert.is_nil(r.stdout:find("alpha", 1, true))
    r = cli.run(w, { "list", "--all" }, { cwd = elsewhere })
    assert.matches(vim.pesc(w.proj) .. "\n%s+alpha", r.stdout)
  end)

  it("bash completion offers the commands and this project's sandbox names", function()
    assert.are.equal(0, cli.run(w, { "run", "--direct", "completed", "--", "true" }).code)
    local script = "PATH="
      .. h.shell_quote(vim.fn.fnamemodify(cli.BIN, ":h"))
      .. ":$PATH; source completions/flemma-sandbox.bash;"
      .. " cd "
      .. h.shell_quote(w.proj)
      .. ";"
      .. ' COMP_WORDS=(flemma-sandbox de); COMP_CWORD=1; _flemma_sandbox; echo "${COMPREPLY[*]}";'
      .. ' COMP_WORDS=(flemma-sandbox delete ""); COMP_CWORD=2; _flemma_sandbox; echo "${COMPREPLY[*]}"'
    local r = h.run({ "bash", "-c", script }, cli.env(w))
    assert.are.equal("delete\n--force completed\n", r.stdout, r.stderr)
  end)

  it("reset empties the sandbox's /tmp, and keeps its name", function()
    cli.run(w, { "run", "--direct", "r1", "--", "sh", "-c", "echo x > /tmp/left" })
    assert.are.equal("x\n", cli.run(w, { "run", "--direct", "r1", "--", "cat", "/tmp/left" }).stdout)
    local r = cli.run(w, { "reset", "r1" })
    assert.are.equal(0, r.code, r.stderr)
    r = cli.run(w, { "run", "--direct", "r1", "--", "cat", "/tmp/left" })
    assert.are_not.equal(0, r.code)
    assert.matches("r1", cli.run(w, { "list" }).stdout)
    r = cli.run(w, { "reset", "nosuch" })
    assert.are.equal(2, r.code)
    assert.matches("no sandbox nosuch", r.stderr)
  end)

  it("delete stops what runs in the sandbox and removes its folders", function()
    local number = string.format("%06d", math.random(0, 999999))
    local marker = "sleep 33." .. number
    -- left in the sandbox after its run ended (the run waits for it to be
    -- `sleep`: held from the run's end, it would stay a shell till the next)
    local wait = "while ! pgrep -xf 'sleep 33[.]" .. number .. "' >/dev/null; do sleep 0.01; done"
    local r =
      cli.run(w, { "run", "--direct", "gone", "--", "sh", "-c", "setsid " .. marker .. " >/dev/null 2>&1 & " .. wait })
    assert.are.equal(0, r.code, r.stderr)
    assert.truthy(
      cli.eventually(function()
        return cli.host_pids(marker) ~= ""
      end),
      "the process did not start"
    )
    local folder = cli.folder(w, "gone")
    assert.are.equal(1, vim.fn.isdirectory(folder))
    r = cli.run(w, { "delete", "gone" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal(0, vim.fn.isdirectory(folder))
    assert.are.equal("", cli.host_pids(marker))
    assert.is_nil(cli.run(w, { "list" }).stdout:find("gone", 1, true))
  end)

  it("delete keeps a copy with work not applied unless --force", function()
    assert.are.equal(0, cli.run(w, { "run", "work", "--", "sh", "-c", "echo w > w.txt" }).code)
    local folder = cli.folder(w, "work")
    local r = cli.run(w, { "delete", "work" })
    assert.are.equal(2, r.code)
    assert.matches("not applied", r.stderr)
    assert.are.equal(1, vim.fn.isdirectory(folder))
    r = cli.run(w, { "delete", "--force", "work" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal(0, vim.fn.isdirectory(folder))
  end)

  it(
    "status NAME names the sandbox and the command line's subcommands; delete's kept work names the sandbox",
    function()
      assert.are.equal(0, cli.run(w, { "run", "c1", "--", "sh", "-c", "echo w > w.txt" }).code)
      local r = cli.run(w, { "status", "c1" })
      assert.are.equal(0, r.code, r.stderr)
      local first = vim.split(r.stdout, "\n", { plain = true })[2]
      assert.are.equal("flemma-sandbox, sandbox c1 of " .. w.proj, first)
      assert.is_nil(r.stdout:find(":FlemmaSandbox", 1, true), r.stdout)
      assert.is_nil(r.stdout:find(".cli", 1, true), r.stdout)
      assert.is_nil(r.stdout:find("chat c1", 1, true), r.stdout)
      assert.truthy(r.stdout:find("(flemma-sandbox reset c1 empties them)", 1, true), r.stdout)
      assert.truthy(r.stdout:find("(flemma-sandbox diff|apply|discard c1)", 1, true), r.stdout)
      -- a terminal folds nothing, and the command line takes no checkpoints
      assert.truthy(r.stdout:find("\n  details:\n", 1, true), r.stdout)
      assert.are.equal(0, cli.run(w, { "run", "--direct", "d1", "--", "sh", "-c", "echo d > d.txt" }).code)
      r = cli.run(w, { "status", "d1" })
      assert.are.equal(0, r.code, r.stderr)
      assert.is_nil(r.stdout:find("undo", 1, true), r.stdout)
      assert.is_nil(r.stdout:find(":FlemmaSandbox", 1, true), r.stdout)
      -- the subcommands it names work
      r = cli.run(w, { "diff", "c1" })
      assert.are.equal(0, r.code, r.stderr)
      assert.matches("w.txt", r.stdout)
      r = cli.run(w, { "delete", "--force", "c1" })
      assert.are.equal(0, r.code, r.stderr)
      local ref = r.stdout:match("(refs/flemma%-sandbox/%S+)")
      assert.truthy(ref, r.stdout)
      local message = h.run({ "git", "log", "-1", "--format=%s", ref }, nil, w.proj).stdout
      assert.are.equal(
        "flemma-sandbox: the work of sandbox c1's copy (command line), kept when it was thrown away",
        message:gsub(" %(%d.*$", "")
      )
    end
  )

  it("gc removes the sandboxes of a project folder that is gone, and keeps the others", function()
    local gone = w.base .. "/gone-project"
    vim.fn.mkdir(gone, "p")
    assert.are.equal(0, cli.run(w, { "run", "--direct", "old", "--", "true" }, { cwd = gone }).code)
    assert.are.equal(0, cli.run(w, { "run", "--direct", "kept", "--", "true" }).code)
    local old_dirs = vim.fn.glob(w.home .. "/.cache/flemma-sandbox/gone-project-*", false, true)
    assert.are.equal(1, #old_dirs)
    h.sh("rm -rf " .. h.shell_quote(gone))
    local r = cli.run(w, { "gc" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal(0, vim.fn.isdirectory(old_dirs[1]))
    -- control: the project still there keeps its sandbox
    assert.are.equal(1, vim.fn.isdirectory(cli.folder(w, "kept")))
    assert.matches("kept", cli.run(w, { "list" }).stdout)
  end)
end)
