--- Clone mode keeps what the copy hides (backends/workspace_copies.lua): a
--- tracked file of a secret name (`.env.example`, secret_files `.env.*`)
--- stays tracked in the copy as HEAD has it, skip-worktree, out of the
--- work tree; the copy's `git status` is clean and the model's
--- `git add -A; git commit` keeps it, in the copy and in the synced branch
--- the user merges (so does a tracked file under a deny_read path); the
--- copy's merge of a user's branch that changed it works and is
--- published. A commit that deletes it anyway (git update-index
--- --force-remove) is not published, and a note says so (the control: the copy's branch
--- fetched without the check deletes it). The copy gets the identity git
--- resolves for the user's repository (its config, includeIf), none when
--- there is none.
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")

describe("clone mode keeps hidden files", function()
  local dir, proj, p
  local saved = {}

  local function bash(bufnr, command)
    local r = n.run_tool("bash", { command = command }, { bufnr = bufnr, approved = true })
    return r, (r.stdout or "") .. (r.stderr or "")
  end

  local function git(...)
    return h.run(vim.list_extend({ "git", "-C", proj }, { ... }))
  end

  --- No global or system git config on the host (the identity comes from
  --- the repository alone), unless given.
  local function host_git_config(global)
    vim.env.GIT_CONFIG_GLOBAL = global or "/dev/null"
    vim.env.GIT_CONFIG_NOSYSTEM = "1"
  end

  project.each(
    "git init -q . && printf 'EXAMPLE=1\\n' > .env.example && printf 'one\\n' > a.txt"
      .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
      .. " && git config user.name 'Repo User' && git config user.email repo@example.org",
    function(world)
      p = world
      dir, proj = p.dir, p.proj
      saved = { global = vim.env.GIT_CONFIG_GLOBAL, nosystem = vim.env.GIT_CONFIG_NOSYSTEM }
      host_git_config()
      sandbox.setup({
        backend = "bwrap",
        policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
        sandboxes = { workspace = "clone" },
      })
    end
  )

  after_each(function()
    vim.env.GIT_CONFIG_GLOBAL = saved.global
    vim.env.GIT_CONFIG_NOSYSTEM = saved.nosystem
  end)

  it("a tracked .env.example survives git add -A; git commit in the copy and the synced branch", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r, out = bash(
      bufnr,
      "git status --porcelain; echo status-done; git ls-files -v .env.example;"
        .. " test -e .env.example || echo absent"
    )
    assert.are.equal(0, r.exit_code, out)
    assert.matches("^status%-done\n", r.stdout, "the copy's status is clean")
    -- tracked, skip-worktree, out of the work tree
    assert.matches("\nS %.env%.example\nabsent$", r.stdout)
    r, out = bash(bufnr, "echo two > b.txt && git add -A && git commit -qm work && git show --stat --format= HEAD")
    assert.are.equal(0, r.exit_code, out)
    assert.matches("b%.txt", r.stdout)
    assert.not_matches("env", r.stdout, "the commit records nothing of .env.example")
    r = bash(bufnr, "git ls-tree --name-only HEAD; git status --porcelain")
    assert.matches("^%.env%.example\na%.txt\nb%.txt$", r.stdout, "in HEAD, and the status clean")
    assert(project.synced())
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    local branch = "sandbox-" .. chat .. "/master"
    for _, ref in ipairs({ branch, "sandbox-" .. chat .. "/wip", "sandbox-" .. chat .. "/base" }) do
      assert.are.equal("EXAMPLE=1\n", git("show", ref .. ":.env.example").stdout, ref)
    end
    -- the user merges the synced branch: the file is kept
    local merged = git("merge", "-q", "--no-edit", branch)
    assert.are.equal(0, merged.code, merged.stderr)
    assert.are.equal("two\n", h.read(proj .. "/b.txt"))
    assert.are.equal("EXAMPLE=1\n", h.read(proj .. "/.env.example"))
    assert.are.equal("", git("status", "--porcelain").stdout)
    -- nothing left to review on the hidden file
    local changes = require("flemma_sandbox.api.review").changes_in(proj, chat)
    for _, c in ipairs(changes) do
      assert.not_matches("env", c.path)
    end
  end)

  it("does not publish a commit that deletes it with git plumbing, and says so", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r, out = bash(bufnr, "echo two > b.txt && git add -A && git commit -qm good && git rev-parse HEAD")
    assert.are.equal(0, r.exit_code, out)
    local good = vim.trim(r.stdout)
    assert(project.synced())
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    local branch = "refs/remotes/sandbox-" .. chat .. "/master"
    local wip = "refs/remotes/sandbox-" .. chat .. "/wip"
    assert.are.equal(good, vim.trim(git("rev-parse", branch).stdout), "a commit keeping it is published")
    local columns = vim.o.columns
    vim.o.columns = 250 -- the note is one line, cut to the command line's room
    local notes, restore = n.capture_notify()
    -- the bit cleared: git add -A still leaves it (the sparse checkout)
    r, out = bash(
      bufnr,
      "git update-index --no-skip-worktree .env.example && git add -A && git diff --cached --name-only; echo staged"
    )
    assert.are.equal(0, r.exit_code, out)
    assert.are.equal("staged", vim.trim(r.stdout))
    assert(project.synced())
    local wip_before = vim.trim(git("rev-parse", wip).stdout)
    assert.are.equal("EXAMPLE=1\n", git("show", wip .. ":.env.example").stdout)
    r, out = bash(
      bufnr,
      "git update-index --force-remove .env.example && echo three > c.txt"
        .. " && git add -A && git commit -qm bad && git show --stat --format= HEAD && git rev-parse HEAD"
    )
    assert.are.equal(0, r.exit_code, out)
    -- control: the copy holds the commit that deletes it
    assert.matches("%.env%.example | 1 %-", r.stdout)
    local bad = r.stdout:match("(%x+)%s*$")
    assert(project.synced())
    n.flush_notices()
    restore()
    vim.o.columns = columns
    assert.are.equal(good, vim.trim(git("rev-parse", branch).stdout), "the branch is not updated")
    assert.are.equal(wip_before, vim.trim(git("rev-parse", wip).stdout), "nor wip, which the commit is in")
    assert.are.equal(1, git("cat-file", "-e", bad .. "^{commit}").code == 0 and 1 or 0, "fetched, not published")
    assert.are.equal("", git("branch", "-r", "--contains", bad).stdout)
    assert.are.equal("", git("for-each-ref", "refs/flemma-sandbox-incoming/").stdout)
    local said = {}
    for _, note in ipairs(notes) do
      said[#said + 1] = note.msg
    end
    said = table.concat(said, "\n")
    assert.matches("%.env%.example: sandbox%-[^\n]*/master, sandbox%-[^\n]*/wip not updated", said)
    local full = require("flemma_sandbox.backends.workspace_hidden").held_note(
      '{"answer":"held","ref":"' .. branch .. '","commit":"' .. bad .. '","files":[".env.example"]}\n'
    )
    assert.matches("not updated %(commit " .. bad:sub(1, 12) .. " changes or deletes a file hidden", full)
    assert.are.equal("EXAMPLE=1\n", git("show", branch .. ":.env.example").stdout)
    -- control: the copy's branch fetched as the sync did without the check
    -- deletes the user's file
    local spec = require("flemma_sandbox.api.clone_mode").specs(bufnr)[1]
    local binds = {
      "--ro-bind",
      spec.clone,
      proj,
      "--ro-bind",
      proj .. "/.git/objects",
      proj .. "/.git/flemma-user-objects",
      "--bind",
      proj .. "/.git",
      "/user.git",
    }
    local plain = 'GIT_DIR=/user.git git fetch -q --upload-pack="env GIT_COMMON_DIR=$1/.git git upload-pack" "$1"'
      .. " +refs/heads/master:refs/control/master && echo fetched"
    local box = require("flemma_sandbox.backends.git_box").box(spec.bwrap, binds)
    local fetched = h.run(vim.list_extend(box, { "sh", "-c", plain, "sh", proj }))
    assert.matches("fetched", fetched.stdout, fetched.stderr)
    assert.are.equal("", git("ls-tree", "--name-only", "refs/control/master", "--", ".env.example").stdout)
    assert.are.equal(".env.example\n", git("ls-tree", "--name-only", branch, "--", ".env.example").stdout)
  end)

  it("does not publish a commit whose tree git cannot read (forged to hide a deletion)", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local columns = vim.o.columns
    vim.o.columns = 250
    local notes, restore = n.capture_notify()
    -- a commit whose tree holds a ".git" entry (read-tree refuses it), then
    -- one on it that deletes .env.example
    local r, out = bash(
      bufnr,
      [[b=$(echo x | git hash-object -w --stdin)
t=$( (git ls-tree HEAD; printf '100644 blob %s\t.git\n' "$b") | git mktree)
p=$(git commit-tree -p HEAD -m forged "$t")
t2=$(git ls-tree HEAD | grep -v '\.env\.example$' | git mktree)
c=$(git commit-tree -p "$p" -m gone "$t2")
git update-ref refs/heads/master "$c" && git rev-parse HEAD]]
    )
    assert.are.equal(0, r.exit_code, out)
    assert(project.synced())
    n.flush_notices()
    restore()
    vim.o.columns = columns
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    assert.are_not.equal(0, git("rev-parse", "-q", "--verify", "refs/remotes/sandbox-" .. chat .. "/master").code)
    local said = {}
    for _, note in ipairs(notes) do
      said[#said + 1] = note.msg
    end
    assert.matches("a tree git cannot read: sandbox%-[^\n]*/master", table.concat(said, "\n"))
  end)

  it("keeps a tracked file under a deny_read path tracked and unchanged", function()
    h.sh(
      "cd "
        .. h.shell_quote(proj)
        .. " && mkdir private && echo key > private/k.txt && git add private"
        .. " && git commit -qm private"
    )
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "/tmp" }, deny_read = { proj .. "/private" }, network = false },
      sandboxes = { workspace = "clone" },
    })
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r, out = bash(
      bufnr,
      "git status --porcelain; git ls-files -v private; echo x > y.txt && git add -A && git commit -qm y"
        .. " && git ls-tree -r --name-only HEAD private"
    )
    assert.are.equal(0, r.exit_code, out)
    assert.are.equal("S private/k.txt\nprivate/k.txt", vim.trim(r.stdout))
    assert(project.synced())
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    assert.are.equal("key\n", git("show", "sandbox-" .. chat .. "/master:private/k.txt").stdout)
  end)

  it("publishes the copy's merge of a user's branch that changed it", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r, out = bash(bufnr, "echo two > b.txt && git add -A && git commit -qm work")
    assert.are.equal(0, r.exit_code, out)
    assert(project.synced())
    -- the user changes it on their branch; the next sync brings it to the copy as origin/master
    h.write(proj .. "/.env.example", "EXAMPLE=2\n")
    assert.are.equal(0, git("commit", "-qam", "example 2").code)
    bash(bufnr, "true")
    assert(project.synced())
    r, out = bash(bufnr, "git merge -q --no-edit origin/master && git status --porcelain && git rev-parse HEAD")
    assert.are.equal(0, r.exit_code, out)
    local merge = vim.trim(r.stdout)
    assert(project.synced())
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    assert.are.equal(merge, vim.trim(git("rev-parse", "sandbox-" .. chat .. "/master").stdout))
    assert.are.equal("EXAMPLE=2\n", git("show", "sandbox-" .. chat .. "/master:.env.example").stdout)
  end)

  it("gives the copy the identity of the user's repository (no global config on the host)", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r, out =
      bash(bufnr, "echo two > b.txt && git add -A && git commit -qm work && git log -1 --format='%an <%ae>'")
    assert.are.equal(0, r.exit_code, out)
    assert.matches("Repo User <repo@example%.org>", r.stdout)
  end)

  it("takes it from an includeIf section of the user's global config", function()
    git("config", "--unset", "user.name")
    git("config", "--unset", "user.email")
    h.write(dir .. "/work.inc", "[user]\n\tname = Included User\n\temail = inc@example.org\n")
    h.write(dir .. "/global", '[includeIf "gitdir:' .. proj .. '/"]\n\tpath = ' .. dir .. "/work.inc\n")
    host_git_config(dir .. "/global")
    local name, email = require("flemma_sandbox.backends.workspace_hidden").user_identity(proj)
    assert.are.same({ "Included User", "inc@example.org" }, { name, email })
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r, out = bash(bufnr, "git config -f .git/config user.name; git config -f .git/config user.email")
    assert.are.equal(0, r.exit_code, out)
    assert.are.equal("Included User\ninc@example.org", vim.trim(r.stdout))
  end)

  it("makes the copy without an identity when there is none", function()
    git("config", "--unset", "user.name")
    git("config", "--unset", "user.email")
    local name, email = require("flemma_sandbox.backends.workspace_hidden").user_identity(proj)
    assert.are.same({ "", "" }, { name, email })
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r, out = bash(bufnr, "git config -f .git/config user.name; git status --porcelain; echo made")
    assert.are.equal("made", vim.trim(r.stdout), out)
  end)
end)
