--- run/proc.lua (run in Neovim): the processes and pipes of a job read
--- from /proc: a process's start time (to tell it from a later one with
--- its PID), its descendants, signals only to what is still the process
--- recorded, who holds a pipe, and the child's environment. Every process
--- here is the spec's own (started by it, with its own program names).
local proc = require("flemma_sandbox.run.proc")
local h = require("support.helpers")
local uv = vim.uv or vim.loop

describe("run.proc", function()
  local dir, jobs

  --- Starts argv as a job of the spec's; its pid.
  local function start(argv)
    local job = vim.fn.jobstart(argv)
    assert.is_true(job > 0, vim.inspect(argv))
    jobs[#jobs + 1] = job
    return vim.fn.jobpid(job)
  end

  --- Field 22 of /proc/PID/stat as the kernel documents it: counted after
  --- the last ")" (the name may hold spaces and parentheses).
  local function field22(pid)
    local stat = h.read("/proc/" .. pid .. "/stat")
    local after = stat:match("^.*%) (.*)$")
    local i = 2
    for word in after:gmatch("%S+") do
      i = i + 1
      if i == 22 then
        return word
      end
    end
  end

  local function alive(pid)
    return h.read("/proc/" .. pid .. "/stat") ~= nil and not h.read("/proc/" .. pid .. "/stat"):match("^%d+ %(.*%) Z ")
  end

  before_each(function()
    dir = h.tmpdir()
    jobs = {}
  end)

  after_each(function()
    for _, job in ipairs(jobs) do
      pcall(vim.fn.jobstop, job)
    end
    h.rmdir(dir)
  end)

  describe("start_time", function()
    it("is field 22 of the process's stat, and nil for no process", function()
      local pid = start({ "sleep", "30" })
      assert.are.equal(field22(pid), proc.start_time(pid))
      assert.are.equal(field22(uv.os_getpid()), proc.start_time(uv.os_getpid()))
      assert.is_nil(proc.start_time(2 ^ 22 + 1))
    end)

    it("reads a process whose name holds spaces and parentheses", function()
      for _, name in ipairs({ "a b", "a(b", "x) y", "p)(q", "(z)" }) do
        local copy = dir .. "/" .. name
        os.execute("cp /bin/sleep " .. h.shell_quote(copy) .. " && chmod +x " .. h.shell_quote(copy))
        local pid = start({ copy, "30" })
        vim.wait(2000, function()
          return (h.read("/proc/" .. pid .. "/stat") or ""):find(name, 1, true) ~= nil
        end, 10)
        assert.are.equal(field22(pid), proc.start_time(pid), name)
      end
    end)
  end)

  describe("descendants", function()
    it("lists every process below a pid, with its start time", function()
      local pid = start({ "sh", "-c", "sleep 31 & (sleep 32 & wait) & wait" })
      local tree
      vim.wait(3000, function()
        tree = proc.descendants(pid)
        return #tree >= 3
      end, 20)
      -- sh -> sleep 31 and a subshell -> sleep 32
      assert.are.equal(3, #tree, vim.inspect(tree))
      for _, p in ipairs(tree) do
        assert.are.equal(field22(p.pid), p.start)
      end
      assert.are.same({}, proc.descendants(2 ^ 22 + 1))
    end)
  end)

  describe("signal_list", function()
    it("signals what is still the process recorded, and never one whose start differs", function()
      local a = start({ "sleep", "33" })
      local b = start({ "sleep", "34" })
      proc.signal_list({
        { pid = a, start = proc.start_time(a) },
        { pid = b, start = "1" }, -- another process that reused the PID
        { pid = b, start = nil },
      }, 15)
      vim.wait(2000, function()
        return not alive(a)
      end, 10)
      assert.is_false(alive(a))
      assert.is_true(alive(b))
    end)
  end)

  describe("pipes", function()
    it("names a pipe by its inode and finds the processes that hold it", function()
      local pipe, child_fd = proc.output_pipe()
      assert.is_truthy(child_fd)
      local id = proc.pipe_id(pipe)
      assert.matches("^pipe:%[%d+%]$", id)
      local handle, pid = uv.spawn("sleep", { args = { "35" }, stdio = { nil, child_fd, nil } }, function() end)
      assert.is_truthy(handle)
      uv.fs_close(child_fd)
      assert.are.same({ pid }, proc.pipe_holders({ [id] = true }))
      handle:kill(15)
      vim.wait(2000, function()
        return #proc.pipe_holders({ [id] = true }) == 0
      end, 10)
      assert.are.same({}, proc.pipe_holders({ [id] = true }))
      pipe:close()
      handle:close()
    end)

    it("gives the child's stdin as a real pipe", function()
      local pipe, child_fd = proc.input_pipe()
      assert.is_truthy(child_fd)
      assert.matches("^pipe:", uv.fs_readlink("/proc/self/fd/" .. child_fd))
      uv.fs_close(child_fd)
      pipe:close()
    end)
  end)

  describe("environment", function()
    it("is Neovim's environment with the extra names on top, as NAME=VALUE", function()
      vim.env.FLEMMA_SPEC_PROC = "from-nvim"
      local list = proc.environment({ FLEMMA_SPEC_EXTRA = "x=y", FLEMMA_SPEC_PROC = "over" })
      vim.env.FLEMMA_SPEC_PROC = nil
      local set = {}
      for _, entry in ipairs(list) do
        set[entry] = true
      end
      assert.is_true(set["FLEMMA_SPEC_EXTRA=x=y"])
      assert.is_true(set["FLEMMA_SPEC_PROC=over"])
      assert.is_nil(set["FLEMMA_SPEC_PROC=from-nvim"])
      assert.is_true(set["HOME=" .. vim.env.HOME])
    end)
  end)
end)
