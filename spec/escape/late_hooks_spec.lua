--- Escape suite: the hooks folder of a repository made after the policy
--- (the helper finds it right before the run, csrc/exec/before_run.c
--- plan_new_hooks). Binding the folder read-only is not enough: a folder
--- above it, in the writable project, could be renamed away and the hooks
--- folder made again, where host git runs it.
local f = require("escape.fixture")
local h = require("support.helpers")

describe("escape: the hooks folder of a repository made after the policy", function()
  local w
  setup(function()
    w = f.create()
    f.use_host(w)
  end)
  teardown(function()
    f.destroy(w)
  end)
  before_each(function()
    f.policy()
  end)

  local function q(s)
    return h.shell_quote(s)
  end

  --- A repository made in a folder the kept policy knew as empty, with
  --- core.hooksPath (husky's ".husky/_") and that folder made.
  local function late_repo(hooks)
    h.sh("rm -rf " .. q(w.proj .. "/late") .. " && mkdir " .. q(w.proj .. "/late"))
    f.attack(w, "true") -- the policy is resolved (and kept) with late empty
    h.sh("cd " .. q(w.proj .. "/late") .. " && git init -q && mkdir -p " .. q(hooks))
    local config = w.proj .. "/late/.git/config"
    h.write(config, h.read(config) .. "[core]\n\thooksPath = " .. hooks .. "\n")
  end

  --- Whether host git in late runs the pre-commit hook in its hooks folder.
  local function host_commit_runs_hook()
    local marker = w.outside .. "/hook-ran"
    os.remove(marker)
    h.sh(
      "cd "
        .. q(w.proj .. "/late")
        .. " && HOME="
        .. q(w.outside)
        .. " GIT_CONFIG_NOSYSTEM=1 git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x"
        .. " >/dev/null 2>&1; true"
    )
    local ran = h.read(marker) ~= nil
    os.remove(marker)
    return ran
  end

  local function plant(dir)
    return "mkdir -p late/"
      .. dir
      .. " && printf '#!/bin/sh\\ntouch "
      .. w.outside
      .. "/hook-ran\\n' > late/"
      .. dir
      .. "/pre-commit && chmod +x late/"
      .. dir
      .. "/pre-commit"
  end

  it("a folder above the hooks folder cannot be renamed away and made again", function()
    -- control: the plant, where the hooks folder is, makes host git run it
    late_repo(".husky/_")
    h.sh("cd " .. q(w.proj) .. " && bash -c " .. q(plant(".husky/_")))
    assert.is_true(host_commit_runs_hook())
    -- the hooks folder itself is read-only
    late_repo(".husky/_")
    local r = f.attack(w, plant(".husky/_"))
    assert.are_not.equal(0, r.code)
    assert.is_false(host_commit_runs_hook())
    -- the folder above it renamed away, the hooks folder made again
    late_repo(".husky/_")
    f.attack(w, "mv late/.husky late/.husky-old && " .. plant(".husky/_"), { keep_host = true })
    assert.is_false(host_commit_runs_hook())
    h.sh("rm -rf " .. q(w.proj .. "/late"))
  end)

  it("a missing hooks folder: what the command makes there goes to the quarantine", function()
    late_repo(".husky/_")
    h.sh("rm -rf " .. q(w.proj .. "/late/.husky"))
    local r = f.attack(w, plant(".husky/_"), { keep_host = true })
    assert.are.equal(0, r.code, r.stderr) -- control: the command made it
    assert.truthy(table.concat(f.quarantined(w), "\n"):find(w.proj .. "/late/.husky", 1, true))
    assert.is_nil(h.read(w.proj .. "/late/.husky/_/pre-commit"))
    assert.is_false(host_commit_runs_hook())
    h.sh("rm -rf " .. q(w.proj .. "/late"))
  end)

  it("core.hooksPath '.': the work tree itself is the hooks folder, read-only", function()
    late_repo(".")
    local r = f.attack(w, "printf '#!/bin/sh\\ntouch /tmp/x\\n' > late/pre-commit")
    assert.are_not.equal(0, r.code)
    assert.is_nil(h.read(w.proj .. "/late/pre-commit"))
    -- control: in a folder without a repository the same write lands
    h.sh("rm -rf " .. q(w.proj .. "/late") .. " && mkdir " .. q(w.proj .. "/late"))
    f.attack(w, "printf x > late/pre-commit", { keep_host = true })
    assert.are.equal("x", h.read(w.proj .. "/late/pre-commit"))
    h.sh("rm -rf " .. q(w.proj .. "/late"))
  end)

  it("a missing hooks folder: a symlink put in place of the folder above it leads nowhere git runs", function()
    -- control: on the host (no sandbox) the symlink makes git run the plant
    -- (the symlink's target in the project: the sandbox's /tmp is its own)
    local swap = "rm -rf late/tools && " .. plant("elsewhere/hooks") .. " && ln -s elsewhere late/tools"
    late_repo("tools/hooks")
    h.sh("rmdir " .. q(w.proj .. "/late/tools/hooks"))
    h.sh("cd " .. q(w.proj) .. " && bash -c " .. q(swap))
    assert.is_true(host_commit_runs_hook())
    -- in the sandbox
    late_repo("tools/hooks")
    h.sh("rmdir " .. q(w.proj .. "/late/tools/hooks"))
    f.attack(w, swap, { keep_host = true })
    assert.is_false(host_commit_runs_hook())
    h.sh("rm -rf " .. q(w.proj .. "/late"))
  end)

  it("a hooks folder in a folder shown read-only: nothing above it becomes writable", function()
    -- the user's own core.hooksPath, deep in a home_allow entry
    local shown = w.home .. "/.config/flemma-late"
    h.sh("mkdir -p " .. q(shown .. "/git/hooks"))
    f.policy({ home_allow = { "~/.config/flemma-late" } })
    local user_config = w.home .. "/.gitconfig"
    h.write(user_config, "[core]\n\thooksPath = " .. shown .. "/git/hooks\n")
    h.sh("rm -rf " .. q(w.proj .. "/late") .. " && mkdir " .. q(w.proj .. "/late"))
    f.attack(w, "true")
    h.sh("cd " .. q(w.proj .. "/late") .. " && git init -q")
    -- control: the shown folder is there in the sandbox, and read-only
    local r = f.attack(w, "ls " .. q(shown) .. " && touch " .. q(shown .. "/x"), { keep_host = true })
    assert.matches("git", r.stdout)
    assert.matches("Read%-only file system", r.stderr)
    r = f.attack(w, "touch " .. q(shown .. "/git/config"), { keep_host = true })
    os.remove(user_config)
    assert.matches("Read%-only file system", r.stderr)
    assert.is_nil(h.read(shown .. "/git/config"))
    h.sh("rm -rf " .. q(w.proj .. "/late") .. " " .. q(shown))
  end)

  it("a repository the policy knew: a symlink in place of the folder above its missing hooks folder", function()
    local swap = "rm -rf late/tools && " .. plant("elsewhere/hooks") .. " && ln -s elsewhere late/tools"
    local function known_repo()
      h.sh("rm -rf " .. q(w.proj .. "/late") .. " && mkdir " .. q(w.proj .. "/late"))
      h.sh("cd " .. q(w.proj .. "/late") .. " && git init -q && mkdir tools")
      local config = w.proj .. "/late/.git/config"
      h.write(config, h.read(config) .. "[core]\n\thooksPath = tools/hooks\n")
      f.policy() -- resolved again, with the repository in it
    end
    -- control: on the host the symlink makes git run the plant
    known_repo()
    h.sh("cd " .. q(w.proj) .. " && bash -c " .. q(swap))
    assert.is_true(host_commit_runs_hook())
    known_repo()
    f.attack(w, swap, { keep_host = true })
    assert.is_false(host_commit_runs_hook())
    h.sh("rm -rf " .. q(w.proj .. "/late"))
  end)
end)
