--- flemma-sandbox run in clone mode keeps a tracked file the copy hides
--- (backends/workspace_copies.lua): `.env.example` stays tracked, the copy
--- commits with the repository's identity, and a commit that deletes it
--- is not published, which the run says on stderr (the control: the
--- copy's branch holds that commit).
local cli = require("support.cli")
local h = require("support.helpers")

describe("flemma-sandbox run in clone mode", function()
  local w
  cli.each_world(function(world)
    w = world
    h.sh(
      "cd "
        .. h.shell_quote(w.proj)
        .. " && printf 'EXAMPLE=1\\n' > .env.example && git add .env.example"
        .. " && git -c user.email=t@t -c user.name=t commit -qm example"
        .. " && git config user.name 'Repo User' && git config user.email repo@example.org"
    )
  end)

  local function git(...)
    return h.run(vim.list_extend({ "git", "-C", w.proj }, { ... }))
  end

  it("keeps .env.example tracked, commits as the repository's user, and never publishes its deletion", function()
    local env = { GIT_CONFIG_GLOBAL = "/dev/null", GIT_CONFIG_NOSYSTEM = "1" }
    local r = cli.run(w, {
      "run",
      "keep",
      "--",
      "sh",
      "-c",
      "git status --porcelain; echo b > b.txt && git add -A && git commit -qm work && git log -1 --format=%an",
    }, { env = env })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("Repo User\n", r.stdout)
    assert.are.equal("EXAMPLE=1\n", git("show", "sandbox-keep/master:.env.example").stdout)
    r = cli.run(w, {
      "run",
      "keep",
      "--",
      "sh",
      "-c",
      "git update-index --force-remove .env.example && git commit -qm bad && git show --stat --format= HEAD",
    }, { env = env })
    assert.are.equal(0, r.code, r.stderr)
    -- control: the copy's branch holds the commit that deletes it
    assert.matches("%.env%.example | 1 %-", r.stdout)
    assert.matches("%.env%.example: sandbox%-keep/m", r.stderr)
    assert.are.equal("EXAMPLE=1\n", git("show", "sandbox-keep/master:.env.example").stdout)
    assert.are.equal("work\n", git("log", "-1", "--format=%s", "sandbox-keep/master").stdout)
  end)
end)
