-- Clone mode under the real Flemma (FLEMMA_DIR) keeps a tracked file the
-- copy hides (backends/workspace_copies.lua): a chat's bash sees `.env.example`
-- tracked and a clean status, its `git add -A; git commit` keeps the file
-- in the copy and in the synced branch, commits as the repository's user
-- (no global identity on the host), and a commit that deletes it with git
-- plumbing is not published (the control: that commit is in the copy).
local h = require("support.helpers")
local flemma_chat = require("support.flemma_chat")

local execute, result_of = flemma_chat.execute, flemma_chat.result_of

local function synced()
  assert(vim.wait(20000, function()
    return require("flemma_sandbox.api.clone_mode").syncing == 0
  end, 20))
end

describe("clone mode under Flemma keeps hidden files", function()
  local p
  local saved
  flemma_chat.each_project(
    "git init -q . && printf 'EXAMPLE=1\\n' > .env.example && printf 'one\\n' > a.txt && git add -A"
      .. " && git -c user.name=u -c user.email=u@e commit -qm init"
      .. " && git config user.name 'Repo User' && git config user.email repo@example.org",
    function(world)
      p = world
      saved = { vim.env.GIT_CONFIG_GLOBAL, vim.env.GIT_CONFIG_NOSYSTEM }
      vim.env.GIT_CONFIG_GLOBAL, vim.env.GIT_CONFIG_NOSYSTEM = "/dev/null", "1"
    end,
    { settle = synced }
  )

  after_each(function()
    vim.env.GIT_CONFIG_GLOBAL, vim.env.GIT_CONFIG_NOSYSTEM = saved[1], saved[2]
  end)

  local function git(...)
    return h.run(vim.list_extend({ "git", "-C", p.proj }, { ... }))
  end

  it("keeps .env.example through git add -A; git commit, and never publishes its deletion", function()
    flemma_chat.setup_flemma("clone")
    local proj, chat = p.proj, p.dir .. "/chats/c.chat"
    local text, bufnr = execute(chat, "bash", {
      label = "t",
      command = "cd "
        .. proj
        .. " && git status --porcelain && echo status-done && echo b > b.txt && git add -A"
        .. " && git commit -qm work && git log -1 --format=%an && git ls-tree --name-only HEAD",
      timeout = 30,
    })
    assert.matches("\nstatus%-done\nRepo User\n%.env%.example\na%.txt\nb%.txt\n", result_of(text))
    synced()
    local name = require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr).name
    local branch = "refs/remotes/sandbox-" .. name .. "/master"
    assert.are.equal("EXAMPLE=1\n", git("show", branch .. ":.env.example").stdout)
    local good = vim.trim(git("rev-parse", branch).stdout)
    text = execute(chat, "bash", {
      label = "t",
      command = "cd "
        .. proj
        .. " && git update-index --force-remove .env.example && git commit -qm bad"
        .. " && git show --stat --format= HEAD",
      timeout = 30,
    })
    -- control: the copy's branch holds the commit that deletes it
    assert.matches("%.env%.example | 1 %-", result_of(text))
    synced()
    assert.are.equal(good, vim.trim(git("rev-parse", branch).stdout))
    -- the user merges the synced branch: the file is kept
    assert.are.equal(0, git("merge", "-q", "--no-edit", branch).code)
    assert.are.equal("EXAMPLE=1\n", h.read(proj .. "/.env.example"))
    assert.are.equal("b\n", h.read(proj .. "/b.txt"))
  end)
end)
