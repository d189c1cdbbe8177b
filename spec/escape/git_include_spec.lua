--- Escape suite: a file a repository's git config includes ("[include]
--- path = ../shared.gitconfig", a way to share settings in the tree). Git
--- reads its keys as the repository's own (core.fsmonitor,
--- core.hooksPath): in the writable project it would be code git on the
--- host runs.
local f = require("escape.fixture")
local h = require("support.helpers")

describe("escape: a file a git config includes", function()
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

  --- A real repository in a subfolder whose config includes include_line's
  --- path; returns its folder.
  local function repo(include_line)
    local dir = w.proj .. "/inc"
    h.sh("rm -rf " .. q(dir) .. " && mkdir " .. q(dir) .. " && cd " .. q(dir) .. " && git init -q")
    local config = dir .. "/.git/config"
    h.write(config, h.read(config) .. include_line)
    return dir
  end

  --- Whether host git status in dir runs the fsmonitor the plant sets.
  local function host_git_runs_plant(dir)
    local marker = w.outside .. "/inc-ran"
    os.remove(marker)
    h.sh("cd " .. q(dir) .. " && HOME=" .. q(w.outside) .. " GIT_CONFIG_NOSYSTEM=1 git status >/dev/null 2>&1; true")
    local ran = h.read(marker) ~= nil
    os.remove(marker)
    return ran
  end

  local function plant(name)
    return "printf '[core]\\n\\tfsmonitor = \"touch " .. w.outside .. "/inc-ran; false\"\\n' > inc/" .. name
  end

  it("an included file, there or missing, cannot be written", function()
    for _, case in ipairs({
      { line = "[include]\n\tpath = ../shared.gitconfig\n", name = "shared.gitconfig", exists = true },
      { line = '[includeIf "gitdir:' .. w.proj .. '/"]\n\tpath = "../team.inc" ; c\n', name = "team.inc" },
    }) do
      -- control: written on the host, git there runs it
      local dir = repo(case.line)
      h.sh("cd " .. q(w.proj) .. " && bash -c " .. q(plant(case.name)))
      assert.is_true(host_git_runs_plant(dir), case.name)
      dir = repo(case.line)
      if case.exists then
        h.write(dir .. "/" .. case.name, "# shared\n")
      end
      f.attack(w, plant(case.name), { keep_host = true })
      assert.is_false(host_git_runs_plant(dir), case.name)
      h.sh("rm -rf " .. q(dir))
    end
  end)
end)
