--- Between calls, what a call left in a chat's live sandbox (direct
--- mode) is held: stopped before the call's check after the run, continued
--- at the next call (csrc/exec/supervisor.c hold()). So a late write
--- (a `.git` with core.fsmonitor 1.5 s after the call) cannot reach the
--- user's tree while the chat idles, and a secret the user saves meanwhile
--- is never read. Controls: the same sandbox with --keep-running (the
--- hold off) lets both through; clone mode keeps its processes running.
local h = require("support.helpers")
local n = require("support.nvim")
local sandbox = require("flemma_sandbox")
local live = require("flemma_sandbox.backends.live")
local client = require("flemma_sandbox.backends.helper")

describe("between calls of a chat's live sandbox", function()
  local proj
  local options = live.options -- the hold's; live_world puts it back after each test
  n.live_world(function(w)
    proj = w.proj
  end)

  local function run_in(bufnr, cmd)
    return n.run_job({ "bash", "-c", cmd }, { bufnr = bufnr, wrap = sandbox.wrapper(bufnr) })
  end

  --- The host pid of the bash whose $0 is NAME (what the call left).
  local function left_by(name)
    local pids = {}
    vim.wait(3000, function()
      pids = vim.tbl_filter(function(pid)
        local f = io.open("/proc/" .. pid .. "/cmdline", "rb")
        local words = f and f:read("*a") or ""
        if f then
          f:close()
        end
        return words:match("^[^%z]*bash%z%-c%z[^%z]*%z" .. vim.pesc(name) .. "%z?$") ~= nil
      end, n.pids_with(name))
      -- the bash itself, not a child it forked on the way to a command
      local set = {}
      for _, pid in ipairs(pids) do
        set[pid] = true
      end
      pids = vim.tbl_filter(function(pid)
        local f = io.open("/proc/" .. pid .. "/stat", "r")
        local ppid = f and tonumber((f:read("*a") or ""):match("^%d+ %b() %a (%d+)"))
        if f then
          f:close()
        end
        return not set[ppid]
      end, pids)
      return #pids == 1
    end, 10)
    assert.are.equal(1, #pids, "the call left it: " .. name)
    return pids[1]
  end

  --- The size of path, which what a call left wrote while the call ran
  --- (the control) and not in the ms after it (held); asserts both.
  local function written_then_held(path, ms)
    local before = vim.fn.getfsize(path)
    assert.is_true(before > 0, "control: it wrote while the call ran")
    n.pause(ms)
    assert.are.equal(before, vim.fn.getfsize(path), "nothing written between calls")
    return before
  end

  --- Call 1 leaves two processes: one that makes sub/.git with
  --- core.fsmonitor 1.5 s later, one that copies deploy/keys/prod.pem to
  --- read.MARKER in the project whenever it can.
  local function leave_attackers(bufnr, marker)
    local late = "mkdir -p sub/.git && printf '[core]\\n\\tfsmonitor = touch /tmp/pwned."
      .. marker
      .. "\\n' > sub/.git/config; sleep 1000."
      .. marker
    local reader = "while :; do cat deploy/keys/prod.pem >> read." .. marker .. " 2>/dev/null; sleep 0.1; done"
    local r = run_in(
      bufnr,
      "mkdir -p sub deploy/keys; "
        .. string.format("bash -c %s late.%s >/dev/null 2>&1 & ", h.shell_quote("sleep 1.5; " .. late), marker)
        .. string.format("bash -c %s reader.%s >/dev/null 2>&1 & ", h.shell_quote(reader), marker)
        .. "sleep 0.3; echo ok" -- both under way when the call ends
    )
    assert.are.equal("ok\n", r.stdout, r.stderr)
    return left_by("late." .. marker), left_by("reader." .. marker)
  end

  it("holds what a call left: no late .git, no new secret read; the next call continues it and checks it", function()
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local marker = n.marker()
    local late, reader = leave_attackers(a, marker)
    -- the user saves a key while the chat idles, then waits past the 1.5 s
    h.sh("mkdir -p " .. h.shell_quote(proj .. "/deploy/keys"))
    h.write(proj .. "/deploy/keys/prod.pem", "PRIVATE-" .. marker .. "\n")
    n.pause(3000)
    assert.is_nil(h.read(proj .. "/sub/.git/config"), "nothing made between calls")
    assert.are.equal(0, vim.fn.isdirectory(proj .. "/sub/.git"))
    assert.are.equal("T", n.state_of(late), "held")
    assert.are.equal("T", n.state_of(reader), "held")
    assert.is_nil((h.read(proj .. "/read." .. marker) or ""):find("PRIVATE", 1, true), "the new secret was not read")
    local live_dir = live.dir_for(require("flemma_sandbox.policy.chat_dirs").for_buffer(a))
    local state, processes, held = live.info(client.helper(), live_dir)
    assert.are.same({ "running", processes }, { state, held }, "all it left is held")
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(a), "\n")
    assert.matches("between calls nothing runs: what a call left is held and goes on at the next call", status)
    local list = table.concat(require("flemma_sandbox.nvim.sandboxes").list_lines(), "\n")
    assert.matches(string.format("running %%(%d, held %d%%)", processes, processes), list)
    -- the next call: the new secret makes the plan mask more, so the
    -- sandbox is started again (what it held ends without running)
    local r = run_in(a, "cat deploy/keys/prod.pem; echo done")
    assert.are.equal("done\n", r.stdout, r.stderr)
    assert.are.same({}, n.survivors({ late, reader }), "what the old plan held ended")
    assert.is_nil((h.read(proj .. "/read." .. marker) or ""):find("PRIVATE", 1, true), "never read")
    assert.is_nil(h.read(proj .. "/sub/.git/config"))
    assert.are.equal("PRIVATE-" .. marker .. "\n", h.read(proj .. "/deploy/keys/prod.pem"), "the user's key stays")
  end)

  it("continues what it held at the next call, whose check moves a late .git to the quarantine", function()
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local marker = n.marker()
    local late, reader = leave_attackers(a, marker)
    n.pause(3000)
    assert.are.equal(0, vim.fn.isdirectory(proj .. "/sub/.git"), "nothing made between calls")
    assert.are.equal("T", n.state_of(late))
    -- the call runs for 2.5 s: what was held goes on meanwhile (its 1.5 s
    -- run on from where they were held), and the call's check sees it
    local r = run_in(a, "sleep 2.5; echo done")
    assert.are.equal("done\n", r.stdout, r.stderr)
    assert.are.equal(0, #h.records_of(r.records, "restarted"), "joined: " .. vim.inspect(r.records))
    -- bash ran its script on, and exec'd its last command in its place
    local f = assert(io.open("/proc/" .. late .. "/cmdline", "rb"))
    local words = f:read("*a"):gsub("%z", " ")
    f:close()
    assert.are.equal("sleep 1000." .. marker .. " ", words, "it went on past its write: continued at the call")
    assert.are.equal("T", n.state_of(late), "held again after the call")
    assert.are.equal("T", n.state_of(reader))
    assert.is_nil(h.read(proj .. "/sub/.git/config"), "moved to the quarantine by the call's check")
    assert.is_true(#h.records_of(r.records, "moved") >= 1, vim.inspect(r.records))
  end)

  it("holds a writer that a forking partner keeps sending SIGCONT", function()
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local marker = n.marker()
    local writer = "while :; do echo x >> busy." .. marker .. "; done"
    local partner = "while :; do kill -CONT $0 $1 2>/dev/null; /bin/true; done"
    local r = run_in(
      a,
      string.format("bash -c %s writer.%s >/dev/null 2>&1 & ", h.shell_quote(writer), marker)
        .. string.format("bash -c %s $! partner.%s >/dev/null 2>&1 & ", h.shell_quote(partner), marker)
        .. "sleep 0.5; echo ok"
    )
    assert.are.equal("ok\n", r.stdout, r.stderr)
    local path = proj .. "/busy." .. marker
    local before = written_then_held(path, 1500)
    local held = n.pids_with("writer." .. marker)
    assert.is_true(#held >= 1, "the writer is there")
    for _, pid in ipairs(n.pids_with(marker)) do
      assert.are.equal("T", n.state_of(pid), "held: " .. pid)
    end
    -- the next call continues them
    r = run_in(a, "sleep 0.5")
    local ld = live.dir_for(require("flemma_sandbox.policy.chat_dirs").for_buffer(a))
    local function words(name)
      return vim.split((h.read(ld .. "/" .. name) or ""):gsub("%z", "\n"), "\n")
    end
    local diff = {}
    for _, pair in ipairs({ { "key", "key.old" }, { "masks", "masks.old" } }) do
      local new, old = words(pair[1]), words(pair[2])
      if #old > 1 then
        diff[pair[1]] = vim.diff(table.concat(old, "\n"), table.concat(new, "\n"))
      end
    end
    local log = { h.read(ld .. "/keeper.log"), diff }
    assert.is_true(vim.fn.getfsize(path) > before, "it went on during the call: " .. vim.inspect({ r, log }))
  end)

  it("kills what cannot be stopped (a vfork parent of a held child) and holds the rest", function()
    local src = proj .. "/vf.c"
    h.write(
      src,
      table.concat({
        "#define _GNU_SOURCE",
        "#include <unistd.h>",
        "int main(void) {",
        "  if (vfork() == 0) { for (;;) pause(); }", -- the parent waits, unstoppable, in the kernel
        "  return 0;",
        "}",
      }, "\n")
    )
    h.sh("cc -o " .. h.shell_quote(proj .. "/vf") .. " " .. h.shell_quote(src))
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local marker = n.marker()
    local started = vim.loop.hrtime()
    local r = run_in(a, "bash -c ./vf vf." .. marker .. " >/dev/null 2>&1 & sleep 0.5; echo ok")
    assert.are.equal("ok\n", r.stdout, r.stderr)
    assert.is_true((vim.loop.hrtime() - started) / 1e9 < 10, "the call returned")
    -- this spec's program: its file is the one in this project
    local pids = vim.tbl_filter(function(pid)
      return vim.loop.fs_readlink("/proc/" .. pid .. "/exe") == proj .. "/vf"
    end, n.pids_with("vf"))
    assert.are.equal(1, #pids, "the parent was killed, the child stays: " .. vim.inspect(pids))
    assert.are.equal("T", n.state_of(pids[1]), "the child is held")
    -- the sandbox goes on: the next call runs
    assert.are.equal("next\n", run_in(a, "echo next").stdout)
  end)

  it("holds a process that made itself not dumpable (its /proc owned by root)", function()
    h.write(
      proj .. "/nd.c",
      table.concat({
        "#include <stdio.h>",
        "#include <sys/prctl.h>",
        "#include <unistd.h>",
        "int main(int argc, char **argv) {",
        "  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);",
        '  for (;;) { FILE *f = fopen(argv[1], "a"); if (f) { fputs("x\\n", f); fclose(f); } usleep(10000); }',
        "}",
      }, "\n")
    )
    h.sh("cc -o " .. h.shell_quote(proj .. "/nd") .. " " .. h.shell_quote(proj .. "/nd.c"))
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local marker = n.marker()
    local r = run_in(a, "./nd nd." .. marker .. " >/dev/null 2>&1 & sleep 0.5; echo ok")
    assert.are.equal("ok\n", r.stdout, r.stderr)
    local path = proj .. "/nd." .. marker
    local before = written_then_held(path, 1000)
    run_in(a, "sleep 0.5")
    assert.is_true(vim.fn.getfsize(path) > before, "it went on during the call")
  end)

  it("leaves alone a repository the user makes while the chat idles, also at the stop", function()
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local r = run_in(a, "bash -c 'sleep 1000' idle." .. n.marker() .. " >/dev/null 2>&1 & sleep 0.3; echo ok")
    assert.are.equal("ok\n", r.stdout, r.stderr)
    -- nothing of the sandbox runs now: the stop does not take the user's
    -- new .git for the sandbox's
    h.sh("git init -q " .. h.shell_quote(proj .. "/mine"))
    live.stop_all(client.helper())
    assert.are.equal(1, vim.fn.isdirectory(proj .. "/mine/.git"), "the user's .git stays")
  end)

  it("control: with the hold off (--keep-running) the late .git is made and the new secret read", function()
    live.options = function(d, s)
      return options(d, s, true)
    end
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local marker = n.marker()
    local late = leave_attackers(a, marker)
    h.sh("mkdir -p " .. h.shell_quote(proj .. "/deploy/keys"))
    h.write(proj .. "/deploy/keys/prod.pem", "PRIVATE-" .. marker .. "\n")
    n.pause(3000)
    assert.matches("fsmonitor = touch /tmp/pwned", h.read(proj .. "/sub/.git/config") or "", "made between calls")
    assert.matches("PRIVATE%-" .. marker, h.read(proj .. "/read." .. marker) or "", "read while idle")
    assert.are_not.equal("T", n.state_of(late))
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(a), "\n")
    assert.matches("held: 0", status)
  end)

  it("clone mode holds them too when its view shows a folder of the user's (an ignored deploy/)", function()
    h.sh("mkdir -p " .. h.shell_quote(proj .. "/deploy/keys"))
    h.write(proj .. "/.gitignore", "deploy/\n")
    h.sh("cd " .. h.shell_quote(proj) .. " && git init -q . && git add .gitignore")
    h.sh("cd " .. h.shell_quote(proj) .. " && git -c user.name=t -c user.email=t@t commit -qm one")
    n.live_setup({ sandboxes = { workspace = "clone" } })
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local marker = n.marker()
    local reader = "while :; do cat deploy/keys/prod.pem >> read." .. marker .. " 2>/dev/null; sleep 0.1; done"
    local r = run_in(
      a,
      string.format("bash -c %s reader.%s >/dev/null 2>&1 & sleep 0.3; echo ok", h.shell_quote(reader), marker)
    )
    assert.are.equal("ok\n", r.stdout, r.stderr)
    local pid = left_by("reader." .. marker)
    h.write(proj .. "/deploy/keys/prod.pem", "PRIVATE-" .. marker .. "\n")
    n.pause(1500)
    assert.are.equal("T", n.state_of(pid), "held")
    local clone = require("flemma_sandbox.api.clone_mode").specs(a)[1].clone
    assert.is_nil((h.read(clone .. "/read." .. marker) or ""):find("PRIVATE", 1, true), "the new secret was not read")
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(a), "\n")
    assert.matches("between calls nothing runs", status)
  end)

  it("clone mode keeps what a call left running between calls (it sees the copy)", function()
    h.sh("cd " .. h.shell_quote(proj) .. " && git init -q . && echo one > a.txt && git add a.txt")
    h.sh("cd " .. h.shell_quote(proj) .. " && git -c user.name=t -c user.email=t@t commit -qm one")
    n.live_setup({ sandboxes = { workspace = "clone" } })
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local marker = n.marker()
    local r =
      run_in(a, string.format("bash -c 'while :; do sleep 0.1; done' tick.%s >/dev/null 2>&1 & echo ok", marker))
    assert.are.equal("ok\n", r.stdout, r.stderr)
    local pid = left_by("tick." .. marker)
    n.pause(1000)
    assert.are_not.equal("T", n.state_of(pid), "it runs between calls")
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(a), "\n")
    assert.matches("between calls what a call left goes on %(clone mode", status)
  end)
end)
