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

  it("leaves the home folder read-only: $CWD is skipped with the reason", function()
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
    local r = f.attack(w, plant_all())
    assert.are_not.equal(0, r.code)
    assert.matches("Read%-only file system", r.stderr)
  end)

  it("also when a folder above the home folder is named", function()
    f.policy({ rw_paths = { w.base, "/tmp" } })
    local r = f.attack(w, plant_all())
    assert.are_not.equal(0, r.code)
  end)

  it("control: with policy.allow_home_rw the same plants land", function()
    f.policy({ allow_home_rw = true })
    local r = f.attack(w, plant_all(), { keep_host = true })
    assert.are.equal(0, r.code, r.stderr)
    for _, rel in ipairs(plants) do
      assert.are.equal("evil\n", h.read(w.home .. "/" .. rel), rel)
    end
    h.sh(
      "cd "
        .. q(w.home)
        .. " && rm -rf .bash_aliases bin .config/git .config/fish .local/lib .config/environment.d"
    )
  end)
end)
