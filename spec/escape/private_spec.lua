--- Escape suite: what the private home, /tmp and /run take out of reach,
--- whatever its name and however new: secrets no deny list names, sockets
--- bound while the command runs (a Neovim, a tmux server, a relative
--- name), credentials in the environment; and read's check racing a
--- symlink swap. Each attack has a control showing it works without the
--- protection.
local core = require("flemma_sandbox.core")
local f = require("escape.fixture")
local files = require("flemma_sandbox.tools.files")
local h = require("support.helpers")
local sandbox = require("flemma_sandbox")

local q = h.shell_quote

--- Secrets under ~ that deny_read does not name.
local UNLISTED = {
  ".config/gh/hosts.yml",
  ".config/github-copilot/apps.json",
  ".config/git/credentials",
  ".pgpass",
  ".npmrc",
  ".pypirc",
  ".cargo/credentials.toml",
  ".vault-token",
  ".bash_history",
  ".local/state/nvim/shada/main.shada",
}

describe("escape: the private home folder", function()
  local w
  setup(function()
    w = f.create()
    for _, rel in ipairs(UNLISTED) do
      h.sh("mkdir -p " .. q((w.home .. "/" .. rel):match("^(.*)/[^/]+$")))
      h.write(w.home .. "/" .. rel, f.SECRET .. "\n")
    end
    h.sh("mkdir -p " .. q(w.proj .. "/apps/web"))
    h.write(w.proj .. "/apps/web/.env", "KEY=" .. f.SECRET .. "\n")
    h.write(w.proj .. "/.envrc", "export KEY=" .. f.SECRET .. "\n")
    f.use_host(w)
  end)
  teardown(function()
    f.destroy(w)
  end)
  before_each(function()
    f.policy()
  end)

  local function cat_all()
    local words = {}
    for _, rel in ipairs(UNLISTED) do
      words[#words + 1] = "cat " .. q(w.home .. "/" .. rel)
    end
    return table.concat(words, "; ")
  end

  it("hides every unlisted secret under ~ from commands and from read", function()
    local r = f.attack(w, cat_all() .. "; ls -A ~")
    assert.is_nil(r.stdout:find(f.SECRET, 1, true))
    assert.is_nil(r.stdout:find(".bash_history", 1, true))
    for _, rel in ipairs(UNLISTED) do
      local ok, why = sandbox.is_path_readable(w.home .. "/" .. rel)
      assert.is_false(ok, rel)
      assert.matches("private home", why)
    end
  end)

  it("the control: with the whole home shown (home_allow ~) each one is readable", function()
    f.policy({ home_allow = { "~" } })
    local r = f.attack(w, cat_all())
    local n = select(2, r.stdout:gsub(f.SECRET:gsub("%p", "%%%0"), ""))
    assert.are.equal(#UNLISTED, n)
  end)

  it("hides a project .env three levels down and .envrc, also one made after the policy", function()
    local argv = assert(sandbox.wrap_command({ "bash", "-c", "cat apps/web/.env .envrc apps/web/late/.env" }))
    -- made after wrap_command: the helper scans right before bwrap starts
    h.sh("mkdir -p " .. q(w.proj .. "/apps/web/late"))
    h.write(w.proj .. "/apps/web/late/.env", "KEY=" .. f.SECRET .. "\n")
    local r = h.run(argv, nil, w.proj)
    h.sh("rm -rf " .. q(w.proj .. "/apps/web/late"))
    assert.is_nil(r.stdout:find(f.SECRET, 1, true))
    assert.matches("Permission denied", r.stderr)
    for _, rel in ipairs({ "apps/web/.env", ".envrc" }) do
      local ok, why = sandbox.is_path_readable(w.proj .. "/" .. rel)
      assert.is_false(ok, rel)
      assert.matches("secret_files", why)
    end
  end)

  it("the control: without those patterns the same files are read", function()
    f.policy({ secret_files = { "!.env", "!.envrc" } })
    local r = f.attack(w, "cat apps/web/.env .envrc")
    local n = select(2, r.stdout:gsub(f.SECRET:gsub("%p", "%%%0"), ""))
    assert.are.equal(2, n)
  end)

  it("shows home_allow entries read-only, and the project writable", function()
    h.write(w.home .. "/.gitconfig", "[user]\n\tname = me\n")
    local out = q(w.work .. "/out")
    local r = f.attack(w, "cat ~/.gitconfig; echo x >> ~/.gitconfig; echo written > " .. out .. " && cat " .. out)
    os.remove(w.home .. "/.gitconfig")
    assert.matches("name = me", r.stdout)
    assert.matches("Read%-only file system", r.stderr)
    assert.matches("written", r.stdout)
  end)
end)

describe("escape: the private /tmp and /run, sockets made during a run", function()
  local w, tmp
  setup(function()
    w = f.create()
    f.use_host(w)
    tmp = (h.capture("mktemp -d /tmp/flemma-escape-late.XXXXXX"):gsub("%s+$", ""))
    h.sh("chmod 755 " .. q(tmp))
  end)
  teardown(function()
    f.destroy(w)
    h.sh("rm -rf " .. q(tmp))
  end)
  before_each(function()
    f.policy()
    h.sh("rm -f " .. q(w.work) .. "/started " .. q(w.work) .. "/ready " .. q(tmp) .. "/result*")
  end)

  --- Starts `start` on the host once the sandboxed command says it has
  --- started; `sock` is ready when it exists. The sandboxed command waits
  --- for that, then connects.
  local function during_run(start, sock)
    local started, ready = w.work .. "/started", w.work .. "/ready"
    h.sh(
      "( for i in $(seq 400); do [ -e "
        .. q(started)
        .. " ] && break; sleep 0.05; done; "
        .. start
        .. " & for i in $(seq 400); do [ -S "
        .. q(sock)
        .. " ] && break; sleep 0.05; done; touch "
        .. q(ready)
        .. " ) >/dev/null 2>&1 &"
    )
    return "touch "
      .. q(started)
      .. "; for i in $(seq 400); do [ -e "
      .. q(ready)
      .. " ] && break; sleep 0.05; done; "
      .. f.script("connect-unix", "path", sock)
  end

  local function listener(dir, name)
    -- not in w.work, which attack() empties when the command ends: a
    -- listener that accepted may report before that
    local result = tmp .. "/result"
    return "luajit spec/escape/listen_later.lua " .. q(dir) .. " " .. q(name) .. " " .. q(result) .. " 10", result
  end

  local function accepted(result)
    h.write(result .. ".stop", "")
    for _ = 1, 200 do
      local got = h.read(result)
      if got then
        return got == "accepted"
      end
      h.sh("sleep 0.05")
    end
    error("the listener did not report")
  end

  it("cannot reach a socket bound in /tmp after the command started", function()
    local start, result = listener(tmp, "late.sock")
    local r = f.attack(w, during_run(start, tmp .. "/late.sock"))
    assert.matches("^ERR", r.stdout)
    assert.is_false(accepted(result))
  end)

  it("nor one bound with a relative name (listed without its folder)", function()
    local start, result = listener(tmp, "rel.sock")
    local r = f.attack(w, during_run(start, tmp .. "/rel.sock"))
    assert.matches("^ERR", r.stdout)
    assert.is_false(accepted(result))
  end)

  it("the control: the same late socket, let through by allow_sockets, is reached", function()
    -- allow_sockets binds what exists when the command starts: the folder
    f.policy({ allow_sockets = { tmp } })
    local start, result = listener(tmp, "late.sock")
    local r = f.attack(w, during_run(start, tmp .. "/late.sock"))
    assert.are.equal("OK\n", r.stdout)
    assert.is_true(accepted(result))
  end)

  it("cannot reach a Neovim started during the run (its RPC socket in /tmp)", function()
    local sock = tmp .. "/nvim.sock"
    local start = "nvim --headless --clean --listen "
      .. q(sock)
      .. " -c 'call timer_start(15000, {-> execute(\"qa!\")})'"
    local r = f.attack(w, during_run(start, sock))
    assert.matches("^ERR", r.stdout)
    f.policy({ allow_sockets = { tmp } }) -- control: the live server, let through
    local reached = f.attack(w, f.script("connect-unix", "path", sock)).stdout
    h.sh("pkill -f " .. q("--listen " .. sock) .. " 2>/dev/null; true")
    assert.are.equal("OK\n", reached)
  end)

  it("cannot reach a tmux server started during the run", function()
    if h.capture("command -v tmux") == "" then
      return pending("tmux is not installed")
    end
    local sock = tmp .. "/tmux-default"
    local r = f.attack(w, during_run("tmux -S " .. q(sock) .. " new-session -d 'sleep 60'", sock))
    assert.matches("^ERR", r.stdout)
    f.policy({ allow_sockets = { tmp } }) -- control: the live server, let through
    local reached = f.attack(w, f.script("connect-unix", "path", sock)).stdout
    h.sh("tmux -S " .. q(sock) .. " kill-server 2>/dev/null; true")
    assert.are.equal("OK\n", reached)
  end)

  it("sees an empty /run but for what the system needs", function()
    local r = f.attack(w, "ls -A /run; ls /run/user 2>&1")
    assert.is_nil(r.stdout:find("user\n", 1, true), r.stdout)
    local resolv = core.resolve("/etc/resolv.conf", "/")
    if resolv and core.is_within(resolv, "/run") then
      assert.are.equal(h.read(resolv), f.attack(w, "cat /etc/resolv.conf").stdout)
    end
  end)
end)

describe("escape: credentials in the environment", function()
  local w
  local VALUES = {
    DATABASE_URL = "postgres://app:" .. f.SECRET .. "@db.internal/app",
    REDIS_URL = "redis://:" .. f.SECRET .. "@127.0.0.1:6379/0",
    MYSQL_PWD = f.SECRET,
    DB_PASS = f.SECRET,
    GITHUB_PAT = f.SECRET,
    SENTRY_DSN = "https://" .. f.SECRET .. "@o1.ingest.sentry.io/1",
  }
  setup(function()
    w = f.create()
    f.use_host(w, {
      environ = function()
        local all = { PATH = os.getenv("PATH") }
        for k, v in pairs(VALUES) do
          all[k] = v
        end
        return all
      end,
      getenv = function(name)
        if name == "HOME" then
          return w.home
        end
        return VALUES[name] or (not name:match("^XDG_") and os.getenv(name) or nil)
      end,
    })
  end)
  teardown(function()
    f.destroy(w)
  end)

  it("lets none through an env_allow pattern", function()
    f.policy({ env_allow = { "DATABASE*", "REDIS*", "MYSQL*", "DB_*", "GITHUB*", "SENTRY*" } })
    local r = f.attack(w, "env")
    assert.is_nil(r.stdout:find(f.SECRET, 1, true), r.stdout)
  end)

  it("the control: named exactly, each one passes", function()
    local names = {}
    for k in pairs(VALUES) do
      names[#names + 1] = k
    end
    f.policy({ env_allow = names })
    local r = f.attack(w, "env")
    local n = select(2, r.stdout:gsub(f.SECRET:gsub("%p", "%%%0"), ""))
    assert.are.equal(6, n)
  end)
end)

describe("escape: read against a symlink swap", function()
  local w
  setup(function()
    w = f.create()
    f.use_host(w)
  end)
  teardown(function()
    f.destroy(w)
  end)

  --- read's run() from the host side, as the chat runs it.
  local function read_file(path, over)
    local cfg = require("flemma_sandbox.config").resolve(nil)
    local got
    local ctx = { cwd = w.proj, config = cfg, config_opts = over }
    files.read.run({ path = path }, ctx, function(result)
      got = result
    end)
    return got
  end

  --- Swaps w.proj/box between a real folder holding "id_rsa" and a symlink
  --- to ~/.ssh, in a loop on the host, until `stop` exists.
  local function swapper()
    local box, stop = w.proj .. "/box", w.work .. "/stop-swap"
    h.sh("rm -rf " .. q(box) .. " " .. q(stop) .. " " .. q(box .. ".real") .. " " .. q(box .. ".link"))
    h.sh("mkdir -p " .. q(box .. ".real") .. " && echo harmless > " .. q(box .. ".real/id_rsa"))
    h.sh("ln -s " .. q(w.home .. "/.ssh") .. " " .. q(box .. ".link"))
    h.sh(
      "( n=0; while [ ! -e "
        .. q(stop)
        .. " ]; do ln -sfn "
        .. q(box .. ".real")
        .. " "
        .. q(box)
        .. "; ln -sfn "
        .. q(w.home .. "/.ssh")
        .. " "
        .. q(box)
        .. "; n=$((n+2)); [ $((n % 100)) -eq 0 ] && echo $n > "
        .. q(stop .. ".progress")
        .. "; done; echo $n > "
        .. q(stop .. ".count")
        .. " ) >/dev/null 2>&1 &"
    )
    local function swaps_so_far()
      return tonumber(h.read(stop .. ".progress") or "0") or 0
    end
    return function()
      h.write(stop, "")
      for _ = 1, 100 do
        local n = h.read(stop .. ".count")
        if n then
          return tonumber(n)
        end
        h.sh("sleep 0.05")
      end
    end,
      swaps_so_far
  end

  it("never returns ~/.ssh/id_rsa in 1000 reads racing 1000+ swaps", function()
    -- the name alone is a secret file's (secret_files): taken out, so that
    -- only the race decides
    f.policy({ secret_files = { "!id_rsa!(*.pub)" } })
    local stop, swaps_so_far = swapper()
    local leaked, harmless, reads = 0, 0, 0
    -- reads go on until the swapper has swapped 1000 times (reads are
    -- faster than swaps, each two `ln` processes); bounded all the same
    while reads < 1000 or (swaps_so_far() < 1000 and reads < 500000) do
      reads = reads + 1
      local r = read_file("box/id_rsa")
      if r.content and r.content:find(f.SECRET, 1, true) then
        leaked = leaked + 1
      elseif r.content == "harmless" then
        harmless = harmless + 1
      end
    end
    local swaps = stop()
    assert.are.equal(0, leaked)
    assert.is_true(harmless > 0, "some reads landed on the harmless file")
    assert.is_true((swaps or 0) >= 1000, "swaps: " .. tostring(swaps))
  end)

  it("the control: a read that checks the name and then opens it again leaks", function()
    f.policy({ secret_files = { "!id_rsa!(*.pub)" } })
    local stop, swaps_so_far = swapper()
    local leaked, reads = 0, 0
    while reads < 1000 or (leaked == 0 and swaps_so_far() < 1000 and reads < 500000) do
      reads = reads + 1
      local real = require("flemma_sandbox.policy").real_path("box/id_rsa", w.proj)
      if real and sandbox.is_path_readable(real) then
        local fh = io.open(w.proj .. "/box/id_rsa", "rb")
        local data = fh and fh:read("*a") or ""
        if fh then
          fh:close()
        end
        leaked = leaked + (data:find(f.SECRET, 1, true) and 1 or 0)
      end
    end
    stop()
    assert.is_true(leaked > 0, "the check-then-open race never hit in 1000 tries")
  end)
end)
