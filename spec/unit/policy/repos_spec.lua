--- policy/repos.lua: every ".git" in the projects is found by rule (at any
--- depth, a ".git" file's gitdir and common dir, a link's target) and
--- protected with core.hooksPath, read from the repository's config or the
--- user's as git reads it.
local repos = require("flemma_sandbox.policy.repos")
local surroundings = require("flemma_sandbox.base.surroundings")
local h = require("support.helpers")

describe("policy.repos", function()
  local dir, home, project

  local function sh(cmd)
    local status = os.execute(cmd)
    -- 0 from LuaJIT, true from a LuaJIT built with Lua 5.2's os.execute
    assert(status == 0 or status == true, cmd)
  end

  --- The protect rules of a find, by path.
  local function by_path(found)
    local out = {}
    for _, r in ipairs(found.protect) do
      out[r.path] = r.rule
    end
    return out
  end

  before_each(function()
    dir = h.tmpdir()
    home = dir .. "/home"
    project = dir .. "/project"
    sh("mkdir -p " .. home .. " " .. project .. "/.git " .. dir .. "/state")
    surroundings.use({
      getenv = function(name)
        return ({ HOME = home, XDG_STATE_HOME = dir .. "/state" })[name]
      end,
    })
  end)

  after_each(function()
    surroundings.use(nil)
    h.rmdir(dir)
  end)

  it("protects every .git folder at any depth, naming its work tree", function()
    sh("mkdir -p " .. project .. "/vendor/lib/.git " .. project .. "/a/b/c/.git")
    local found = repos.find({ project })
    assert.are.equal(3, #found.dot_gits)
    local rules = by_path(found)
    assert.are.equal("a git folder of " .. project, rules[project .. "/.git"])
    assert.are.equal("a git folder of " .. project .. "/vendor/lib", rules[project .. "/vendor/lib/.git"])
    assert.are.equal("a git folder of " .. project .. "/a/b/c", rules[project .. "/a/b/c/.git"])
    assert.are.same({}, found.truncated)
  end)

  it("protects the gitdir and common dir a .git file points to", function()
    local gitdir = dir .. "/main/.git/worktrees/wt"
    sh("mkdir -p " .. gitdir .. " " .. project .. "/wt")
    h.write(project .. "/wt/.git", "gitdir: " .. gitdir .. "\n")
    h.write(gitdir .. "/commondir", "../..\n")
    local rules = by_path(repos.find({ project }))
    assert.are.equal("a git folder of " .. project .. "/wt", rules[gitdir])
    assert.are.equal("a git folder of " .. project .. "/wt (common dir)", rules[dir .. "/main/.git"])
  end)

  it("protects nothing more for a .git file naming no folder", function()
    sh("mkdir -p " .. project .. "/wt")
    h.write(project .. "/wt/.git", "gitdir: " .. dir .. "/missing\n")
    local found = repos.find({ project })
    assert.are.equal(2, #found.dot_gits)
    assert.is_nil(by_path(found)[dir .. "/missing"])
  end)

  it("protects the folder a .git link points to", function()
    sh(
      "mkdir -p "
        .. dir
        .. "/real-git "
        .. project
        .. "/linked && ln -s "
        .. dir
        .. "/real-git "
        .. project
        .. "/linked/.git"
    )
    assert.are.equal("a git folder of " .. project .. "/linked", by_path(repos.find({ project }))[dir .. "/real-git"])
  end)

  it("protects core.hooksPath of the repository's config, the last one winning, quoted or not", function()
    h.write(
      project .. "/.git/config",
      '[core]\n\tbare = false\n\thooksPath = "/first"\n'
        .. "[alias]\n\thooksPath = /not-core\n[core]\n  HooksPath = ../hooks\n"
    )
    local rules = by_path(repos.find({ project }))
    assert.are.equal("core.hooksPath of " .. project, rules[dir .. "/hooks"])
    assert.is_nil(rules["/first"])
    assert.is_nil(rules["/not-core"])
  end)

  it("protects the user's core.hooksPath for every repository, ~ read as HOME", function()
    h.write(home .. "/.gitconfig", "[core]\nhooksPath = ~/githooks\n")
    local found = repos.find({ project })
    assert.are.equal("core.hooksPath of " .. project, by_path(found)[home .. "/githooks"])
    assert.are.same({ home .. "/.config/git/config", home .. "/.gitconfig" }, found.configs)
  end)

  it("takes ~/.gitconfig's core.hooksPath over $XDG_CONFIG_HOME/git/config's, as git does", function()
    h.write(home .. "/.gitconfig", "[core]\nhooksPath = from-home\n")
    sh("mkdir -p " .. home .. "/.config/git")
    h.write(home .. "/.config/git/config", "[core]\nhooksPath = from-xdg\n")
    local p = io.popen("HOME=" .. h.shell_quote(home) .. " XDG_CONFIG_HOME= git config --global --get core.hooksPath")
    local want = p:read("*a"):gsub("\n$", "")
    p:close()
    assert.are.equal("from-home", want) -- git, the oracle
    assert.are.equal(want, repos.find({ project }).user_hooks)
    assert.are.equal("core.hooksPath of " .. project, by_path(repos.find({ project }))[project .. "/from-home"])
  end)

  it("reads core.hooksPath the way git does (git config --get is the oracle)", function()
    local core = require("flemma_sandbox.core")
    local texts = {
      "[core]\n\thooksPath = hooks\n",
      '[core] hooksPath = "a b" ; a comment\n', -- a variable on the header's line
      "[Core]\nHOOKSPATH=x\\\ny\n", -- a continued line
      '[core "x"]\nhooksPath = not-core\n',
      "[core.x]\nhooksPath = not-core\n[core]\n  hooksPath =  spaced  out  # c\n",
      "[core]\nfoo = a\\\nhooksPath = part-of-foo\n",
      '[core]\nhooksPath = "q\\"t\\\\" \n',
      '[core]\nhooksPath = a" b "c\n',
      "[core]\nhooksPath = first\n[alias]\nhooksPath = alias\n[core]\nhooksPath = last\n",
      "[alias]\n\tx = !echo [core] hooksPath = no\n",
      "\239\187\191[core]\n\thooksPath = after-a-bom\n", -- git skips a UTF-8 BOM
      "[core]\n\thooksPath = \fform-feed\n", -- '\f' and '\v' are no blanks to git
      "[core]\n\thooksPath = \vtab\v\n",
      "[core]\n\thooksPath = cr\\\r\nlf\n", -- a continued line ending "\r\n"
    }
    for _, text in ipairs(texts) do
      local file = dir .. "/gitconfig"
      h.write(file, text)
      local p = io.popen("git config -f " .. h.shell_quote(file) .. " --get core.hooksPath")
      local want = p:read("*a"):gsub("\n$", "")
      p:close()
      assert.are.equal(want ~= "" and want or nil, core.git_hooks_path(text), text)
    end
  end)

  it("keeps the user's core.hooksPath for the helper (a repository made after the plan)", function()
    h.write(home .. "/.gitconfig", "[core]\nhooksPath = ~/githooks\n")
    assert.are.equal(home .. "/githooks", repos.find({ project }).user_hooks)
    h.write(home .. "/.gitconfig", "[core]\nhooksPath = .husky\n")
    assert.are.equal(".husky", repos.find({ project }).user_hooks)
  end)

  it("protects the files a git config includes, each read once", function()
    h.write(project .. "/.git/config", "[include]\n\tpath = ../shared.inc\n")
    -- a file that includes itself many times (left by a command before the
    -- include was set) is read once, not 50^10 times
    local loop = string.rep("[include]\n\tpath = shared.inc\n", 50)
    h.write(project .. "/shared.inc", loop .. '[includeIf "gitdir:/elsewhere/"]\n\tpath = "~/team.inc" ; c\n')
    local rules = by_path(repos.find({ project }))
    assert.are.equal("a file the git config of " .. project .. " includes", rules[project .. "/shared.inc"])
    assert.are.equal("a file the git config of " .. project .. " includes", rules[home .. "/team.inc"])
  end)

  it("reads config.worktree over config", function()
    h.write(project .. "/.git/config", "[core]\nhooksPath = /from-config\n")
    h.write(project .. "/.git/config.worktree", "[core]\nhooksPath = /from-worktree\n")
    local rules = by_path(repos.find({ project }))
    assert.are.equal("core.hooksPath of " .. project, rules["/from-worktree"])
    assert.is_nil(rules["/from-config"])
  end)

  it("stops at REPO_LIMIT and names the project as truncated", function()
    local limit = repos.REPO_LIMIT
    repos.REPO_LIMIT = 2
    sh("mkdir -p " .. project .. "/x/.git " .. project .. "/y/.git " .. project .. "/z/.git")
    local ok, found = pcall(repos.find, { project })
    repos.REPO_LIMIT = limit
    assert.is_true(ok, found)
    assert.are.same({ project }, found.truncated)
    assert.is_truthy(#found.dot_gits <= 2)
  end)

  it("finds nothing in a project without git", function()
    sh("rm -rf " .. project .. "/.git && mkdir -p " .. project .. "/src")
    local found = repos.find({ project })
    assert.are.same({}, found.dot_gits)
    assert.are.same({}, found.protect)
  end)

  describe("in_git_dir", function()
    it("is true for a path through a .git of a project, existing or not", function()
      assert.is_true(repos.in_git_dir("/p/.git", { "/p" }))
      assert.is_true(repos.in_git_dir("/p/.git/hooks/x", { "/p" }))
      assert.is_true(repos.in_git_dir("/p/sub/.git/config", { "/q", "/p" }))
    end)

    it("is false for a name that only starts with .git, and outside the projects", function()
      assert.is_false(repos.in_git_dir("/p/.github/x", { "/p" }))
      assert.is_false(repos.in_git_dir("/p/.gitignore", { "/p" }))
      assert.is_false(repos.in_git_dir("/other/.git/x", { "/p" }))
      assert.is_false(repos.in_git_dir("/p", { "/p" }))
      assert.is_false(repos.in_git_dir("/p/.git", {}))
    end)
  end)
end)
