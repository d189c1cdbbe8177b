--- Escape suite: Neovim started in the home folder (`cd ~ && nvim
--- notes.chat`). $CWD is then the home folder, where files that run code
--- later abound; it is left out of rw_paths unless policy.allow_home_rw.
local f = require("escape.fixture")
local h = require("support.helpers")
local sandbox = require("flemma_sandbox")

describe("escape: Neovim started in the home folder", function()
  local w
  setup(function()
    w = f.create()
    f.use_host(w, {
      cwd = function()
        return w.home
      end,
    })
  end)
  teardown(function()
    f.destroy(w)
  end)

  local function q(s)
    return h.shell_quote(s)
  end

  -- files and folders that run code later, none of them on deny_write
  local plants = {
    ".bash_aliases", -- sourced by Debian's .bashrc
    "bin/ls", -- ~/bin is first on PATH through Debian's .profile
    ".config/git/config",
    ".config/fish/config.fish",
    ".local/lib/python3/site-packages/evil.pth",
    ".config/environment.d/evil.conf",
  }
  local function plant_all()
    local words = {}
    for _, rel in ipairs(plants) do
      local path = w.home .. "/" .. rel
      words[#words + 1] = "mkdir -p " .. q(path:match("^(.*)/[^/]+$")) .. "; echo evil > " .. q(path)
    end
    return table.concat(words, "; ")
  end

  it("leaves the host's home folder unchanged: $CWD is skipped with the reason", function()
    f.policy()
    local _, skipped = sandbox.get_policy(nil)
    local reasons = {}
    for _, s in ipairs(skipped) do
      reasons[#reasons + 1] = s.path .. ": " .. s.reason
    end
    assert.matches(
      "%$CWD: " .. w.home:gsub("%p", "%%%0") .. " is the home folder: not writable unless policy.allow_home_rw = true",
      table.concat(reasons, "\n")
    )
    -- the private home is read-only: every plant fails where the command
    -- sees it fail; attack() asserts that nothing changed on the host
    local r = f.attack(w, plant_all() .. "; cat " .. q(w.home .. "/" .. plants[1]))
    assert.are.equal("", r.stdout)
    assert.matches("Read%-only file system", r.stderr)
    for _, rel in ipairs(plants) do
      assert.is_nil(h.read(w.home .. "/" .. rel), rel)
    end
    -- with home_writable = { "~" } they land in the private home, and
    -- still end with the command
    f.policy({ home_writable = { "~" } })
    r = f.attack(w, plant_all() .. "; cat " .. q(w.home .. "/" .. plants[1]))
    assert.are.equal("evil\n", r.stdout)
    for _, rel in ipairs(plants) do
      assert.is_nil(h.read(w.home .. "/" .. rel), rel)
    end
  end)

  it("also when a folder above the home folder is named", function()
    f.policy({ rw_paths = { w.base, "/tmp" } })
    f.attack(w, plant_all())
    for _, rel in ipairs(plants) do
      assert.is_nil(h.read(w.home .. "/" .. rel), rel)
    end
  end)

  it("with policy.allow_home_rw the plants go to the quarantine; control: without their rules they land", function()
    f.policy({ allow_home_rw = true })
    local r = f.attack(w, plant_all(), { keep_host = true })
    assert.are.equal(0, r.code, r.stderr)
    for _, rel in ipairs(plants) do
      assert.is_nil(h.read(w.home .. "/" .. rel), rel)
    end
    local moved = table.concat(f.quarantined(w), "\n")
    for _, rel in ipairs({
      ".bash_aliases",
      "bin",
      ".config/git",
      ".config/fish",
      ".local/lib",
      ".config/environment.d",
    }) do
      assert.truthy(moved:find(w.home .. "/" .. rel, 1, true), rel)
    end
    local rules = { "!~/.bash_aliases", "!~/bin/", "!~/.config/git/", "!~/.config/fish/", "!~/.local/lib/" }
    rules[#rules + 1] = "!~/.config/environment.d/"
    f.policy({ allow_home_rw = true, deny_write = rules })
    r = f.attack(w, plant_all(), { keep_host = true })
    assert.are.equal(0, r.code, r.stderr)
    for _, rel in ipairs(plants) do
      assert.are.equal("evil\n", h.read(w.home .. "/" .. rel), rel)
    end
    h.sh("cd " .. q(w.home) .. " && rm -rf .bash_aliases bin .config/git .config/fish .local/lib .config/environment.d")
  end)
end)

describe("escape: a project under /tmp", function()
  local w, proj
  setup(function()
    w = f.create()
    proj = (h.capture("mktemp -d /tmp/flemma-escape-proj.XXXXXX"):gsub("%s+$", ""))
    proj = require("flemma_sandbox.core").resolve(proj, "/")
    h.sh("mkdir -p " .. h.shell_quote(proj .. "/.git"))
    h.write(proj .. "/.git/config", "[core]\n\tbare = false\n")
    h.write(proj .. "/.env", "API_KEY=" .. f.SECRET .. "\n")
    f.use_host(w, {
      cwd = function()
        return proj
      end,
    })
  end)
  teardown(function()
    f.destroy(w)
    h.sh("rm -rf " .. h.shell_quote(proj))
  end)

  local cmd = function()
    local q = h.shell_quote
    return "cat " .. q(proj .. "/.env") .. "; echo '[core] fsmonitor = evil' >> " .. q(proj .. "/.git/config")
  end

  it("keeps its protected files and its secret scan although /tmp is writable", function()
    f.policy({ rw_paths = { "$CWD", "/tmp" } })
    local r = f.attack(w, cmd())
    assert.is_nil(r.stdout:find(f.SECRET, 1, true))
    assert.are.equal("[core]\n\tbare = false\n", h.read(proj .. "/.git/config"))
  end)

  it("control: without the .git and .env rules the attack works", function()
    f.policy({ rw_paths = { "$CWD", "/tmp" }, deny_write = { "!.git/" }, secret_files = { "!.env" } })
    local r = f.attack(w, cmd(), { keep_host = true })
    assert.truthy(r.stdout:find(f.SECRET, 1, true))
    assert.matches("fsmonitor = evil", h.read(proj .. "/.git/config"))
    h.write(proj .. "/.git/config", "[core]\n\tbare = false\n")
  end)
end)
