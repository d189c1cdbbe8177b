--- What a sandbox plants in the chat's folders and in its copy never
--- makes the editor follow it (issue 38, item 6): reset, delete and gc
--- walk the chat's folders without following a link; diff and apply never
--- open a path from the copy's objects that leaves the repository, nor a
--- FIFO; apply never brings a name the check after a run moved aside in
--- the copy into the user's tree. Each with its control.
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")

local uv = vim.uv or vim.loop
-- open(2) flags (the same on every Linux architecture the CI runs)
local O_WRONLY, O_NONBLOCK = 1, 2048

--- Whether a process has the FIFO open for reading: a writer's
--- non-blocking open fails with ENXIO while none has.
local function fifo_has_reader(path)
  local fd, err = uv.fs_open(path, O_WRONLY + O_NONBLOCK, 0)
  if fd then
    uv.fs_close(fd)
    return true
  end
  assert.matches("ENXIO", tostring(err))
  return false
end

--- Whether cmd (sh) was still running after secs (then it is killed).
local function still_running_after(secs, cmd)
  local code = h.run({ "timeout", "-k", "1", tostring(secs), "sh", "-c", cmd }).code
  return code == 124 or code == 137
end

describe("what a sandbox planted", function()
  local p, dir, proj, notes, restore

  local function setup(workspace)
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
      sandboxes = { workspace = workspace },
    })
  end

  local function bash(bufnr, command)
    local r = n.run_tool("bash", { command = command }, { bufnr = bufnr, approved = true })
    return r, (r.stdout or "") .. (r.stderr or "")
  end

  local function synced()
    return vim.wait(20000, function()
      return require("flemma_sandbox.api.clone_mode").syncing == 0
    end, 20)
  end

  before_each(function()
    p = project.enter(
      "git init -q . && printf 'one\\n' > a.txt && git add -A"
        .. " && git -c user.name=u -c user.email=u@e commit -qm init"
    )
    dir, proj = p.dir, p.proj
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/outside") .. " && echo keep > " .. h.shell_quote(dir .. "/outside/keep"))
    notes, restore = n.capture_notify()
  end)

  after_each(function()
    restore()
    synced()
    vim.cmd("silent! tabonly")
    vim.cmd("silent! %bwipeout!")
    project.leave(p)
  end)

  it(
    "reset with `ln -s / /tmp/x` in the chat's /tmp ends at once, removes the folder, never the link's target",
    function()
      setup("direct")
      local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
      local r, out = bash(bufnr, "ln -s " .. h.shell_quote(dir .. "/outside") .. " /tmp/y && echo ok")
      assert.are.equal(0, r.exit_code, out)
      local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr)
      local tmp = chat.dir .. "/tmp"
      -- control: the glob reset used follows the links (through /tmp/y to
      -- the outside folder; through /tmp/x into / it does not end)
      assert.are.equal(1, #vim.fn.glob(tmp .. "/**/keep", false, true))
      r, out = bash(bufnr, "ln -s / /tmp/x && echo ok")
      assert.are.equal(0, r.exit_code, out)
      assert.are.equal("link", require("flemma_sandbox.core").file_type(tmp .. "/x"))
      local glob = "call glob('" .. tmp .. "/**/workspace/*/.git/flemma-user-objects')"
      assert.is_true(
        still_running_after(
          3,
          "nvim --headless -u NONE -i NONE --cmd " .. h.shell_quote(glob) .. " --cmd 'qa!' </dev/null"
        ),
        "the old glob over the planted link was still running after 3 s"
      )
      local t0 = uv.hrtime()
      vim.api.nvim_set_current_buf(bufnr)
      vim.cmd("FlemmaSandbox reset")
      assert(vim.wait(10000, function()
        n.flush_notices()
        return #notes > 0
      end, 20))
      local ms = (uv.hrtime() - t0) / 1e6
      assert.is_true(ms < 5000, "reset took " .. ms .. " ms")
      assert.matches("removed", notes[1].msg)
      assert.is_nil(require("flemma_sandbox.core").file_type(tmp))
      assert.are.equal("keep\n", h.read(dir .. "/outside/keep"), "the link's target is untouched")
      -- delete walks the chat's folder the same way
      bash(bufnr, "ln -s / /tmp/x")
      t0 = uv.hrtime()
      require("flemma_sandbox.nvim.commands").actions.delete(bufnr, chat.name)
      assert(vim.wait(10000, function()
        return require("flemma_sandbox.core").file_type(chat.dir) == nil
      end, 20))
      assert.is_true((uv.hrtime() - t0) / 1e6 < 5000)
      assert.are.equal("keep\n", h.read(dir .. "/outside/keep"))
    end
  )

  it("diff of a forged base whose tree holds `..` opens nothing out of the repository (a FIFO there)", function()
    setup("clone")
    local fifo = dir .. "/fifo"
    assert.are.equal(0, h.run({ "mkfifo", fifo }).code)
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    -- in the copy: a base whose tree is the copy's work plus `..`/fifo,
    -- which the sync brings to the user's repository
    local r, out = bash(
      bufnr,
      "set -e; echo two > a.txt"
        .. "; b=$(printf x | git hash-object -w --stdin)"
        .. "; up=$(printf '100644 blob %s\\tfifo\\n' $b | git mktree)"
        .. "; forged=$( (git ls-tree HEAD; printf '040000 tree %s\\t..\\n' $up) | git mktree --missing)"
        .. "; c=$(echo forged | git -c user.name=m -c user.email=m@m commit-tree $forged)"
        .. "; git update-ref refs/flemma/base $c; echo ok"
    )
    assert.are.equal(0, r.exit_code, out)
    assert(synced())
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    local function paths_now()
      local paths = {}
      for _, c in ipairs(require("flemma_sandbox.api.review").changes_in(proj, chat)) do
        paths[#paths + 1] = c.path
      end
      return paths
    end
    -- the sync holds a ref whose tree it cannot read (workspace_hidden.lua)
    assert.is_false(vim.tbl_contains(paths_now(), "../fifo"), "the sync held the forged base")
    -- as if a sync had let it through: the diff must still open nothing
    local clone = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1].clone
    local remote = "refs/remotes/sandbox-" .. chat
    local fetched = h.run({
      "git",
      "-C",
      proj,
      "fetch",
      "-q",
      clone,
      "+refs/flemma/base:" .. remote .. "/base",
      "+refs/flemma/wip:" .. remote .. "/wip",
    })
    assert.are.equal(0, fetched.code, fetched.stderr)
    assert.are.same({ "../fifo", "a.chat", "a.txt" }, paths_now(), "the forged base reached the user's repository")
    -- control: opening that path as diff did blocks (no writer comes)
    assert.is_true(still_running_after(2, "cat " .. h.shell_quote(proj .. "/../fifo") .. " >/dev/null"))
    local t0 = uv.hrtime()
    vim.api.nvim_set_current_buf(bufnr)
    require("flemma_sandbox.nvim.commands").actions.diff(bufnr)
    local items
    assert(
      vim.wait(20000, function()
        items = vim.fn.getqflist()
        return #items == 3
      end, 20),
      "the quickfix list: " .. vim.inspect(vim.fn.getqflist())
    )
    assert.is_true((uv.hrtime() - t0) / 1e6 < 15000)
    assert.is_false(fifo_has_reader(fifo), "nothing holds the FIFO open")
    local texts = {}
    for _, item in ipairs(items) do
      texts[#texts + 1] = (item.bufnr > 0 and vim.fn.bufname(item.bufnr) or "-") .. " " .. item.text
    end
    table.sort(texts)
    assert.matches("^%- %.%./fifo: not opened: the path goes through a link or out of the repository", texts[1])
    assert.matches("a%.txt M", texts[3])
    -- the refused entry, picked in the quickfix window: nothing opened either
    vim.cmd("copen")
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    for i, item in ipairs(vim.fn.getqflist()) do
      if item.bufnr == 0 then
        vim.api.nvim_win_set_cursor(0, { i, 0 })
      end
    end
    require("flemma_sandbox.nvim.commands").actions.diff(vim.api.nvim_get_current_buf())
    assert.is_false(fifo_has_reader(fifo))
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      assert.is_nil(vim.api.nvim_buf_get_name(b):find("fifo", 1, true), "no buffer of the FIFO")
    end
    -- apply brings a.txt and never writes outside
    vim.cmd("silent! tabonly")
    require("flemma_sandbox.nvim.commands").actions.apply(bufnr)
    assert(vim.wait(20000, function()
      n.flush_notices()
      for _, note in ipairs(notes) do
        if note.msg:match("applied") then
          return true
        end
      end
      return false
    end, 20))
    assert.are.equal("two\n", h.read(proj .. "/a.txt"))
    assert.are.equal("fifo", require("flemma_sandbox.core").file_type(fifo))
  end)

  it("apply never brings in what the check after a run moved aside in the copy", function()
    setup("clone")
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    -- .nvim.lua is protected: made in the copy, the check after the run
    -- moves it aside there (NAME.flemma-quarantine-...)
    local r, out = bash(bufnr, "echo two > a.txt && echo 'os.exit(3)' > .nvim.lua && echo ok")
    assert.are.equal(0, r.exit_code, out)
    assert(synced())
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    local aside
    for _, c in ipairs(require("flemma_sandbox.api.review").changes_in(proj, chat)) do
      aside = aside or c.path:match("^%.nvim%.lua%.flemma%-quarantine%-.*")
    end
    assert.truthy(aside, "control: the copy's synced work holds the name moved aside")
    require("flemma_sandbox.nvim.commands").actions.apply(bufnr)
    assert(vim.wait(20000, function()
      n.flush_notices()
      return #notes > 0
    end, 20))
    assert.are.equal("two\n", h.read(proj .. "/a.txt"), "the rest is applied")
    assert.is_nil(h.read(proj .. "/" .. aside))
    assert.is_nil(h.read(proj .. "/.nvim.lua"))
    local items = vim.fn.getqflist()
    assert.matches("moved aside", items[#items].text)
  end)

  it("apply never reads a FIFO or a link at the user's path (control: a plain read blocks)", function()
    local review = require("flemma_sandbox.api.review")
    h.sh("mkfifo " .. h.shell_quote(proj .. "/p") .. " && ln -s ../outside " .. h.shell_quote(proj .. "/l"))
    local zero = string.rep("0", 40)
    local function change(path)
      return { top = proj, path = path, status = "A", old_mode = "000000", new_mode = "100644" }
    end
    assert.is_true(still_running_after(2, "cat " .. h.shell_quote(proj .. "/p") .. " >/dev/null"))
    for _, path in ipairs({ "p", "l/keep", "../outside/keep" }) do
      local c = change(path)
      c.old_oid, c.new_oid = zero, vim.trim(h.run({ "git", "-C", proj, "rev-parse", "HEAD:a.txt" }).stdout)
      local out = { applied = {}, conflicts = {}, skipped = {} }
      review.apply_one(c, function()
        return true
      end, out)
      assert.are.same({}, out.applied, path)
      assert.matches("not brought in", out.skipped[1].text, path)
      assert.is_false(fifo_has_reader(proj .. "/p"))
    end
    assert.are.equal("keep\n", h.read(dir .. "/outside/keep"))
    -- mine is read beneath the repository, O_NONBLOCK, regular files only
    local mine, why = review.mine(change("p"))
    assert.is_false(mine)
    assert.matches("not a regular file", why)
  end)
end)
