--- make bench, part 2 (inside headless Neovim):
---  1. wall time of a `true` tool command through job.run, next to bare bwrap
---     started with jobstart
---  2. wrap_command for a chat buffer (its own folders) and a buffer without a file
---  3. a chat's live sandbox: a warm and a cold call next to Flemma's bare bwrap argv
---  4. Neovim's peak memory (VmHWM) while a command prints 1 GB
vim.opt.runtimepath:prepend(vim.fn.getcwd())
package.path = "spec/?.lua;" .. vim.fn.getcwd() .. "/bench/?.lua;" .. package.path

local job = require("flemma_sandbox.run.job")
local sandbox = require("flemma_sandbox")

local function now_ms()
  return (vim.uv or vim.loop).hrtime() / 1e6
end

local function vm(field)
  for line in io.lines("/proc/self/status") do
    local kb = line:match("^" .. field .. ":%s+(%d+) kB")
    if kb then
      return tonumber(kb) / 1024
    end
  end
end

local function median(samples)
  table.sort(samples)
  return samples[math.floor(#samples / 2) + 1]
end

local function via_job(argv, extra)
  local done
  local opts = {
    wrap = sandbox.wrapper(nil),
    on_exit = function(r)
      done = r
    end,
  }
  for k, v in pairs(extra or {}) do
    opts[k] = v
  end
  assert(job.run(argv, opts))
  vim.wait(600000, function()
    return done ~= nil
  end, 1)
  return done
end

local function via_jobstart(argv)
  local done
  vim.fn.jobstart(argv, {
    on_exit = function()
      done = true
    end,
  })
  vim.wait(60000, function()
    return done
  end, 1)
end

sandbox.setup({ policy = { network = false } })
local RUNS = 30
local wrapped = assert(sandbox.wrap_command({ "true" }))
local rows = {
  {
    "jobstart(bwrap ... true)",
    function()
      via_jobstart(wrapped)
    end,
  },
  {
    "job.run({ 'true' })",
    function()
      via_job({ "true" })
    end,
  },
}
for _, row in ipairs(rows) do
  row[2]()
  local samples = {}
  for i = 1, RUNS do
    local t = now_ms()
    row[2]()
    samples[i] = now_ms() - t
  end
  print(string.format("%-26s median %6.2f ms  (%d runs)", row[1], median(samples), RUNS))
end

-- a chat's own folders: what wrap_command adds for a buffer with a file
-- (its /tmp and home folders made once, then checked each call: folders,
-- not links) next to a buffer without one
do
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  local old_cache = vim.env.XDG_CACHE_HOME
  vim.env.XDG_CACHE_HOME = dir .. "/cache"
  vim.fn.writefile({ "@You:", "hi" }, dir .. "/bench.chat")
  vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/bench.chat"))
  local chat_buf = vim.api.nvim_get_current_buf()
  local plain_buf = vim.api.nvim_create_buf(true, false)
  local CALLS = 2000
  local function per_call(bufnr)
    assert(sandbox.wrap_command({ "true" }, bufnr))
    local t0 = now_ms()
    for _ = 1, CALLS do
      sandbox.wrap_command({ "true" }, bufnr)
    end
    return (now_ms() - t0) * 1000 / CALLS
  end
  local plain, chat = per_call(plain_buf), per_call(chat_buf)
  print(
    string.format(
      "wrap_command per call: buffer without a file %.0f us, chat buffer %.0f us (%.2fx: its folder writable, "
        .. "its own folders checked)",
      plain,
      chat,
      chat / plain
    )
  )
  vim.cmd("bwipeout!")
  vim.env.XDG_CACHE_HOME = old_cache
  vim.fn.delete(dir, "rf")
end

-- a chat's live sandbox: the next call of a chat whose sandbox runs
-- (warm), and a call that starts one (cold: a chat never used), next to
-- Flemma's own bare bwrap argv (network off) in the same run
do
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/proj", "p")
  local old_cache, old_cwd = vim.env.XDG_CACHE_HOME, vim.fn.getcwd()
  vim.env.XDG_CACHE_HOME = dir .. "/cache"
  vim.cmd("cd " .. vim.fn.fnameescape(dir .. "/proj"))
  local project = dir .. "/proj"
  local bare = { "bwrap", "--ro-bind", "/", "/", "--bind", project, project, "--bind", "/tmp", "/tmp" }
  vim.list_extend(bare, { "--dev", "/dev", "--proc", "/proc", "--unshare-user", "--unshare-pid", "--unshare-uts" })
  vim.list_extend(bare, { "--unshare-ipc", "--unshare-net", "--die-with-parent", "--new-session", "true" })
  local chats = 0
  local chat_call = require("calls_anchors").chat_call
  local function new_chat()
    chats = chats + 1
    local file = string.format("%s/proj/c%d.chat", dir, chats)
    vim.fn.writefile({ "@You:", "hi" }, file)
    vim.cmd("edit " .. vim.fn.fnameescape(file))
    return vim.api.nvim_get_current_buf()
  end
  sandbox.setup({ policy = { network = false }, sandboxes = { max_running = 64 } })
  local warm_buf = new_chat()
  chat_call(warm_buf)
  local cold_buf = new_chat()
  chat_call(cold_buf)
  local live = require("flemma_sandbox.backends.live")
  local client = require("flemma_sandbox.backends.helper")
  local helper, init = client.helper(), client.program("init")
  local chat_of = require("flemma_sandbox.policy.chat_dirs").for_buffer
  -- the chat's own bwrap argv, up to the init program, with `true` as its
  -- command: what the sandbox's mounts and namespaces cost by themselves
  local ours = sandbox.wrapper(cold_buf)({ "true" })
  local from = 1
  while ours[from] ~= "bwrap" do
    from = from + 1
  end
  local to = from
  while ours[to + 1] ~= init do
    to = to + 1
  end
  local own_bwrap = vim.list_extend(vim.list_slice(ours, from, to), { "true" })
  vim.fn.system(own_bwrap)
  assert(vim.v.shell_error == 0, "the chat's own bwrap argv runs true")
  local cases = {
    {
      "Flemma's bare bwrap",
      function()
        via_jobstart(bare)
      end,
    },
    {
      -- the least a warm call can be: the command needs a process of its
      -- own, started by one that waits for it (the wrapped argv)
      "floor of a warm call",
      function()
        via_jobstart({ "/bin/sh", "-c", "/bin/true; :" })
      end,
    },
    {
      -- the least a cold call can be: the chat's sandbox set up, nothing
      -- of ours in it (no helper, no supervisor, no seccomp)
      "floor of a cold call",
      function()
        via_jobstart(own_bwrap)
      end,
    },
    {
      "warm call (live)",
      function()
        chat_call(warm_buf)
      end,
    },
    {
      -- the chat's sandbox stopped (idle, reset): every protection set up again
      "cold call (live, stopped)",
      function()
        chat_call(cold_buf)
      end,
      function()
        live.stop(helper, live.dir_for(chat_of(cold_buf)))
      end,
    },
    {
      -- a chat never used: its policy resolved and its folders made too
      "first call of a new chat",
      function()
        chat_call(new_chat())
      end,
    },
  }
  local medians = {}
  for _, case in ipairs(cases) do
    local samples = {}
    for i = 1, 15 do
      if case[3] then
        case[3]() -- not timed
      end
      local t0 = now_ms()
      case[2]()
      samples[i] = now_ms() - t0
    end
    medians[#medians + 1] = median(samples)
  end
  for i, case in ipairs(cases) do
    print(string.format("%-26s median %6.2f ms  %.2fx the bare bwrap", case[1], medians[i], medians[i] / medians[1]))
  end
  live.stop_all(helper)
  vim.cmd("silent! %bwipeout!")
  vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
  vim.env.XDG_CACHE_HOME = old_cache
  vim.fn.delete(dir, "rf")
  sandbox.setup({ policy = { network = false } })
end

local before = vm("VmRSS")
local t = now_ms()
local r = via_job({ "sh", "-c", "head -c 1000000000 /dev/zero | tr '\\000' 'x'" })
print(
  string.format(
    "1 GB of output through job.run: %.1f s, kept %d bytes, Neovim RSS before %.0f MiB, peak (VmHWM) %.0f MiB",
    (now_ms() - t) / 1000,
    #r.stdout,
    before,
    vm("VmHWM")
  )
)
