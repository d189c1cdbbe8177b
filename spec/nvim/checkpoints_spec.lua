--- Direct mode's checkpoints (checkpoints.lua, run/shadow.lua): a chat's
--- `rm -rf *`, an edit and a write are undone byte for byte, untracked
--- files included, ignored ones untouched; the user's repository shows no
--- trace; a hidden secret never enters a checkpoint (control: a plain
--- snapshot of the same tree holds it).
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")
local checkpoints = require("flemma_sandbox.api.checkpoints")

local manifest, repo_state = project.manifest, project.repo_state

--- Undo through the API, without the question: what it said as one
--- text, and whether it went through without an error.
local function undo(bufnr, opts)
  local report, err = n.undo_call(bufnr, opts)
  if err then
    return err, false, nil
  end
  return vim.inspect(report), #report.errors == 0, report
end

describe("direct mode's checkpoints", function()
  local dir, proj, p

  before_each(function()
    p = project.enter(
      "mkdir -p src/deep && git init -q . && printf '.build/\\n*.log\\n' > .gitignore"
        .. " && printf 'one\\n' > src/a.txt && printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh"
        .. " && ln -s src/a.txt link && printf 'deep\\n' > src/deep/d.txt"
        .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
        .. " && printf 'one, modified\\n' > src/a.txt && printf 'staged\\n' > staged.txt && git add staged.txt"
        .. " && printf 'untracked\\n' > notes.txt && mkdir -p .build && printf 'ignored\\n' > .build/out.bin"
        .. " && printf 'log\\n' > .x.log"
    )
    dir, proj = p.dir, p.proj
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
      approval = { bash = "allow", write = "allow", edit = "allow" },
    })
  end)

  after_each(function()
    project.leave(p)
  end)

  it("undoes `rm -rf *` byte for byte, untracked files included, and leaves no trace in the repository", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    -- ignored files (.build/, .x.log) are not in a checkpoint; `rm -rf *`
    -- leaves them (dot files) and undo must too
    local before, state = manifest(proj), repo_state(proj)
    local r = n.run_tool("bash", { command = "rm -rf *; echo gone" }, { bufnr = bufnr, approved = true })
    assert.are.equal("gone", vim.trim(r.output or r.stdout or ""), vim.inspect(r))
    assert.is_nil(h.read(proj .. "/notes.txt"), "control: the call removed the untracked file")
    assert.is_nil(h.read(proj .. "/src/a.txt"))
    local said, ok = undo(bufnr)
    assert.is_true(ok, said)
    assert.are.equal(before, manifest(proj), said)
    assert.are.equal(state, repo_state(proj))
  end)

  it("undoes an edit and a write, one call at a time, and says when nothing is left to undo", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local first = manifest(proj)
    local r = n.run_tool("write", { path = proj .. "/new.txt", content = "new\n" }, { bufnr = bufnr, approved = true })
    assert.is_nil(r.error, vim.inspect(r))
    local second = manifest(proj)
    r = n.run_tool(
      "edit",
      { path = proj .. "/notes.txt", oldText = "untracked", newText = "edited" },
      { bufnr = bufnr, approved = true }
    )
    assert.is_nil(r.error, vim.inspect(r))
    assert.are.equal("edited\n", h.read(proj .. "/notes.txt"))
    local third = manifest(proj)
    -- undo of a call that changed nothing changes nothing
    n.run_tool("bash", { command = "true" }, { bufnr = bufnr, approved = true })
    local said, ok, report = undo(bufnr)
    assert.is_true(ok, said)
    assert.are.equal(0, #report.written, said)
    assert.are.equal(third, manifest(proj), said)
    said, ok = undo(bufnr)
    assert.is_true(ok, said)
    assert.are.equal(second, manifest(proj), said)
    said, ok = undo(bufnr)
    assert.is_true(ok, said)
    assert.are.equal(first, manifest(proj), said)
    assert.is_nil(h.read(proj .. "/new.txt"))
    said = undo(bufnr)
    assert.matches("every recorded call is undone already", said)
    assert.are.equal(first, manifest(proj))
  end)

  it("puts back odd names, modes, links, and a folder a file replaced (and the other way round)", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    h.sh(
      "cd "
        .. h.shell_quote(proj)
        .. " && printf a > 'with space.txt' && printf b > \"$(printf 'new\\nline.txt')\" && printf c > -dash.txt"
        .. " && printf d > 'ünï.txt' && mkdir -p becomes_file && printf e > becomes_file/inner.txt"
        .. " && printf f > becomes_dir"
    )
    local before = manifest(proj)
    local r = n.run_tool("bash", {
      command = "chmod 644 run.sh && ln -sfn run.sh link && rm -rf becomes_file && printf x > becomes_file"
        .. " && rm becomes_dir && mkdir becomes_dir && printf y > becomes_dir/z && rm -- *space* new* -dash.txt ünï.txt"
        .. " && echo done",
    }, { bufnr = bufnr, approved = true })
    assert.matches("done", r.output or r.stdout or "", vim.inspect(r))
    assert.are_not.equal(before, manifest(proj), "control: the call changed the tree")
    local said, ok = undo(bufnr)
    assert.is_true(ok, said)
    assert.are.equal(before, manifest(proj), said)
  end)

  it("keeps to a writable folder below the repository's top; an empty repository works too", function()
    h.sh("mkdir -p " .. h.shell_quote(proj .. "/sub") .. " && echo in > " .. h.shell_quote(proj .. "/sub/in.txt"))
    vim.cmd("cd " .. vim.fn.fnameescape(proj .. "/sub"))
    local bufnr = n.open_chat(dir .. "/c.chat", { "@You:", "hi" })
    n.run_tool("bash", { command = "rm in.txt && echo new > new.txt" }, { bufnr = bufnr, approved = true })
    -- the user changes a file outside the writable folder meanwhile
    h.write(proj .. "/notes.txt", "the user's own\n")
    local said, ok = undo(bufnr)
    assert.is_true(ok, said)
    assert.are.equal("in\n", h.read(proj .. "/sub/in.txt"))
    assert.is_nil(h.read(proj .. "/sub/new.txt"))
    assert.are.equal("the user's own\n", h.read(proj .. "/notes.txt"), "outside the writable folder: untouched")
    local empty = dir .. "/empty"
    h.sh("git init -q " .. h.shell_quote(empty) .. " && echo one > " .. h.shell_quote(empty .. "/one.txt"))
    vim.cmd("cd " .. vim.fn.fnameescape(empty))
    bufnr = n.open_chat(dir .. "/d.chat", { "@You:", "hi" })
    n.run_tool("bash", { command = "echo changed > one.txt" }, { bufnr = bufnr, approved = true })
    said, ok = undo(bufnr)
    assert.is_true(ok, said)
    assert.are.equal("one\n", h.read(empty .. "/one.txt"))
  end)

  it("keeps taking them with a nested repository made by `git init` that has no commit yet", function()
    -- git add -A refuses such a folder ("does not have a commit checked
    -- out"); a nested repository's files are never in a checkpoint anyway
    -- (one with a commit is recorded as that commit)
    h.sh("cd " .. h.shell_quote(proj) .. " && git init -q late && echo mine > late/f.txt")
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local before = h.read(proj .. "/notes.txt")
    local r = n.run_tool("bash", { command = "rm notes.txt && echo gone" }, { bufnr = bufnr, approved = true })
    assert.are.equal("gone", vim.trim(r.output or r.stdout or ""), vim.inspect(r))
    assert.is_nil(h.read(proj .. "/notes.txt"), "control: the call removed it")
    local said, ok = undo(bufnr)
    assert.is_true(ok, said)
    assert.are.equal(before, h.read(proj .. "/notes.txt"), said)
    assert.are.equal("mine\n", h.read(proj .. "/late/f.txt"), "the nested repository's files are left as they are")
  end)

  it("takes one per call when calls run at once, and keeps sandboxes.max_checkpoints", function()
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
      sandboxes = { max_checkpoints = 2 },
    })
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local commands = {}
    for i = 1, 3 do
      commands[i] = "echo " .. i .. " > p" .. i .. ".txt"
    end
    n.run_together(bufnr, commands, 20000)
    local entries = checkpoints.list(bufnr)[1].entries
    assert.are.equal(2, #entries, vim.inspect(entries))
    assert.are.same({ 3, 2 }, { entries[1].n, entries[2].n })
  end)

  it("lists the checkpoints with the call that followed", function()
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    -- warm (Flemma's request) readies the store's index and records nothing
    checkpoints.warm(bufnr)
    local store = checkpoints.scope(bufnr).specs[1].store
    assert(vim.wait(10000, function()
      return vim.fn.filereadable(store .. "/index") == 1
    end, 10))
    assert.are.equal(0, #checkpoints.list(bufnr)[1].entries)
    n.run_tool("bash", { command = "echo one > one.txt" }, { bufnr = bufnr, approved = true })
    local lists = checkpoints.list(bufnr)
    assert.are.equal(1, #lists)
    assert.are.equal(proj, lists[1].top)
    assert.are.equal(1, #lists[1].entries)
    assert.matches("^bash: ", lists[1].entries[1].label)
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(bufnr), "\n")
    assert.matches("undo:       checkpoints [^\n]*proj: 1", status)
    local shown = table.concat(require("flemma_sandbox.nvim.undo").list_lines(bufnr), "\n")
    assert.matches("1  [%d-]+ [%d:]+  bash: ", shown)
  end)

  it("says so where a writable project is not in git, and is off with sandboxes.checkpoints = false", function()
    local plain = dir .. "/plain"
    h.sh("mkdir -p " .. h.shell_quote(plain) .. " && echo keep > " .. h.shell_quote(plain .. "/f.txt"))
    vim.cmd("cd " .. vim.fn.fnameescape(plain))
    local bufnr = n.open_chat(plain .. "/a.chat", { "@You:", "hi" })
    n.run_tool("bash", { command = "rm f.txt" }, { bufnr = bufnr, approved = true })
    assert.matches("plain: not git, none", require("flemma_sandbox.nvim.undo").summary(bufnr))
    local said, ok = undo(bufnr)
    assert.is_false(ok)
    assert.matches("no checkpoints: no git repository in the writable projects", said)
    vim.cmd("cd " .. vim.fn.fnameescape(proj))
    local ok_setup, err = pcall(sandbox.setup, { sandboxes = { checkpoints = "yes" } })
    assert.is_false(ok_setup)
    assert.matches("sandboxes.checkpoints: expected boolean", tostring(err))
    ok_setup, err = pcall(sandbox.setup, { sandboxes = { max_checkpoints = 0 } })
    assert.is_false(ok_setup)
    assert.matches("sandboxes.max_checkpoints: expected a positive whole number", tostring(err))
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD" }, network = false },
      sandboxes = { checkpoints = false },
    })
    bufnr = n.open_chat(proj .. "/b.chat", { "@You:", "hi" })
    n.run_tool("bash", { command = "rm notes.txt" }, { bufnr = bufnr, approved = true })
    assert.is_nil(h.read(proj .. "/notes.txt"))
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr)
    assert.are.equal(1, vim.fn.isdirectory(chat.dir), "control: the chat's folder is there")
    assert.are.equal(0, vim.fn.isdirectory(chat.dir .. "/checkpoints"), "no store was made")
    assert.matches("sandboxes.checkpoints is off", require("flemma_sandbox.nvim.undo").summary(bufnr))
  end)

  it("never puts a hidden secret's content in a checkpoint (control: a plain snapshot holds it)", function()
    local secret = "SECRET-" .. n.marker()
    h.write(proj .. "/.env", secret .. "\n")
    local bufnr = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    n.run_tool("bash", { command = "echo x > y.txt" }, { bufnr = bufnr, approved = true })
    local spec = checkpoints.scope(bufnr).specs[1]
    local function holds(store)
      local out = h.run({
        "sh",
        "-c",
        'git --git-dir="$1" cat-file --batch-all-objects --batch | grep -c "$2" || true',
        "sh",
        store,
        secret,
      })
      return tonumber(vim.trim(out.stdout)) or 0
    end
    assert.are.equal(0, holds(spec.store))
    assert.are.equal("SECRET", (h.read(proj .. "/.env") or ""):sub(1, 6), "the secret is still there")
    -- control: the same snapshot without the sandbox's view of the tree
    local plain = dir .. "/plain.git"
    h.sh(
      "git init -q --bare "
        .. h.shell_quote(plain)
        .. " && cd "
        .. h.shell_quote(proj)
        .. " && GIT_DIR="
        .. h.shell_quote(plain)
        .. " GIT_WORK_TREE=. git add -A"
    )
    assert.is_true(holds(plain) > 0, "control: a plain snapshot holds the secret")
  end)
end)
