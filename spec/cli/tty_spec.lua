--- The user's terminal and flemma-sandbox run / diff, in a real terminal
--- (tmux): the terminal never enters the sandbox, also when only stdin is
--- one (`run NAME -- cmd | cat`), so what a command leaves running has no
--- descriptor of it and cannot read what the user types later (control:
--- the same command given the terminal itself, under bwrap on the host);
--- what a command shows loses OSC 52 and terminal queries unless
--- --raw-terminal (control), also split across writes; diff shows a
--- copied file's controls escaped (control: the same bytes into a pipe).
local cli = require("support.cli")
local h = require("support.helpers")
local tmux = require("support.tmux")

--- Starts `line` (a shell line) in a terminal once its bytes are being
--- captured (tmux pipe-pane): returns the terminal and the capture file.
---@param w support.CliWorld
---@param line string
---@return support.Tmux t, string capture
local function start_captured(w, line)
  local t = tmux.new("tty")
  local go, capture = w.base .. "/go", w.base .. "/capture"
  local wait = "while [ ! -e " .. h.shell_quote(go) .. " ]; do sleep 0.05; done; "
  t:start("sh -c " .. h.shell_quote(wait .. line), 100, 30)
  vim.fn.system({ "tmux", "pipe-pane", "-o", "-t", t.name, "cat >> " .. h.shell_quote(capture) })
  vim.loop.sleep(200)
  h.write(go, "")
  return t, capture
end

--- The terminal device (rdev) of the terminal t.
---@param t support.Tmux
---@return integer
local function pane_rdev(t)
  local tty = vim.fn.system({ "tmux", "list-panes", "-t", t.name, "-F", "#{pane_tty}" }):gsub("%s+$", "")
  return assert(vim.loop.fs_stat(tty), "no pane tty " .. tty).rdev
end

--- The descriptors of pid that are the terminal device rdev.
---@param pid string
---@param rdev integer
---@return string[]
local function fds_on(pid, rdev)
  local found = {}
  for _, fd in ipairs(vim.fn.readdir("/proc/" .. pid .. "/fd")) do
    local st = vim.loop.fs_stat("/proc/" .. pid .. "/fd/" .. fd)
    if st and st.type == "char" and st.rdev == rdev then
      found[#found + 1] = fd
    end
  end
  return found
end

--- A command that leaves two processes running with the command's stdin:
--- `sleep MARKER` (to look at) and a reader appending each line to got;
--- it waits until both run, then says so.
---@param marker string
---@param got string
---@return string
local function leave_behind(marker, got)
  local reader = 'while read -r l; do echo "$l" >> ' .. got .. "; done"
  return "exec 3<&0; setsid sh -c 'exec "
    .. marker
    .. "' <&3 >/dev/null 2>&1 & setsid sh -c "
    .. h.shell_quote(reader)
    .. " <&3 >/dev/null 2>&1 & while ! pgrep -xf '"
    .. marker:gsub("%.", "[.]")
    .. "' >/dev/null; do sleep 0.01; done; echo LEFT-BEHIND"
end

--- Runs `cmd | cat` in a terminal (stdin the terminal, stdout a pipe):
--- cmd leaves its processes; then the shell sleeps 2 s and reads a line.
--- A line is typed while it sleeps. Returns the screen, the sleep's pid,
--- the terminal's rdev.
---@param cmd string a shell line
---@param marker string
---@return support.Tmux t, string screen, string pid, integer rdev
local function typed_after(cmd, marker)
  local t = tmux.new("tty")
  local line = cmd .. " | cat; echo RUN-DONE; sleep 2; read -r l; echo SHELL-GOT-$l; sleep 60"
  t:start("sh -c " .. h.shell_quote(line), 100, 30)
  local shown = t:wait_for("RUN-DONE")
  assert.matches("LEFT%-BEHIND", shown)
  local pid = cli.eventually(function()
    local p = cli.host_pids(marker)
    return p ~= "" and p
  end)
  assert.truthy(pid, "nothing was left running: " .. shown)
  local rdev = pane_rdev(t)
  t:keys("typed-line-1", "Enter")
  return t, t:wait_for("SHELL-GOT-", 4000), pid:match("%d+"), rdev
end

describe("flemma-sandbox run and the user's terminal", function()
  local w, t
  local pids = {}
  -- in this order after each test: the terminal, what was left, the world
  tmux.kill_after_each(function()
    return t
  end)
  after_each(function()
    t = nil
    for _, pid in ipairs(pids) do
      vim.loop.kill(tonumber(pid), 9)
    end
    pids = {}
  end)
  cli.each_world(function(world)
    w = world
  end)

  it("run NAME -- cmd | cat: nothing left running holds the terminal or reads what is typed after", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local marker = string.format("sleep 87.%06d", math.random(0, 999999))
    -- and a descriptor of the terminal the user's shell left open past 2
    local cmd = "exec 7<>/dev/tty; "
      .. cli.shell_line(w, { cli.BIN, "run", "left", "--", "sh", "-c", leave_behind(marker, "/tmp/got") })
    local screen, pid, rdev
    t, screen, pid, rdev = typed_after(cmd, marker)
    pids[#pids + 1] = pid
    -- the sleep lives on in the sandbox, with none of its descriptors on
    -- the user's terminal (its stdin is the command line's, hung up)
    assert.truthy(vim.loop.fs_stat("/proc/" .. pid), "the left process is gone")
    assert.are.same({}, fds_on(pid, rdev))
    assert.is_not_nil(vim.loop.fs_readlink("/proc/" .. pid .. "/fd/0"))
    -- the line typed after run went to the user's shell, not the reader
    assert.matches("SHELL%-GOT%-typed%-line%-1", screen)
    vim.loop.sleep(300)
    assert.is_nil((h.read(cli.folder(w, "left") .. "/tmp/got") or ""):find("typed-line-1", 1, true))
  end)

  it("control: the same command given the terminal itself keeps it and steals the typed line", function()
    if not tmux.available() or vim.fn.executable("bwrap") == 0 then
      return pending("tmux or bwrap is not installed")
    end
    local marker = string.format("sleep 86.%06d", math.random(0, 999999))
    local got = w.base .. "/got"
    local cmd = "cd "
      .. h.shell_quote(w.proj)
      .. " && bwrap --dev-bind / / --new-session sh -c "
      .. h.shell_quote(leave_behind(marker, h.shell_quote(got)))
    local screen, pid, rdev
    t, screen, pid, rdev = typed_after(cmd, marker)
    pids[#pids + 1] = pid
    local reader = vim.trim(vim.fn.system({ "pgrep", "-f", "^sh -c while read -r l; do echo.*" .. vim.pesc(got) }))
    for p in reader:gmatch("%d+") do
      pids[#pids + 1] = p
    end
    assert.are.same({ "0", "3" }, fds_on(pid, rdev))
    assert.are.equal("typed-line-1\n", tmux.wait_file(got))
    assert.is_nil(screen:find("SHELL-GOT-typed", 1, true), screen)
  end)

  it("drops OSC 52 and terminal queries from what a command shows, also split across writes", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local inner = "printf 'BEFORE\\033]5'; sleep 0.3; printf '2;c;aGVsbG8=\\007\\033['; sleep 0.3; "
      .. "printf '6n\\033[c\\033P$qm\\033\\\\\\033]11;?\\007\\033[31mRED\\033[0m AFTER\\n'"
    local capture
    t, capture = start_captured(
      w,
      cli.shell_line(w, { cli.BIN, "run", "--direct", "osc", "--", "sh", "-c", inner }) .. "; echo EXITED-$?; sleep 60"
    )
    assert.matches("EXITED%-0", t:wait_for("EXITED-"))
    local bytes = tmux.wait_file(capture) or ""
    assert.truthy(bytes:find("BEFORE", 1, true), bytes)
    assert.truthy(bytes:find("\27[31mRED\27[0m AFTER", 1, true), bytes)
    for _, seq in ipairs({ "52;c;", "\27[6n", "\27[c", "\27P$q", "\27]11;?" }) do
      assert.is_nil(bytes:find(seq, 1, true), vim.inspect(seq) .. " reached the terminal: " .. vim.inspect(bytes))
    end
  end)

  it("filters a command's stderr on the terminal when its stdout is a pipe", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local inner = "printf 'ERR-BEFORE\\033]52;c;aGVsbG8=\\007\\033[6n ERR-AFTER\\n' >&2; echo to-pipe"
    local capture
    local argv = { cli.BIN, "run", "--direct", "osc", "--", "sh", "-c", inner }
    t, capture = start_captured(w, cli.shell_line(w, argv) .. " | cat; echo EXITED-$?; sleep 60")
    assert.matches("EXITED%-0", t:wait_for("EXITED-"))
    local bytes = tmux.wait_file(capture) or ""
    assert.truthy(bytes:find("ERR-BEFORE", 1, true), bytes)
    assert.truthy(bytes:find("ERR-AFTER", 1, true), bytes)
    assert.truthy(bytes:find("to-pipe", 1, true), bytes)
    assert.is_nil(bytes:find("52;c;", 1, true), vim.inspect(bytes))
    assert.is_nil(bytes:find("\27[6n", 1, true), vim.inspect(bytes))
  end)

  it("control: --raw-terminal passes them", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local inner = "printf 'BEFORE\\033]5'; sleep 0.3; printf '2;c;aGVsbG8=\\007\\033['; sleep 0.3; printf '6n AFTER\\n'"
    local argv = { cli.BIN, "run", "--direct", "--raw-terminal", "osc", "--", "sh", "-c", inner }
    local capture
    t, capture = start_captured(w, cli.shell_line(w, argv) .. "; echo EXITED-$?; sleep 60")
    assert.matches("EXITED%-0", t:wait_for("EXITED-"))
    local bytes = tmux.wait_file(capture) or ""
    assert.truthy(bytes:find("\27]52;c;aGVsbG8=\7", 1, true), vim.inspect(bytes))
    assert.truthy(bytes:find("\27[6n", 1, true), vim.inspect(bytes))
  end)

  it("diff shows a copied file's controls escaped in a terminal; into a pipe the bytes are as they are", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local r = cli.run(w, { "run", "d", "--", "sh", "-c", "printf 'x\\033]52;c;ZGlmZg==\\007y\\n' > osc.txt" })
    assert.are.equal(0, r.code, r.stderr)
    local capture
    t, capture = start_captured(w, cli.shell_line(w, { cli.BIN, "diff", "d" }) .. "; echo EXITED-$?; sleep 60")
    assert.matches("EXITED%-0", t:wait_for("EXITED-"))
    local bytes = tmux.wait_file(capture) or ""
    assert.truthy(bytes:find("+x^[]52;c;ZGlmZg==^Gy", 1, true), vim.inspect(bytes))
    assert.is_nil(bytes:find("\27]52", 1, true), vim.inspect(bytes))
    t:kill()
    -- control: through a pipe (here into cat, on the same terminal) the
    -- file's bytes reach the terminal
    os.remove(capture)
    t, capture = start_captured(w, cli.shell_line(w, { cli.BIN, "diff", "d" }) .. " | cat; echo EXITED-$?; sleep 60")
    assert.matches("EXITED%-0", t:wait_for("EXITED-"))
    bytes = tmux.wait_file(capture) or ""
    assert.truthy(bytes:find("+x\27]52;c;ZGlmZg==\7y", 1, true), vim.inspect(bytes))
  end)

  it("a pipe into run stays the command's stdin, its output reaches the terminal", function()
    if not tmux.available() then
      return pending("tmux is not installed")
    end
    local inner = "test -t 0 || echo stdin-not-a-tty; cat"
    t = tmux.new("tty")
    local line = "echo from-pipe | ("
      .. cli.shell_line(w, { cli.BIN, "run", "--direct", "p", "--", "sh", "-c", inner })
      .. ")"
    t:start("sh -c " .. h.shell_quote(line .. "; echo EXITED-$?; sleep 60"), 100, 30)
    local shown = t:wait_for("EXITED-")
    assert.matches("stdin%-not%-a%-tty", shown)
    assert.matches("from%-pipe", shown)
    assert.matches("EXITED%-0", shown)
  end)
end)
