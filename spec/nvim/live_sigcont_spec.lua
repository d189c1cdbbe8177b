--- What a call left is held between calls (live_hold.c) by SIGSTOP, and
--- only SIGCONT continues it. No process of the sandbox runs to send one,
--- but the kernel sends it for a process that asked beforehand: a POSIX
--- timer whose signal is SIGCONT, an I/O signal set to SIGCONT (an inotify
--- event your edit makes), a parent's death signal or a child's exit
--- signal. The filter (csrc/exec/seccomp.c) refuses each of those; the
--- controls run the same programs on the host, where they work.
local h = require("support.helpers")
local n = require("support.nvim")
local sandbox = require("flemma_sandbox")

local ROOT = vim.fn.getcwd()

--- Compiles spec/support/c/NAME.c to dir/NAME.
---@param dir string
---@param name string
---@return string
local function compile(dir, name)
  local out = dir .. "/" .. name
  h.sh("cc -O2 -o " .. h.shell_quote(out) .. " " .. h.shell_quote(ROOT .. "/spec/support/c/" .. name .. ".c"))
  return out
end

--- The probe's lines as a table.
---@param text string
---@return table<string, string>
local function answers(text)
  local got = {}
  for name, value in text:gmatch("([%w_]+)=(%S+)") do
    got[name] = value
  end
  return got
end

--- Whether wake, run on the host and stopped there by SIGSTOP, is
--- continued by its timer and writes on. A SIGSTOP sent while the timer's
--- SIGCONT is still pending takes that signal out of the queue, and a
--- periodic timer is set again only when its signal is taken: the timer
--- then never fires again. The control tries afresh (on a loaded machine
--- that window is wider), so it fails only when no try is continued.
---@param wake string
---@param out string
---@return boolean
local function stopped_on_host_writes_on(wake, out)
  local job = vim.fn.jobstart({ wake, out })
  assert.is_true(job > 0)
  local pid = vim.fn.jobpid(job)
  n.pause(500)
  vim.loop.kill(pid, "sigstop")
  n.pause(300)
  local stopped_at = vim.fn.getfsize(out)
  n.pause(1500)
  local later = vim.fn.getfsize(out)
  vim.fn.jobstop(job)
  vim.fn.jobwait({ job }, 2000)
  return later > stopped_at
end

describe("a held process cannot have the kernel continue it", function()
  local dir, proj
  n.live_world(function(w)
    dir, proj = w.dir, w.proj
  end)

  it("refuses each way to a later SIGCONT, and keeps the others; control: on the host all work", function()
    local probe = compile(proj, "sigcont_probe")
    local argv = sandbox.wrap_command({ probe })
    local got = answers(vim.fn.system(argv))
    assert.are.same({
      timer_sigcont = "ENOSYS",
      timer_default = "ENOSYS",
      setsig_sigcont = "EPERM",
      setsig_usr1 = "0",
      pdeathsig_sigcont = "EPERM",
      pdeathsig_kill = "0",
      clone_sigcont = "EPERM",
      clone3 = "ENOSYS",
    }, got)
    local host = answers(vim.fn.system({ probe }))
    for _, name in ipairs({ "timer_sigcont", "setsig_sigcont", "pdeathsig_sigcont", "clone_sigcont" }) do
      assert.are.equal("0", host[name], name .. " on the host")
    end
    assert.are_not.equal("ENOSYS", host.clone3)
  end)

  it("a SIGCONT timer's process writes nothing between calls; control: stopped on the host it goes on", function()
    local wake = compile(proj, "sigcont_wake")
    local a = n.open_chat(proj .. "/a.chat", { "@You:", "hi" })
    local marker = n.marker()
    local r = n.run_job({
      "bash",
      "-c",
      string.format("(exec -a wake.%s %s out.%s 2>err.%s &); sleep 0.5; echo ok", marker, wake, marker, marker),
    }, { bufnr = a, wrap = sandbox.wrapper(a) })
    assert.are.equal("ok\n", r.stdout, r.stderr)
    assert.matches("timer_create: Function not implemented", h.read(proj .. "/err." .. marker) or "")
    local before = vim.fn.getfsize(proj .. "/out." .. marker)
    n.pause(1500)
    assert.are.equal(before, vim.fn.getfsize(proj .. "/out." .. marker), "nothing written between calls")

    -- control: the same program, stopped by SIGSTOP on the host, has the
    -- kernel continue it and writes on
    local tries = {}
    for try = 1, 3 do
      tries[try] = stopped_on_host_writes_on(wake, dir .. "/host-out" .. try)
      if tries[try] then
        break
      end
    end
    assert.is_true(tries[#tries], "control: the timer continued it on the host")
  end)
end)
