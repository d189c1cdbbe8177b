--- Clone mode (sandboxes.workspace = "clone"; policy/clone_plan.lua,
--- backends/workspace_copies.lua): a chat's calls work on its own copy of the
--- repository, shown at the repository's path; the user's tree, index,
--- HEAD and status stay as they were (control: the same call in direct
--- mode changes them).
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")

local function manifest(dir)
  return project.manifest(dir, true)
end

--- The user's repository, but for the copy's refs the sync adds.
local function repo_state(dir)
  return project.repo_state(dir, "refs/heads refs/tags")
end

describe("clone mode", function()
  local dir, proj, p

  local function setup(extra)
    local opts = {
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
      sandboxes = { workspace = "clone" },
    }
    for k, v in pairs(extra or {}) do
      opts[k] = v
    end
    sandbox.setup(opts)
  end

  local function bash(bufnr, command)
    local r = n.run_tool("bash", { command = command }, { bufnr = bufnr, approved = true })
    return r, (r.stdout or "") .. (r.stderr or "")
  end

  project.each(
    "mkdir -p src && git init -q . && printf 'build/\\n' > .gitignore && printf 'one\\n' > src/a.txt"
      .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
      .. " && printf 'one, modified\\n' > src/a.txt && printf 'staged\\n' > staged.txt && git add staged.txt"
      .. " && printf 'untracked\\n' > notes.txt && mkdir build && printf 'ignored\\n' > build/out.bin"
      .. " && printf 'SECRET=1\\n' > .env",
    function(world)
      p = world
      dir, proj = p.dir, p.proj
      setup()
    end
  )

  it("shows the copy at the project's path, as the user sees the tree, and keeps the user's tree as it was", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local before, state = manifest(proj), repo_state(proj)
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(bufnr), "\n")
    assert.matches("workspace:  clone: this chat works on its own copy of [^\n]*proj %(made at the next call%)", status)
    local r, out = bash(bufnr, "pwd && cat notes.txt src/a.txt && git status --short && ls .env 2>&1; true")
    assert.are.equal(0, r.exit_code, out)
    assert.matches("^" .. vim.pesc(proj) .. "\n", r.stdout)
    assert.matches("untracked\none, modified\n", r.stdout)
    assert.matches(" M src/a.txt", r.stdout)
    assert.matches("%?%? notes.txt", r.stdout)
    -- ignored folders at the top are the user's: copy-on-write where bwrap
    -- mounts overlays (the chat's layer takes the change), else read-only
    local ro, ro_out = bash(bufnr, "cat build/out.bin; (echo changed > build/out.bin && touch build/new) 2>&1; true")
    assert.matches("^ignored", ro.stdout, ro_out)
    if require("flemma_sandbox.backends.bwrap_probe").overlay_works({}) then
      assert.are.equal("ignored", vim.trim(ro_out))
      assert.are.equal("ignored\n", h.read(proj .. "/build/out.bin"))
      assert.are.equal(0, vim.fn.filereadable(proj .. "/build/new"))
      local again = bash(bufnr, "cat build/out.bin && ls build")
      assert.are.equal(
        "changed\nnew\nout.bin",
        vim.trim(again.stdout),
        "kept for the next call of the chat's live sandbox"
      )
    else
      assert.matches("Read%-only file system", ro_out)
    end
    assert.matches("%.env.*No such file", out, "secret files are not copied")
    r, out = bash(
      bufnr,
      "rm -rf * 2>/dev/null; echo new > new.txt && git add -A && git -c user.name=m -c user.email=m@m commit -qm model"
        .. " && git log --format=%s -1"
    )
    assert.are.equal(0, r.exit_code, out)
    assert.matches("model", r.stdout)
    assert.are.equal(before, manifest(proj))
    assert.are.equal(state, repo_state(proj))
    -- the copy's work reaches the user's repository as remote refs only
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    assert(vim.wait(15000, function()
      return require("flemma_sandbox.api.clone_mode").syncing == 0
    end, 20))
    local refs = h.run({ "git", "-C", proj, "for-each-ref", "--format=%(refname) %(subject)", "refs/remotes/" }).stdout
    assert.matches("refs/remotes/sandbox%-" .. vim.pesc(chat) .. "/master model\n", refs)
    assert.matches("refs/remotes/sandbox%-" .. vim.pesc(chat) .. "/wip ", refs)
    local wip_files =
      h.run({ "git", "-C", proj, "ls-tree", "-r", "--name-only", "refs/remotes/sandbox-" .. chat .. "/wip" })
    assert.are.equal(".gitignore\nnew.txt\n", wip_files.stdout)
    assert.are.equal(state, repo_state(proj))
    -- the next call finds the copy as the last one left it
    r = bash(bufnr, "ls && git log --format=%s -1")
    assert.are.equal("build\nnew.txt\nmodel", vim.trim(r.stdout))
    -- control: in direct mode the same kind of call changes the user's tree
    setup({ sandboxes = { workspace = "direct" } })
    bash(bufnr, "rm -rf src")
    assert.are_not.equal(before, manifest(proj))
  end)

  it("diff lists the copy's changes, apply brings them three-way keeping the user's work, discard", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r, out = bash(bufnr, "echo made > made.txt && rm staged.txt && echo 'one, by the model' > src/a.txt")
    assert.are.equal(0, r.exit_code, out)
    -- the user goes on meanwhile
    h.write(proj .. "/src/a.txt", "one, by the user\n")
    h.write(proj .. "/mine.txt", "the user's own\n")
    local head = h.run({ "git", "-C", proj, "rev-parse", "HEAD", "refs/heads/master" }).stdout
    local commands = require("flemma_sandbox.nvim.commands")
    vim.wait(15000, function()
      return require("flemma_sandbox.api.clone_mode").syncing == 0
    end, 20)
    vim.api.nvim_set_current_buf(bufnr)
    commands.actions.diff(bufnr)
    local items
    assert(
      vim.wait(15000, function()
        items = vim.fn.getqflist()
        return #items == 3
      end, 20),
      "the quickfix list: " .. vim.inspect(vim.fn.getqflist())
    )
    local texts = {}
    for _, item in ipairs(items) do
      texts[#texts + 1] = vim.fn.bufname(item.bufnr):gsub("^.*/proj/", "") .. " " .. item.text
    end
    table.sort(texts)
    assert.are.same({
      "made.txt A  made in the copy",
      "src/a.txt M  changed in the copy",
      "staged.txt D  deleted in the copy",
    }, texts)
    -- a side-by-side diff: the user's file and the copy's, both in diff mode
    local diffing = 0
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      diffing = diffing + (vim.wo[win].diff and 1 or 0)
    end
    assert.are.equal(2, diffing)
    -- in the quickfix window: the entry under the cursor
    vim.cmd("copen")
    for i, item in ipairs(vim.fn.getqflist()) do
      if vim.fn.bufname(item.bufnr):match("staged%.txt$") then
        vim.api.nvim_win_set_cursor(0, { i, 0 })
      end
    end
    commands.actions.diff(vim.api.nvim_get_current_buf())
    local shown = {}
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      shown[#shown + 1] = vim.fn.bufname(vim.api.nvim_win_get_buf(win))
    end
    assert.matches("sandbox://[^\n]*/staged%.txt", table.concat(shown, "\n"))
    -- from another buffer than the chat's: the chat reviewed last
    vim.cmd("tabonly")
    vim.cmd("enew")
    local notes, restore = n.capture_notify()
    commands.actions.apply(vim.api.nvim_get_current_buf())
    assert(vim.wait(15000, function()
      n.flush_notices()
      return #notes > 0
    end, 20))
    restore()
    -- made.txt and staged.txt's removal applied; src/a.txt, with markers, a conflict only
    assert.matches("applied 2 file%(s%); 1 conflict", notes[1].msg)
    assert.are.equal("made\n", h.read(proj .. "/made.txt"))
    assert.is_nil(h.read(proj .. "/staged.txt"))
    local merged = h.read(proj .. "/src/a.txt")
    assert.matches("<<<<<<< yours\none, by the user\n=======\none, by the model\n>>>>>>> sandbox", merged)
    assert.are.equal("the user's own\n", h.read(proj .. "/mine.txt"))
    assert.are.equal("untracked\n", h.read(proj .. "/notes.txt"))
    assert.are.equal(head, h.run({ "git", "-C", proj, "rev-parse", "HEAD", "refs/heads/master" }).stdout)
    -- the copy's base is what was applied: its diff starts from there now
    local copy_git = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1].clone .. "/.git"
    local refs = h.run({ "git", "--git-dir=" .. copy_git, "rev-parse", "refs/flemma/base", "refs/flemma/wip" })
    local base, wip = refs.stdout:match("^(%x+)\n(%x+)")
    assert.is_truthy(base)
    assert.are.equal(wip, base)
    -- applied: nothing left to review
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    assert.are.same({}, require("flemma_sandbox.api.review").changes_in(proj, chat))
    -- discard: the copy and its refs are gone; the next call starts from the tree as it is now
    local clone = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1].clone
    notes, restore = n.capture_notify()
    commands.actions.discard(bufnr)
    assert(vim.wait(15000, function()
      n.flush_notices()
      return #notes > 0
    end, 20))
    restore()
    assert.matches("discarded", notes[1].msg)
    assert.are.equal(0, vim.fn.isdirectory(clone))
    assert.are.equal("", h.run({ "git", "-C", proj, "for-each-ref", "refs/remotes/" }).stdout)
    r = bash(bufnr, "cat mine.txt made.txt")
    assert.are.equal("the user's own\nmade", vim.trim(r.stdout))
  end)

  it("syncs what changed only: a call that changes nothing brings no new commit of the copy's tree", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    --- The copy's refs in the user's repository (refs/remotes/sandbox-NAME/*).
    local function brought()
      project.synced()
      return h.run({ "git", "-C", proj, "for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/" }).stdout
    end
    local r, out = bash(bufnr, "echo made > made.txt")
    assert.are.equal(0, r.exit_code, out)
    local first = brought()
    assert.matches("/wip\n", first, "control: the sync brought the copy's tree")
    -- a second later (a commit of the same tree would be another one)
    r, out = bash(bufnr, "sleep 1.1; cat made.txt")
    assert.matches("^made", r.stdout, out)
    assert.are.equal(first, brought())
    r, out = bash(bufnr, "echo again >> made.txt")
    assert.are.equal(0, r.exit_code, out)
    assert.are_not.equal(first, brought(), "a change is brought")
  end)

  it("makes one copy for calls that start together", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local commands = {}
    for i = 1, 3 do
      commands[i] = "echo " .. i .. " > p" .. i .. ".txt && echo ok"
    end
    local results = n.run_together(bufnr, commands)
    for _, r in ipairs(results) do
      assert.are.equal(0, r.exit_code, vim.inspect(r))
    end
    local r = bash(bufnr, "cat p1.txt p2.txt p3.txt")
    assert.are.equal("1\n2\n3", vim.trim(r.stdout))
    assert.is_nil(h.read(proj .. "/p1.txt"))
  end)

  it("delete refuses to drop a copy with work not applied, unless forced", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "echo work > work.txt")
    vim.wait(15000, function()
      return require("flemma_sandbox.api.clone_mode").syncing == 0
    end, 20)
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr)
    local commands = require("flemma_sandbox.nvim.commands")
    local notes, restore = n.capture_notify()
    commands.actions.delete(bufnr, chat.name)
    n.flush_notices()
    restore()
    assert.matches("not removed: work in a chat's copy is not appli", notes[1].msg)
    assert.are.equal(1, vim.fn.isdirectory(chat.dir))
    notes, restore = n.capture_notify()
    commands.actions.delete(bufnr, chat.name, true)
    assert(
      vim.wait(15000, function()
        return vim.fn.isdirectory(chat.dir) == 0
      end, 20),
      vim.inspect(notes)
    )
    restore()
  end)

  it(
    "never runs on the host what the copy's git folder names (control: git there without the guard runs it)",
    function()
      local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
      -- the sandbox points git at a git folder of its own, whose config runs
      -- a command when git hashes a file; git on the host's behalf reads the
      -- copy in a view where the copy is at the project's path
      local plant = ([[
mkdir -p evil-git/refs evil-git/objects
cat > evil-git/config <<'EOF'
[core]
	repositoryformatversion = 0
[filter "evil"]
	clean = "sh -c \"touch PROJ/pwned; cat\""
EOF
echo PROJ/evil-git > .git/commondir
echo '* filter=evil' > .gitattributes
echo z > z.txt
cat evil-git/config
]]):gsub("PROJ", function()
        return proj
      end)
      local r, out = bash(bufnr, plant)
      assert.are.equal(0, r.exit_code, out)
      assert.matches('clean = "sh %-c', r.stdout)
      vim.wait(15000, function()
        return require("flemma_sandbox.api.clone_mode").syncing == 0
      end, 20)
      local spec = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1]
      assert.are.equal(0, vim.fn.filereadable(spec.clone .. "/pwned"), "the sync ran the planted filter")
      assert.are.equal(0, vim.fn.filereadable(proj .. "/pwned"))
      -- control: the same git in the same view, without naming the copy's git folder outright
      local git_box = require("flemma_sandbox.backends.git_box")
      local binds =
        { "--bind", spec.clone, proj, "--ro-bind", proj .. "/.git/objects", proj .. "/.git/flemma-user-objects" }
      local naive = 'cd "$1" && GIT_DIR="$1/.git" GIT_INDEX_FILE=/tmp/i git add -A; true'
      h.run(vim.list_extend(git_box.box(spec.bwrap, binds), { "sh", "-c", naive, "sh", proj }))
      assert.are.equal(1, vim.fn.filereadable(spec.clone .. "/pwned"), "control: the planted filter runs")
    end
  )

  it("copies a submodule the user checked out, with its history; the user's submodule stays as it was", function()
    h.sh(
      "cd "
        .. h.shell_quote(dir)
        .. " && git init -q lib && cd lib && printf 'lib one\\n' > lib.txt && git add -A"
        .. " && git -c user.name=u -c user.email=u@e commit -qm lib-init && cd "
        .. h.shell_quote(proj)
        .. " && git -c protocol.file.allow=always submodule -q add ../lib lib"
        .. " && git -c user.name=u -c user.email=u@e commit -qm sub"
        .. " && printf 'lib, the user changed it\\n' > lib/lib.txt && printf 'x\\n' > lib/untracked.txt"
    )
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local function sub_repo()
      return h.run({
        "sh",
        "-c",
        'cd "$1" && git ls-files --stage && git status --porcelain && git for-each-ref && git rev-parse HEAD',
        "sh",
        proj .. "/lib",
      }).stdout
    end
    local before, sub_state = manifest(proj .. "/lib"), sub_repo()
    local r, out = bash(
      bufnr,
      "cat lib/lib.txt lib/untracked.txt && git -C lib log --format=%s && git -C lib status --short"
        .. " && echo model > lib/lib.txt && rm lib/untracked.txt && git -C lib add -A"
        .. " && git -C lib -c user.name=m -c user.email=m@m commit -qm in-the-copy && echo committed"
    )
    assert.are.equal(0, r.exit_code, out)
    assert.matches("^lib, the user changed it\nx\nlib%-init\n M lib.txt\n%?%? untracked.txt\ncommitted", r.stdout)
    assert.are.equal(before, manifest(proj .. "/lib"))
    assert.are.equal(sub_state, sub_repo())
    -- control: the copy's submodule is a folder of its own, not the user's
    local clone = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1].clone
    assert.are.equal("model\n", h.read(clone .. "/lib/lib.txt"))
  end)

  it("keeps the copy's git config and hooks read-only and its .git in place; the user's objects too", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r, out = bash(
      bufnr,
      "echo '[core] fsmonitor = touch /tmp/ran' >> .git/config; echo x > .git/hooks/post-commit;"
        .. " : > .git/info/exclude;"
        .. " mv .git .git-old; rm -rf .git/flemma-user-objects/*; ls -d .git; git cat-file -t HEAD"
    )
    assert.matches("config: Read%-only file system", out)
    assert.matches("post%-commit: Read%-only file system", out)
    assert.matches("exclude: Read%-only file system", out)
    assert.matches("mv: cannot move", out)
    assert.are.equal(".git\ncommit", vim.trim(r.stdout), "the .git and the user's objects are still there")
    assert.are.equal(0, vim.fn.filereadable(proj .. "/.git/hooks/post-commit"))
    assert.is_nil((h.read(proj .. "/.git/config") or ""):find("fsmonitor", 1, true))
  end)

  it("acts on the copy with the file tools and git, never through a link out of it (no live sandbox)", function()
    -- git's identity for the commit in the sandbox (no ~/.gitconfig in CI's roots)
    local ident = { "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL" }
    for _, name in ipairs(ident) do
      vim.env[name] = name:match("EMAIL") and "m@m" or "m"
    end
    setup({
      policy = { rw_paths = { "$CWD", "/tmp" }, network = false, env_allow = ident },
      sandboxes = { workspace = "clone", live = false },
      approval = { read = "allow", write = "allow", edit = "allow", git = "allow" },
    })
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local before, state = manifest(proj), repo_state(proj)
    local r, out = bash(bufnr, "rm notes.txt && ls")
    assert.are.equal(0, r.exit_code, out)
    assert.is_nil(r.stdout:find("notes.txt", 1, true))
    local function tool(name, input)
      return n.run_tool(name, input, { bufnr = bufnr, approved = true })
    end
    r = tool("write", { path = "w.txt", content = "written\n" })
    assert.is_nil(r.error, vim.inspect(r))
    r = tool("edit", { path = proj .. "/src/a.txt", oldText = "modified", newText = "edited" })
    assert.is_nil(r.error, vim.inspect(r))
    r = tool("read", { path = "src/a.txt" })
    assert.are.equal("one, edited", r.content)
    r = tool("git", { args = { "add", "-A" } })
    assert.are.equal(0, r.exit_code, vim.inspect(r))
    r = tool("git", { args = { "commit", "-m", "by the git tool" } })
    assert.are.equal(0, r.exit_code, vim.inspect(r))
    r = bash(bufnr, "cat w.txt && git log --format=%s -1")
    assert.are.equal("written\nby the git tool", vim.trim(r.stdout))
    assert.are.equal(before, manifest(proj))
    assert.are.equal(state, repo_state(proj))
    -- a link in the copy to the user's own file (its path is the same
    -- inside): on the host it would lead to the user's tree
    bash(bufnr, "ln -s " .. proj .. "/staged.txt link.txt")
    local clone = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1].clone
    assert.are.equal(proj .. "/staged.txt", require("flemma_sandbox.core").resolve(clone .. "/link.txt", "/"))
    r = tool("write", { path = "link.txt", content = "through the link\n" })
    assert.matches("leads out of the chat's copy", r.error or "")
    r = tool("read", { path = "link.txt" })
    assert.matches("leads out of the chat's copy", r.error or "")
    assert.are.equal("staged\n", h.read(proj .. "/staged.txt"))
    for _, name in ipairs(ident) do
      vim.env[name] = nil
    end
    local ok, err = pcall(sandbox.setup, { sandboxes = { workspace = "copy" } })
    assert.is_false(ok)
    assert.matches('sandboxes.workspace: expected "direct" or "clone", got copy', tostring(err))
  end)
end)
