--- A chat's live sandbox (backends/live.lua, csrc/exec/live_attach.h):
--- a chat's calls share one sandbox, so what a call leaves running is
--- there for the next one; cancel, the time limit, a policy change, the
--- idle time and the cap on running sandboxes, each with its control.
local h = require("support.helpers")
local n = require("support.nvim")
local sandbox = require("flemma_sandbox")
local live = require("flemma_sandbox.backends.live")
local client = require("flemma_sandbox.backends.helper")

local PLUGIN = vim.fn.getcwd() -- this plugin (the runner starts here)

describe("a chat's live sandbox", function()
  local dir
  n.live_world(function(w)
    dir = w.dir
  end)

  local function run_in(bufnr, cmd, opts)
    opts = opts or {}
    opts.bufnr = bufnr
    opts.wrap = sandbox.wrapper(bufnr)
    return n.run_job({ "bash", "-c", cmd }, opts)
  end

  --- Host pids of `sleep 1000.MARKER` itself (not a shell or helper still
  --- on its way to exec it, whose command line holds the marker too).
  local function sleeping(marker)
    return vim.tbl_filter(function(pid)
      local f = io.open("/proc/" .. pid .. "/comm", "r")
      local comm = f and f:read("*l")
      if f then
        f:close()
      end
      return comm == "sleep"
    end, n.pids_with("sleep 1000." .. marker))
  end

  --- Starts `sleep 1000.MARKER` in the background of a call; its host pid.
  --- The call waits for it to be `sleep`: held at the call's end (direct
  --- mode), a child not yet exec'd would stay a shell until the next call.
  local function leave_running(bufnr)
    local marker = n.marker()
    local r = run_in(
      bufnr,
      "sleep 1000."
        .. marker
        .. ' > /dev/null 2>&1 & for i in $(seq 200); do [ "$(cat /proc/$!/comm)" = sleep ] && break; sleep 0.01; done;'
        .. " echo started"
    )
    assert.are.equal("started\n", r.stdout, r.stderr)
    local pids = {}
    vim.wait(3000, function()
      pids = sleeping(marker)
      return #pids == 1
    end, 10)
    assert.are.equal(1, #pids, "the call left it running")
    return pids[1], marker
  end

  local function live_dir(bufnr)
    return live.dir_for(require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr))
  end

  it("keeps what a call left running for the next call; reset stops it; without it each call is fresh", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local pid, marker = leave_running(a)
    -- "1000[.]": the pattern must not match the shell that runs pgrep
    local look = "pgrep -f 'sleep 1000[.]" .. marker .. "' >/dev/null && echo alive || echo gone"
    local r = run_in(a, look)
    assert.are.equal("alive\n", r.stdout, r.stderr)
    -- control: another chat's sandbox does not see it
    local other = n.open_chat(dir .. "/proj/other.chat", { "@You:", "hi" })
    assert.are.equal("gone\n", run_in(other, look).stdout)
    assert.is_true(n.alive(pid))
    local state, processes = live.info(client.helper(), live_dir(a))
    assert.are.equal("running", state)
    assert.are.equal(1, processes)
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(a), "\n")
    assert.matches("sandbox:    running %(its own processes: 1, held: 1%), shared by its calls", status)
    vim.api.nvim_set_current_buf(a)
    vim.cmd("FlemmaSandbox reset")
    assert.are.same({}, n.survivors({ pid }), "reset stops what ran in it")
    -- control: with sandboxes.live off, nothing outlives its call
    live.stop_all(client.helper())
    n.live_setup({ sandboxes = { live = false } })
    local b = n.open_chat(dir .. "/proj/b.chat", { "@You:", "hi" })
    marker = n.marker()
    run_in(b, "sleep 1000." .. marker .. " > /dev/null 2>&1 & echo started")
    local status_b = table.concat(require("flemma_sandbox.nvim.status").lines(b), "\n")
    assert.matches("sandbox:    a fresh one for each call %(sandboxes.live = false%)", status_b)
    assert.are.same({}, n.survivors(n.pids_with("sleep 1000." .. marker)))
  end)

  --- A process's argv, from /proc.
  local function argv_of(pid)
    local f = io.open("/proc/" .. pid .. "/cmdline", "rb")
    local text = f and f:read("*a") or ""
    if f then
      f:close()
    end
    local words = {}
    for word in text:gmatch("([^%z]*)%z") do
      words[#words + 1] = word
    end
    return words
  end

  --- Whether pid descends from ancestor (its parents, from /proc).
  local function descends(pid, ancestor)
    for _ = 1, 20 do
      local f = io.open("/proc/" .. pid .. "/stat", "r")
      local stat = f and f:read("*l") or ""
      if f then
        f:close()
      end
      pid = tonumber(stat:match("^%d+ %b() %S+ (%d+)"))
      if not pid or pid <= 1 then
        return false
      elseif pid == ancestor then
        return true
      end
    end
    return false
  end

  --- The keepers of chat buffer a's sandbox: they run in its live folder
  --- (ours, not another test's).
  ---@return integer[]
  local function keepers_of(a)
    local uv = vim.uv or vim.loop
    local folder = uv.fs_realpath(live_dir(a))
    return vim.tbl_filter(function(pid)
      return uv.fs_readlink("/proc/" .. pid .. "/cwd") == folder
    end, n.pids_with("--live-keeper"))
  end

  it("runs one program per role: the keeper a call starts is the host program, its supervisor init", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local r = run_in(a, "echo ran")
    assert.are.equal("ran\n", r.stdout, r.stderr)
    local keepers = keepers_of(a)
    assert.are.equal(1, #keepers, "control: the call started its sandbox's keeper")
    local keeper = argv_of(keepers[1])
    assert.matches("/flemma%-sandbox%-host$", keeper[1])
    assert.are.equal("--live-keeper", keeper[2])
    -- bwrap's command lines name --supervise too: the supervisor is the one bwrap runs
    local supervisors = vim.tbl_filter(function(pid)
      return descends(pid, keepers[1]) and not argv_of(pid)[1]:match("bwrap$")
    end, n.pids_with("--supervise"))
    assert.are.equal(1, #supervisors, "control: the keeper's sandbox has a supervisor")
    assert.matches("/flemma%-sandbox%-init$", argv_of(supervisors[1])[1])
    live.stop_all(client.helper())
  end)

  --- The words after NAME N in argv (a counted list), or nil.
  local function counted(argv, name)
    for i, word in ipairs(argv) do
      if word == name then
        return vim.list_slice(argv, i + 2, i + 1 + tonumber(argv[i + 1]))
      end
    end
  end

  it("starts the keeper with the command line Lua made for it, word for word", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local wrap, attach = sandbox.wrapper(a), nil
    local r = n.run_job({ "bash", "-c", "echo ran" }, {
      bufnr = a,
      wrap = function(argv, env)
        local out, err, record = wrap(argv, env)
        attach = out
        return out, err, record
      end,
    })
    assert.are.equal("ran\n", r.stdout, r.stderr)
    local keepers = keepers_of(a)
    assert.are.equal(1, #keepers, "control: the call started its sandbox's keeper")
    local keeper = argv_of(keepers[1])
    local words, supervisor = counted(attach, "--keeper"), counted(attach, "--supervisor")
    assert.is_not_nil(words, "the attach was given the keeper's words")
    assert.are.same(
      { "--live-keeper", tostring(live.KEEPER_FD), "--check-file", "keeper.check" },
      vim.list_slice(words, 1, 4)
    )
    -- the host program, Lua's words, the owner, bwrap's, the supervisor's
    assert.are.same(words, vim.list_slice(keeper, 2, 1 + #words))
    local owner = vim.list_slice(attach, vim.fn.index(attach, "--owner") + 1, vim.fn.index(attach, "--owner") + 2)
    assert.are.same(owner, vim.list_slice(keeper, 2 + #words, 3 + #words))
    assert.are.same(supervisor, vim.list_slice(keeper, #keeper - #supervisor + 1, #keeper))
    assert.are.same({ "--supervise", tostring(live.KEEPER_FD) }, vim.list_slice(supervisor, 1, 2))
    live.stop_all(client.helper())
  end)

  it("starts one sandbox for calls of a new chat that come at once, and every call runs", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local results, job = {}, require("flemma_sandbox.run.job")
    for i = 1, 6 do
      assert(job.run({ "bash", "-c", "echo call-" .. i .. "; readlink /proc/self/ns/pid" }, {
        bufnr = a,
        wrap = sandbox.wrapper(a),
        on_exit = function(r)
          results[i] = r
        end,
      }))
    end
    assert(vim.wait(30000, function()
      return #vim.tbl_keys(results) == 6
    end, 10))
    -- one sandbox: one pid namespace for all of them
    local namespaces = {}
    for i = 1, 6 do
      local ns = results[i].stdout:match("^call%-" .. i .. "\n(pid:%[%d+%])\n$")
      assert.truthy(ns, results[i].stdout .. results[i].stderr)
      assert.are.equal(0, #h.records_of(results[i].records, "restarted"), results[i].stderr)
      namespaces[ns] = true
    end
    assert.are.equal(1, #vim.tbl_keys(namespaces), vim.inspect(namespaces))
  end)

  it("passes each call's exit status and streams, and a call's output never waits for what it left", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local r = run_in(a, "echo out; echo err >&2; exit 7")
    assert.are.equal("out\n", r.stdout)
    assert.are.equal("err\n", r.stderr)
    assert.are.equal(7, r.exit_code)
    -- a background writer that keeps stdout open: the call ends all the same
    local started = vim.loop.hrtime()
    r = run_in(a, "(while true; do echo tick; sleep 0.1; done) & echo first")
    assert.are.equal(0, r.exit_code)
    -- (the writer's first tick may come before it)
    assert.truthy(r.stdout:find("first\n", 1, true), r.stdout)
    assert.is_true((vim.loop.hrtime() - started) / 1e9 < 5, "the call ended while its writer runs")
    r = run_in(a, "pgrep -c -f 'sleep 0.1' || true; echo next")
    assert.matches("next\n$", r.stdout, r.stderr)
  end)

  it("a keeper whose starter died before writing its key is replaced, not waited for", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local _, marker = leave_running(a)
    -- what a call killed right after starting the keeper leaves: no key
    os.remove(live_dir(a) .. "/key")
    local started = vim.loop.hrtime()
    local look = "pgrep -f 'sleep 1000[.]" .. marker .. "' >/dev/null && echo alive || echo gone"
    local r = run_in(a, look)
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.are.equal("gone\n", r.stdout, "a new sandbox")
    assert.is_true((vim.loop.hrtime() - started) / 1e9 < 4, "the keyless keeper was stopped, not waited out")
    assert.are.equal("started\n", run_in(a, "echo started").stdout)
  end)

  it("cancel and the time limit stop the call's process group, and nothing else", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local kept = leave_running(a)
    local marker = n.marker()
    local result
    local handle = assert(require("flemma_sandbox.run.job").run({ "bash", "-c", "sleep 1000." .. marker }, {
      bufnr = a,
      wrap = sandbox.wrapper(a),
      on_exit = function(r)
        result = r
      end,
    }))
    assert(
      vim.wait(10000, function()
        return #sleeping(marker) == 1 or result ~= nil
      end, 10) and result == nil,
      "control: the call runs: " .. vim.inspect({ result = result, pids = n.pids_with("sleep 1000." .. marker) })
    )
    local call_pids = n.pids_with("sleep 1000." .. marker)
    handle.cancel()
    assert(vim.wait(10000, function()
      return result ~= nil
    end, 10))
    assert.is_true(result.cancelled)
    assert.are.same({}, n.survivors(call_pids), "the cancelled call is gone")
    assert.is_true(n.alive(kept), "what an earlier call left runs on")
    -- the time limit (tools.max_timeout_ms): the same, per call
    n.live_setup({ tools = { max_timeout_ms = 1500 } })
    marker = n.marker()
    local r = run_in(a, "sleep 1000." .. marker)
    assert.are.equal(1, #h.records_of(r.records, "stopped"), vim.inspect(r.records))
    assert.are.equal("time_limit", h.records_of(r.records, "stopped")[1].reason)
    assert.are.same({}, n.survivors(n.pids_with("sleep 1000." .. marker)))
  end)

  it("starts again, with a note, when the chat's policy changes; what ran in it stops", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local pid = leave_running(a)
    local r = run_in(a, "true")
    assert.are.equal(0, #h.records_of(r.records, "restarted"), "control: the same policy joins")
    assert.is_true(n.alive(pid))
    n.live_setup({ policy = { rw_paths = { "$CWD", "/tmp" }, network = false, seccomp = false } })
    r = run_in(a, "true")
    assert.are.equal(1, #h.records_of(r.records, "restarted"), vim.inspect(r.records))
    assert.matches("started again", r.stderr)
    assert.are.same({}, n.survivors({ pid }))
  end)

  it("warm calls get no more than a fresh one: a new secret is hidden, the supervisor out of reach", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local pid = leave_running(a)
    -- the supervisor holds the socket calls come through: no process in
    -- the sandbox can look at its descriptors (control: its own)
    local r = run_in(a, "readlink /proc/self/fd/0 >/dev/null && echo own; readlink /proc/2/fd/* 2>&1 || echo refused")
    assert.matches("^own\n", r.stdout, r.stderr)
    assert.matches("refused\n$", r.stdout)
    -- a secret file made on the host between two calls: the sandbox is
    -- stopped (its keeper watches what its protection rests on) or started
    -- again by the next call; either way nothing of the old plan reads it
    h.write(dir .. "/proj/.env", "TOKEN=host-secret\n")
    r = run_in(a, "cat .env")
    assert.is_nil(r.stdout:find("host-secret", 1, true), r.stdout)
    assert.are.same({}, n.survivors({ pid }), "what ran with the old plan stopped")
    -- control: the host copy is there, and a plain file made the same way
    -- shows in the warm sandbox
    assert.are.equal("TOKEN=host-secret\n", h.read(dir .. "/proj/.env"))
    h.write(dir .. "/proj/notes.txt", "plain\n")
    r = run_in(a, "cat notes.txt")
    assert.are.equal("plain\n", r.stdout, r.stderr)
  end)

  it(
    "a process an earlier call left writes only while a call runs: a protected name is caught, a plain file stays",
    function()
      local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
      -- control: what it writes at a plain name is there, once a call runs
      -- (between calls it is held: live_between_spec.lua)
      local r =
        run_in(a, "(sleep 0.3; echo plain > notes.txt; sleep 1000." .. n.marker() .. ") >/dev/null 2>&1 & echo ok")
      assert.are.equal("ok\n", r.stdout, r.stderr)
      vim.wait(1500, function()
        return false
      end, 50)
      assert.is_nil(h.read(dir .. "/proj/notes.txt"), "held between calls")
      r = run_in(a, "sleep 1; cat notes.txt")
      assert.are.equal("plain\n", r.stdout, r.stderr)
      assert.are.equal("plain\n", h.read(dir .. "/proj/notes.txt"))
      -- the attack: .envrc (a protected name that does not exist) written
      -- after the call that started it, for the user's shell to run
      local marker = n.marker()
      r = run_in(a, "(sleep 0.3; echo 'curl evil' > .envrc; sleep 1000." .. marker .. ") >/dev/null 2>&1 & echo ok")
      assert.are.equal("ok\n", r.stdout, r.stderr)
      vim.wait(1500, function()
        return false
      end, 50)
      assert.is_nil(h.read(dir .. "/proj/.envrc"), "held between calls")
      run_in(a, "sleep 1")
      assert.is_nil(h.read(dir .. "/proj/.envrc"), "moved to the quarantine")
      assert.are.same({}, n.survivors(n.pids_with("sleep 1000." .. marker)), "its sandbox was stopped")
    end
  )

  it("keeps a chat's /run and /dev/shm on disk, also between fresh sandboxes; another buffer's are its own", function()
    n.live_setup({ sandboxes = { live = false } })
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local r = run_in(a, "echo s > /dev/shm/kept && echo r > /run/kept && echo ok")
    assert.are.equal("ok\n", r.stdout, r.stderr)
    r = run_in(a, "cat /dev/shm/kept /run/kept")
    assert.are.equal("s\nr\n", r.stdout, r.stderr)
    local chat = sandbox.get_policy(a).chat
    assert.are.equal("s\n", h.read(chat.dir .. "/shm/kept"), "on disk, in the chat's folder")
    -- control: a buffer that is not a chat gets fresh ones
    local scratch = vim.api.nvim_create_buf(true, false)
    run_in(scratch, "echo s > /dev/shm/kept")
    r = run_in(scratch, "cat /dev/shm/kept")
    assert.are_not.equal(0, r.exit_code)
  end)

  it("sandboxes.name shares one sandbox between chats; from a frontmatter only when trusted", function()
    n.live_setup({ sandboxes = { name = "shared" } })
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local b = n.open_chat(dir .. "/proj/b.chat", { "@You:", "hi" })
    run_in(a, "echo from-a > /tmp/shared.txt")
    local r = run_in(b, "cat /tmp/shared.txt")
    assert.are.equal("from-a\n", r.stdout, r.stderr)
    local chat = sandbox.get_policy(b).chat
    assert.are.equal("shared", chat.name)
    assert.matches("/shared$", chat.dir)
    -- a frontmatter's name loosens (another chat's folders): it waits for trust
    local split = require("flemma_sandbox.chat.frontmatter_trust").split(
      { sandboxes = { name = "other", live = false } },
      require("flemma_sandbox.config").resolve()
    )
    assert.are.same({ "sandboxes.name = other" }, split.loose)
    assert.are.same({ live = false }, split.tight.sandboxes, "a fresh sandbox per call only tightens")
    -- a bad name is refused, naming the key
    local ok, err = pcall(sandbox.setup, { sandboxes = { name = "../x" } })
    assert.is_false(ok)
    assert.matches("sandboxes%.name", tostring(err))
  end)

  it("chats of one name share what runs in their sandbox: calls that alternate between them join it", function()
    n.live_setup({ sandboxes = { name = "shared" } })
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local b = n.open_chat(dir .. "/proj/b.chat", { "@You:", "hi" })
    run_in(b, "true") -- b has used the name before
    local pid, marker = leave_running(a)
    local look = "pgrep -f 'sleep 1000[.]" .. marker .. "' >/dev/null && echo alive || echo gone"
    for _, chat in ipairs({ b, a, b }) do
      local r = run_in(chat, look)
      assert.are.equal("alive\n", r.stdout, r.stderr)
      assert.are.same({}, h.records_of(r.records, "restarted"), "the shared sandbox was started again")
    end
    -- both chat files stay read-only in it, whichever chat calls
    local r = run_in(b, "echo x >> " .. h.shell_quote(dir .. "/proj/a.chat") .. " 2>&1 || echo refused")
    assert.matches("refused", r.stdout)
    assert.are.equal(1, vim.fn.filereadable("/proc/" .. pid .. "/comm"))
    -- control: a chat without the name has a sandbox of its own
    n.live_setup()
    local c = n.open_chat(dir .. "/proj/c.chat", { "@You:", "hi" })
    assert.are.equal("gone\n", run_in(c, look).stdout)
  end)

  it("leaves alone what the user makes at a protected name while the chat's sandbox idles", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    assert.are.equal(0, run_in(a, "true").exit_code)
    assert.are.equal("running", (live.info(client.helper(), live_dir(a))), "control: it runs, idle")
    -- the user's own .nvim.lua and .vscode (protected names), made on the
    -- host between two calls
    h.write(dir .. "/proj/.nvim.lua", "-- mine\n")
    h.sh("mkdir " .. h.shell_quote(dir .. "/proj/.vscode"))
    local r = run_in(a, "cat .nvim.lua")
    assert.are.equal("-- mine\n", r.stdout, r.stderr)
    assert.are.equal("-- mine\n", h.read(dir .. "/proj/.nvim.lua"), "not moved to the quarantine")
    assert.are.equal("directory", require("flemma_sandbox.core").file_type(dir .. "/proj/.vscode"))
    assert.are.equal(0, #h.records_of(r.records, "moved"), vim.inspect(r.records))
    -- and now protected: a call cannot change it
    r = run_in(a, "echo evil >> .nvim.lua")
    assert.are_not.equal(0, r.exit_code)
    assert.are.equal("-- mine\n", h.read(dir .. "/proj/.nvim.lua"))
  end)

  it("stops after sandboxes.idle_ttl_s without a call; its files stay", function()
    n.live_setup({ sandboxes = { idle_ttl_s = 1 } })
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    run_in(a, "echo kept > /tmp/kept.txt")
    local pid = leave_running(a)
    assert.is_true(n.alive(pid), "control: running right after the call")
    assert(
      vim.wait(6000, function()
        return not n.alive(pid)
      end, 50),
      "stopped when idle"
    )
    -- its keeper ends a moment after what ran in the sandbox
    vim.wait(3000, function()
      return live.info(client.helper(), live_dir(a)) == "stopped"
    end, 50)
    assert.are.equal("stopped", (live.info(client.helper(), live_dir(a))))
    local r = run_in(a, "cat /tmp/kept.txt")
    assert.are.equal("kept\n", r.stdout, r.stderr)
  end)

  it("leaves no process when Neovim exits, normally or killed (SIGKILL)", function()
    local root = vim.fn.getcwd() -- the spec's own folder: see n.live_world
    for _, how in ipairs({ "exit", "kill" }) do
      local marker = n.marker()
      local script = dir .. "/child.lua"
      h.write(
        script,
        table.concat({
          "vim.opt.rtp:prepend(" .. string.format("%q", PLUGIN) .. ")",
          "local fs = require('flemma_sandbox')",
          "fs.setup({ backend = 'bwrap', policy = { rw_paths = { '$CWD', '/tmp' }, network = false } })",
          "vim.cmd('edit " .. root .. "/child.chat')",
          "local argv = fs.wrap_command({ 'bash', '-c', 'sleep 1000." .. marker .. " >/dev/null 2>&1 &' }, 0)",
          "vim.fn.system(argv)",
          "io.open(" .. string.format("%q", dir .. "/ready") .. ", 'w'):close()",
          -- a normal exit when asked
          "local t = (vim.uv or vim.loop).new_timer()",
          "t:start(50, 50, vim.schedule_wrap(function()",
          "  if vim.loop.fs_stat(" .. string.format("%q", dir .. "/quit") .. ") then vim.cmd('qa!') end",
          "end))",
        }, "\n")
      )
      local job = vim.fn.jobstart({ "nvim", "--headless", "-u", "NONE", "-i", "NONE", "-c", "luafile " .. script }, {
        cwd = root,
      })
      assert(
        vim.wait(15000, function()
          return h.read(dir .. "/ready") ~= nil
        end, 20),
        "the child Neovim ran its call"
      )
      os.remove(dir .. "/ready")
      local pids = n.pids_with("sleep 1000." .. marker)
      assert.are.equal(1, #pids, "control: its sandbox runs what the call left")
      local keepers = n.pids_with("--live-keeper")
      assert.is_true(#keepers >= 1, "control: its keeper runs")
      if how == "kill" then
        h.sh("kill -9 " .. vim.fn.jobpid(job))
      else
        h.write(dir .. "/quit", "")
      end
      assert.are_not.equal(-1, vim.fn.jobwait({ job }, 10000)[1], "the child Neovim ended")
      os.remove(dir .. "/quit")
      assert.are.same({}, n.survivors(pids), how .. ": what ran in the sandbox is gone")
      for _, pid in ipairs(n.pids_with("sleep 1000." .. marker)) do
        error("left running after " .. how .. ": " .. pid)
      end
    end
  end)

  it("runs at most sandboxes.max_running at once: the one used longest ago stops, its files stay", function()
    n.live_setup({ sandboxes = { max_running = 1 } })
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local pid_a = leave_running(a)
    local b = n.open_chat(dir .. "/proj/b.chat", { "@You:", "hi" })
    local notices, restore = n.capture_notify()
    local pid_b = leave_running(b)
    n.flush_notices()
    restore()
    local said = vim.tbl_map(function(x)
      return x.msg
    end, notices)
    -- the user is told (the line is cut to the command line's width)
    assert.matches("stopped chat a%-%x+'s sandbox %(sandboxes%.max", table.concat(said, "\n"))
    assert.are.same({}, n.survivors({ pid_a }), "a's sandbox stopped")
    assert.is_true(n.alive(pid_b), "control: b's runs")
    assert.are.equal("running", (live.info(client.helper(), live_dir(b))))
    assert.matches("a%-%x+", live.last_capped.name)
  end)
end)
