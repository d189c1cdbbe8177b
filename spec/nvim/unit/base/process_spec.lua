--- process.lua in Neovim: spawn gives the exit status, the signal and the
--- output; keeps at most max_output bytes of each stream; a timeout and a
--- cancel kill the process and what it started (checked by their pids in
--- /proc); a program that cannot start is an error and no callback; env
--- and cwd reach the process; run and lines wait for it.
local process = require("flemma_sandbox.base.process")
local h = require("support.helpers")

--- Waits for spawn's result (the bound only keeps a broken run from
--- hanging the suite).
local function wait_for(box)
  vim.wait(60000, function()
    return box.result ~= nil
  end, 10)
  return box.result
end

--- Starts argv and waits for its result; the handle too.
local function spawn_wait(argv, opts)
  local box = {}
  local handle, err = process.spawn(argv, opts, function(result)
    box.result = result
  end)
  assert.is_nil(err)
  return wait_for(box), handle
end

--- Whether a pid is gone: no /proc entry, or only its zombie left.
local function gone(pid)
  local f = io.open("/proc/" .. pid .. "/stat", "r")
  if not f then
    return true
  end
  local stat = f:read("*a") or ""
  f:close()
  return stat:match("^%d+ %b() (%a)") == "Z"
end

--- Waits until pid is gone; whether it is (the bound keeps it finite).
local function wait_gone(pid)
  vim.wait(10000, function()
    return gone(pid)
  end, 20)
  return gone(pid)
end

--- The first child of pid, once it has one (/proc's children list).
local function child_of(pid)
  local child
  vim.wait(10000, function()
    local f = io.open(string.format("/proc/%d/task/%d/children", pid, pid), "r")
    child = f and tonumber((f:read("*a") or ""):match("^(%d+)"))
    if f then
      f:close()
    end
    return child ~= nil
  end, 10)
  return child
end

--- A shell that starts a long sleep in the background, prints its pid and
--- waits for it: what it started, to be killed with it.
local SLEEPER = { "/bin/sh", "-c", "sleep 3007 & echo $!; wait" }

describe("process", function()
  it("gives the exit status, stdout and stderr apart", function()
    local r = spawn_wait({ "/bin/sh", "-c", "printf out; printf err >&2; exit 3" })
    assert.are.equal(3, r.code)
    assert.are.equal(0, r.signal)
    assert.are.equal("out", r.stdout)
    assert.are.equal("err", r.stderr)
    assert.is_false(r.timed_out)
    assert.is_false(r.cancelled)
    assert.is_false(r.truncated)
  end)

  it("keeps at most max_output bytes of a stream, and reads the rest to its end", function()
    local r = spawn_wait({ "/bin/sh", "-c", "head -c 1000000 /dev/zero; echo done >&2" }, { max_output = 10 })
    assert.are.equal(0, r.code)
    assert.are.equal(string.rep("\0", 10), r.stdout)
    assert.are.equal("done\n", r.stderr)
    assert.is_true(r.truncated)
  end)

  it("kills the process and what it started when the timeout passes", function()
    local r, handle = spawn_wait(SLEEPER, { timeout = 300 })
    local child = tonumber(r.stdout:match("^(%d+)"))
    assert.is_truthy(child, r.stdout)
    assert.is_true(r.timed_out)
    assert.are.equal(9, r.signal)
    assert.are.equal(137, r.code)
    assert.is_true(wait_gone(handle.pid), "the shell is gone")
    assert.is_true(wait_gone(child), "its sleep is gone")
  end)

  it("kills the process and what it started on cancel, and says so", function()
    local box = {}
    local handle = assert(process.spawn(SLEEPER, {}, function(result)
      box.result = result
    end))
    local child = child_of(handle.pid)
    assert.is_truthy(child, "the shell started its sleep")
    assert.is_false(gone(handle.pid))
    assert.is_false(handle:is_done())
    assert.is_true(handle:kill())
    local r = wait_for(box)
    assert.is_true(r.cancelled)
    assert.is_false(r.timed_out)
    assert.are.equal(9, r.signal)
    assert.is_true(handle:is_done())
    assert.is_true(wait_gone(handle.pid), "the shell is gone")
    assert.is_true(wait_gone(child), "its sleep is gone")
    -- a kill after the end signals nothing
    assert.is_false(handle:kill())
  end)

  it("says why a program cannot start, and never calls back", function()
    local called = false
    local handle, err = process.spawn({ "/nonexistent/flemma-sandbox-no-such" }, {}, function()
      called = true
    end)
    assert.is_nil(handle)
    assert.matches("^cannot start /nonexistent/flemma%-sandbox%-no%-such: ENOENT", err)
    vim.wait(100, function()
      return called
    end)
    assert.is_false(called)
  end)

  it("gives the process its cwd and environment", function()
    local dir = h.tmpdir()
    local real = vim.loop.fs_realpath(dir)
    local r = spawn_wait({ "/bin/sh", "-c", 'pwd; echo "$FLEMMA_PROC_SPEC"' }, {
      cwd = dir,
      env = { "FLEMMA_PROC_SPEC=given", "PATH=/usr/bin:/bin" },
    })
    h.rmdir(dir)
    assert.are.equal(0, r.code)
    assert.are.equal(real .. "\ngiven\n", r.stdout)
  end)

  it("runs and waits: output with stderr, the status, input, lines, bytes", function()
    local out, code = process.run({ "/bin/sh", "-c", "echo out; echo err >&2; exit 4" })
    assert.are.equal(4, code)
    assert.matches("out\n", out)
    assert.matches("err\n", out)
    out, code = process.run({ "/bin/sh", "-c", "echo out; echo err >&2" }, { stderr = "null" })
    assert.are.same({ "out\n", 0 }, { out, code })
    assert.are.same({ "given", 0 }, { process.run({ "cat" }, { input = "given" }) })
    -- no input: stdin is empty (system()'s input of nil would be "null")
    assert.are.same({ "", 0 }, { process.run({ "cat" }) })
    assert.are.same({ {}, 0 }, { process.lines({ "cat" }) })
    assert.are.same({ { "a", "b" }, 0 }, { process.lines({ "printf", "a\\nb\\n" }) })
    assert.are.same({ "a\0b", 0 }, { process.run({ "printf", "a\\0b" }, { raw = true }) })
    assert.is_true(process.quietly({ "true" }))
    assert.is_false(process.quietly({ "false" }))
    assert.are.equal(127, select(2, process.run({ "/nonexistent/flemma-sandbox-no-such" }, { raw = true })))
  end)
end)
