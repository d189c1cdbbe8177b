local h = require("support.helpers")
local n = require("support.nvim")
local sandbox = require("flemma_sandbox")

describe("job.run", function()
  local dir
  before_each(function()
    dir = h.tmpdir()
    sandbox.reset_enabled()
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { dir } } })
  end)
  after_each(function()
    sandbox.setup()
    sandbox.reset_enabled()
    h.rmdir(dir)
  end)

  it("captures stdout, stderr and the exit code of a sandboxed command", function()
    local r = n.run_job({ "sh", "-c", "echo out; echo err >&2; exit 3" })
    assert.are.equal("out\n", r.stdout)
    assert.are.equal("err\n", r.stderr)
    assert.are.equal(3, r.exit_code)
    assert.is_nil(r.signal)
    assert.is_true(r.sandboxed)
    assert.is_false(r.timed_out)
    assert.is_false(r.truncated)
  end)

  it("applies the policy: a write outside rw_paths fails, inside lands", function()
    local r = n.run_job({ "sh", "-c", "echo a > " .. dir .. "/in; echo b > /var/tmp/flemma-job-out" })
    assert.are_not.equal(0, r.exit_code)
    assert.are.equal("a\n", h.read(dir .. "/in"))
    assert.is_nil(h.read("/var/tmp/flemma-job-out"))
  end)

  it("feeds stdin and closes it, and honours cwd", function()
    local r = n.run_job({ "sh", "-c", "cat; pwd" }, { stdin = "hello\n", cwd = dir })
    assert.are.equal("hello\n" .. dir .. "\n", r.stdout)
    r = n.run_job({ "cat" })
    assert.are.equal(0, r.exit_code)
    assert.are.equal("", r.stdout)
  end)

  it("starts bash without reading ~/.bashrc (stdin is a pipe, not a socket)", function()
    h.write(dir .. "/.bashrc", "echo BASHRC-READ\n")
    local r = n.run_job({ "bash", "-c", "echo hi" }, { env = { HOME = dir } })
    assert.are.equal("hi\n", r.stdout)
    sandbox.set_enabled(false)
    r = n.run_job({ "bash", "-c", "echo hi" }, { env = { HOME = dir, SHLVL = "0" } })
    assert.are.equal("hi\n", r.stdout)
  end)

  it("does the check after the run itself when the helper was killed before its own", function()
    local result
    local handle = assert(require("flemma_sandbox.run.job").run({ "sh", "-c", "echo evil > .nvim.lua; sleep 30" }, {
      cwd = dir,
      wrap = sandbox.wrapper(),
      on_exit = function(r)
        result = r
      end,
    }))
    assert(vim.wait(10000, function()
      return h.read(dir .. "/.nvim.lua") ~= nil
    end, 10))
    -- the helper on the host dies at once (an OOM killer, a kill -9): its
    -- sandbox goes with it, and its check was never done
    vim.loop.kill(handle.pid, 9)
    assert(vim.wait(10000, function()
      return result ~= nil
    end, 10))
    assert.are.equal(137, result.exit_code)
    assert.is_nil(h.read(dir .. "/.nvim.lua"), "moved by the check Neovim asked for")
    local moved = vim.tbl_filter(function(rec)
      return rec.type == "moved"
    end, result.records)
    assert.are.equal(1, #moved, result.stderr)
    assert.are.same({ "this", dir .. "/.nvim.lua" }, { moved[1].run, moved[1].from })
    assert.are.equal(dir .. "/.nvim.lua", result.quarantined[1].from)
    assert.are.equal("evil\n", h.read(result.quarantined[1].path))
    local runs = assert(require("flemma_sandbox.base.surroundings").state_dir("runs"))
    assert.are.same({}, vim.fn.readdir(runs), "no file of the run is left")
  end)

  it("reports a signal that ended the command", function()
    local r = n.run_job({ "sh", "-c", "kill -9 $$" })
    assert.are.equal(137, r.exit_code)
    assert.are.equal(9, r.signal)
  end)

  it("kills every process of a sandboxed command on timeout, grandchildren included", function()
    local m = n.marker()
    local cmd = "sleep 1000." .. m .. " & sleep 1001." .. m .. " & wait"
    local r, found = n.run_job_watching({ "sh", "-c", cmd }, { timeout_ms = 1500, grace_ms = 300 }, "1000." .. m)
    assert.is_true(r.timed_out)
    assert.is_true(#found >= 1, "the grandchild was never seen")
    assert.are.same({}, n.survivors(found))
    assert.are.same({}, n.survivors(n.pids_with(m)))
  end)

  it("kills the process group and its strays when unsandboxed", function()
    sandbox.set_enabled(false)
    local m = n.marker()
    local cmd = "sleep 1000." .. m .. " & setsid sleep 1002." .. m .. " & wait"
    local r, found = n.run_job_watching({ "sh", "-c", cmd }, { timeout_ms = 1500, grace_ms = 300 }, m)
    assert.is_false(r.sandboxed)
    assert.is_true(r.timed_out)
    assert.is_true(#found >= 2, "expected the sleeps, saw " .. #found)
    assert.are.same({}, n.survivors(found))
    assert.are.same({}, n.survivors(n.pids_with(m)))
  end)

  it("cancel() stops a running command and leaves no process", function()
    local m = n.marker()
    local result
    local handle = require("flemma_sandbox.run.job").run({ "sh", "-c", "sleep 1003." .. m }, {
      wrap = require("flemma_sandbox").wrapper(nil),
      grace_ms = 300,
      on_exit = function(r)
        result = r
      end,
    })
    assert.truthy(vim.wait(3000, function()
      return #n.pids_with("1003." .. m) > 0
    end, 20))
    handle.cancel()
    assert.truthy(vim.wait(5000, function()
      return result ~= nil
    end, 10))
    assert.is_true(result.cancelled)
    assert.is_false(result.timed_out)
    assert.are.same({}, n.survivors(n.pids_with(m)))
  end)

  it("leaves no process when cancelled while bwrap is still setting up", function()
    -- a stop in bwrap's first milliseconds used to orphan the sandbox's init
    local job = require("flemma_sandbox.run.job")
    local pids = {}
    for i = 1, 20 do
      local m = n.marker()
      local result
      local handle = job.run({ "sh", "-c", "sleep 1004." .. m }, {
        wrap = require("flemma_sandbox").wrapper(nil),
        grace_ms = 200,
        on_exit = function(r)
          result = r
        end,
      })
      vim.wait(i % 10)
      handle.cancel()
      assert.truthy(vim.wait(5000, function()
        return result ~= nil
      end, 5))
      vim.list_extend(pids, n.pids_with(m))
    end
    assert.are.same({}, n.survivors(pids))
  end)

  it("leaves nothing behind after a timeout or a cancel, even one during set-up", function()
    -- dir is a project with a missing .envrc, .vscode, ...: nothing stands in for them
    local job = require("flemma_sandbox.run.job")
    for i = 1, 10 do
      local result
      local handle = job.run({ "sh", "-c", "ls -a; sleep 5" }, {
        wrap = require("flemma_sandbox").wrapper(nil),
        cwd = dir,
        timeout_ms = i % 2 == 0 and 300 or nil,
        grace_ms = 200,
        on_exit = function(r)
          result = r
        end,
      })
      if i % 2 == 1 then
        vim.wait(i * 7)
        handle.cancel()
      end
      assert.truthy(vim.wait(5000, function()
        return result ~= nil
      end, 5))
    end
    local r = n.run_job({ "ls", "-a" }, { cwd = dir })
    assert.is_nil(r.stdout:find(".envrc", 1, true), "no placeholder while a command runs")
    assert.are.equal("", h.capture("ls -A " .. h.shell_quote(dir)))
    local runs = require("flemma_sandbox.base.surroundings").state_dir("runs")
    assert.are.equal("", h.capture("ls -A " .. h.shell_quote(runs)), "no check file or proxy socket is left")
    local proxies = h.capture("pgrep -f " .. h.shell_quote("[f]lemma-sandbox-proxy --listen " .. runs) .. " || true")
    assert.are.equal("", proxies, "no network proxy is left")
  end)

  it("knows a start that lost a race with the host from its records, never its words", function()
    local job = require("flemma_sandbox.run.job")
    -- the host side's record: bwrap ended before the init program started
    local lost = { type = "setup_failed", by = "bwrap", error = "bwrap exited 1 before the command started" }
    assert.is_true(job.setup_raced({ sandboxed = true, exit_code = 1, stdout = "", stderr = "", records = { lost } }))
    -- what bwrap says when a path to mount over vanished after the policy
    -- was read, without the record (a command may print it): not one
    local gone = dir .. "/gone/sock"
    local r = h.run({ "bwrap", "--ro-bind", "/", "/", "--ro-bind", "/dev/null", gone, "--", "true" })
    assert.are.equal(1, r.code)
    assert.matches("^bwrap: Can't", r.stderr)
    assert.is_false(job.setup_raced({ sandboxed = true, exit_code = 1, stdout = "", stderr = r.stderr, records = {} }))
    -- cancelled, timed out or not sandboxed: not tried again
    assert.is_false(job.setup_raced({ sandboxed = true, cancelled = true, exit_code = 1, records = { lost } }))
    assert.is_false(job.setup_raced({ sandboxed = true, timed_out = true, exit_code = 1, records = { lost } }))
    assert.is_false(job.setup_raced({ sandboxed = false, exit_code = 1, records = { lost } }))
    -- a setup of ours that failed (the plan, the proxy) is not a race
    local ours = { type = "setup_failed", error = "cannot prepare the run" }
    assert.is_false(job.setup_raced({ sandboxed = true, exit_code = 126, records = { ours } }))
  end)

  it("does not wait forever for a background process that keeps the output open", function()
    sandbox.set_enabled(false)
    local m = n.marker()
    local r = n.run_job({ "sh", "-c", "sleep 1005." .. m .. " & echo started" }, { grace_ms = 300 }, 5000)
    assert.are.equal(0, r.exit_code)
    assert.are.equal("started\n", r.stdout)
    assert.are.same({}, n.survivors(n.pids_with("1005." .. m)))
  end)

  it("keeps a 200 MB output bounded, with a marker saying how much was left out", function()
    local r = n.run_job({ "sh", "-c", "head -c 200000000 /dev/zero | tr '\\000' 'a'; echo; echo END" }, {
      output_limit = 12000,
    }, 120000)
    assert.are.equal(0, r.exit_code)
    assert.is_true(r.truncated)
    assert.is_true(#r.stdout < 12000 + 100, "kept " .. #r.stdout)
    local dropped = tonumber(r.stdout:match("%[%.%.%. (%d+) bytes left out %.%.%.%]"))
    assert.are.equal(r.stdout_dropped, dropped)
    assert.are.equal(200000000 + 5 - 12000, dropped)
    assert.matches("^a+\n%[%.%.%.", r.stdout)
    assert.matches("a+\nEND\n$", r.stdout)
  end)

  it("notes what the allowlist proxy refused, and the status lists it", function()
    require("flemma_sandbox.run.blocked").clear()
    local cmd = 'p=${HTTPS_PROXY#http://}; exec 3<>"/dev/tcp/${p%:*}/${p##*:}"; '
      .. "printf 'CONNECT evil.test:443 HTTP/1.1\\r\\n\\r\\n' >&3; head -n 1 <&3"
    local r = n.run_job({ "bash", "-c", cmd })
    assert.matches("^HTTP/1.1 403", r.stdout)
    assert.are.same({ "blocked", "evil.test" }, { r.records[1].type, r.records[1].host })
    assert.are.equal(1, #r.records)
    local text = table.concat(require("flemma_sandbox.nvim.status").lines(0), "\n")
    assert.matches("network:    allowlist %(through the proxy to api%.anthropic%.com", text)
    assert.matches("refused lately by the proxy: evil%.test", text)
  end)

  it("refuses bad options with a clear error", function()
    assert.has_error(function()
      require("flemma_sandbox.run.job").run({ "true" }, {})
    end, "flemma-sandbox: job.run: opts.on_exit must be a function")
    assert.has_error(function()
      require("flemma_sandbox.run.job").run({ "true" }, { on_exit = print, timeout_ms = "5" })
    end, "flemma-sandbox: job.run: opts.timeout_ms must be a non-negative number")
    assert.has_error(function()
      require("flemma_sandbox.run.job").run({ "true" }, { on_exit = print })
    end, "flemma-sandbox: job.run: opts.wrap must be a function (flemma_sandbox.wrapper(bufnr) gives one)")
    local wrap = sandbox.wrapper(nil)
    local handle, err = require("flemma_sandbox.run.job").run({}, { on_exit = print, wrap = wrap })
    assert.is_nil(handle)
    assert.matches("inner_cmd", err)
    sandbox.set_enabled(false)
    handle, err = require("flemma_sandbox.run.job").run({ "/nonexistent/program" }, { on_exit = print, wrap = wrap })
    assert.is_nil(handle)
    assert.matches("cannot start /nonexistent/program", err)
  end)
end)
