--- Escape suite: host-side code never follows what a sandboxed command can
--- change. A ".git" symlink planted by one command must not bind its target
--- into the next; a folder swapped for a symlink while the check after a run
--- moves things must not lead the move out of the project; descriptors the
--- caller holds open must not reach the command. Each attack has a control
--- showing that what it abuses is real.
local core = require("flemma_sandbox.core")
local f = require("escape.fixture")
local h = require("support.helpers")
local sandbox = require("flemma_sandbox")

local q = h.shell_quote

--- Starts argv in the background (its output dropped); returns nothing:
--- the command ends by itself when `stop` exists or after `seconds`.
local function start_background(argv, cwd)
  local words = {}
  for i, word in ipairs(argv) do
    words[i] = q(word)
  end
  -- a subshell stays as its parent: the helper stops with its parent
  h.sh("cd " .. q(cwd) .. " && ((" .. table.concat(words, " ") .. "; true) >/dev/null 2>&1 </dev/null &)")
end

--- Waits until path exists (at most 10 s).
local function wait_for(path)
  for _ = 1, 200 do
    if core.file_type(path) then
      return true
    end
    h.sh("sleep 0.05")
  end
  return false
end

describe("escape: host-side races", function()
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

  it("a .git symlink that leads out of the project is never bound into a sandbox", function()
    local planted = w.proj .. "/planted"
    h.sh("mkdir -p " .. q(planted) .. " && ln -s " .. q(w.home .. "/.ssh") .. " " .. q(planted .. "/.git"))
    local key = q(w.home .. "/.ssh/id_rsa")
    local r = f.attack(w, "cat " .. key .. "; ls " .. q(w.home .. "/.ssh"), { keep_host = true })
    assert.is_nil(r.stdout:find(f.SECRET, 1, true), "the key is not readable through a planted .git link")
    assert.matches("planted/%.git is a symlink to [^\n]*, outside the projects: not followed", r.stderr)
    h.sh("rm -rf " .. q(w.proj .. "/planted"))
    -- control: a .git link inside the project is followed and its target
    -- bound (read-only), so the helper does act on what such a link names
    h.sh(
      "mkdir -p "
        .. q(w.proj .. "/inner/realgit")
        .. " && echo original > "
        .. q(w.proj .. "/inner/realgit/config")
        .. " && ln -s realgit "
        .. q(w.proj .. "/inner/.git")
    )
    r = f.attack(w, "echo evil > inner/realgit/config; cat inner/realgit/config", { keep_host = true })
    assert.matches("Read%-only file system", r.stderr)
    assert.are.equal("original\n", h.read(w.proj .. "/inner/realgit/config"))
    h.sh("rm -rf " .. q(w.proj .. "/inner"))
  end)

  it("a .git link planted by a running command never reaches the next 200 commands", function()
    local stop = w.proj .. "/stop-planter"
    local ready = w.proj .. "/planter-ready"
    -- the planter keeps a link to the fake ~/.ssh (and to /) in place while it runs
    local planter = assert(sandbox.wrap_command({
      "bash",
      "-c",
      "mkdir -p p1 && ln -sfn "
        .. q(w.home .. "/.ssh")
        .. " p1/.git && touch planter-ready; "
        .. "for i in $(seq 600); do [ -e stop-planter ] && break; sleep 0.1; done",
    }))
    start_background(planter, w.proj)
    assert.is_true(wait_for(ready), "the planter started")
    local seen = 0
    local argv = assert(sandbox.wrap_command({ "bash", "-c", "cat " .. q(w.home .. "/.ssh/id_rsa") .. " 2>/dev/null" }))
    for _ = 1, 200 do
      local r = h.run(argv, f.ENV, w.proj)
      if r.stdout:find(f.SECRET, 1, true) then
        seen = seen + 1
      end
    end
    -- control: the planted link does lead to the key on the host
    assert.are.equal(f.SECRET .. "\n", h.read(w.proj .. "/p1/.git/id_rsa"))
    h.write(stop, "")
    assert.are.equal("", f.wait_gone("stop-planter"))
    assert.are.equal(0, seen, "runs that read the key through the planted link")
    h.sh("rm -rf " .. q(w.proj .. "/p1") .. " " .. q(stop) .. " " .. q(ready))
  end)

  it("the check after a run moves nothing through a folder swapped for a symlink", function()
    local secret_repo = w.outside .. "/secretrepo"
    h.sh("mkdir -p " .. q(secret_repo .. "/.envrc-dir") .. " && echo mine > " .. q(secret_repo .. "/.envrc"))
    local state = assert(require("flemma_sandbox.base.surroundings").state_dir("quarantine"))
    local check = w.base .. "/swap.check"
    local function run_check(watched)
      -- no "repos": the project's own .git is not known to this check
      local words = { "quarantine", state, "visible", w.proj, "watch", watched, "started", "1" }
      h.write(check, table.concat(words, "\0") .. "\0")
      local recs = h.check_after(check)
      os.remove(check)
      return recs
    end
    -- the command made sub/.envrc, then swapped sub for a link to the
    -- user's folder: the move must not reach through the link
    h.sh("ln -s " .. q(secret_repo) .. " " .. q(w.proj .. "/sub"))
    local moved = run_check(w.proj .. "/sub/.envrc")
    assert.are.equal("mine\n", h.read(secret_repo .. "/.envrc"), "the user's file stays where it is")
    assert.are.same({ { type = "not_followed", run = "this", path = w.proj .. "/sub/.envrc" } }, moved)
    os.remove(w.proj .. "/sub")
    -- control: in a real folder of the project the same name is moved
    h.sh("mkdir " .. q(w.proj .. "/sub") .. " && echo evil > " .. q(w.proj .. "/sub/.envrc"))
    moved = run_check(w.proj .. "/sub/.envrc")
    assert.are.equal(1, #moved)
    assert.are.same({ "moved", w.proj .. "/sub/.envrc" }, { moved[1].type, moved[1].from })
    assert.is_nil(h.read(w.proj .. "/sub/.envrc"))
    h.sh("rm -rf " .. q(w.proj .. "/sub"))
  end)

  it("a command swapping a new .git's folder for a link never gets a folder outside moved (200 runs)", function()
    local secret_repo = w.outside .. "/secretrepo"
    h.sh("mkdir -p " .. q(secret_repo .. "/.git") .. " && echo keep > " .. q(secret_repo .. "/.git/HEAD"))
    local ready = w.proj .. "/swapper-ready"
    local swapper = assert(sandbox.wrap_command({
      "bash",
      "-c",
      -- 40 fresh .git folders (new to every run's check, which moves them
      -- one by one), then the same names links to the user's repository
      "touch swapper-ready; for i in $(seq 100000); do [ -e stop-swapper ] && break; "
        .. "for n in $(seq 40); do rm -rf sw$n.d; mkdir -p sw$n.d/.git; mv sw$n.d sw$n; done; "
        .. "for n in $(seq 40); do mv sw$n sw$n.d; ln -s "
        .. q(secret_repo)
        .. " sw$n; done; for n in $(seq 40); do rm -f sw$n; done; done; rm -rf sw*",
    }))
    start_background(swapper, w.proj)
    assert.is_true(wait_for(ready), "the swapper started")
    local argv = assert(sandbox.wrap_command({ "true" }))
    for _ = 1, 200 do
      h.run(argv, f.ENV, w.proj)
      if not core.file_type(secret_repo .. "/.git") then
        break
      end
    end
    h.write(w.proj .. "/stop-swapper", "")
    assert.are.equal("", f.wait_gone("stop-swapper"))
    assert.are.equal("keep\n", h.read(secret_repo .. "/.git/HEAD"), "the folder outside was not moved")
    for _, from in ipairs(f.quarantined(w)) do
      assert.truthy(from:find(w.proj, 1, true) == 1, from)
    end
    h.sh("rm -rf " .. q(w.proj) .. "/sw* " .. q(w.proj .. "/stop-swapper"))
    os.remove(ready)
  end)

  it("descriptors the caller holds open do not reach the command, nor bwrap's first process", function()
    local held = w.outside .. "/held.log"
    h.write(held, "")
    local function fds_seen(argv)
      local words = {}
      for i, word in ipairs(argv) do
        words[i] = q(word)
      end
      -- fd 9 stands for a log Neovim keeps open (not close-on-exec)
      return h.capture(
        "cd " .. q(w.proj) .. " && exec 9>>" .. q(held) .. " && " .. table.concat(words, " ") .. " 2>&1 </dev/null"
      )
    end
    local probe = "ls -l /proc/self/fd/ | grep -c held.log; ls -l /proc/1/fd/ 2>/dev/null | grep -c held.log; "
      .. "echo written >&9 2>/dev/null && echo wrote"
    local out = fds_seen(assert(sandbox.wrap_command({ "bash", "-c", probe })))
    assert.are.same({ "0", "0" }, { out:match("^(%d+)\n(%d+)\n") })
    assert.is_nil(out:find("wrote", 1, true))
    assert.are.equal("", h.read(held))
    -- control: bwrap alone passes it on, and the command writes the file
    out = fds_seen({ "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "bash", "-c", probe })
    assert.matches("^1\n", out)
    assert.truthy(out:find("wrote", 1, true))
    assert.are.equal("written\n", h.read(held))
  end)
end)
