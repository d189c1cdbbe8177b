--- Helpers for specs that run inside headless Neovim.
local h = require("support.helpers")

local M = {}

--- Replaces vim.notify; returns the list it fills and a restore function.
---@return { msg: string, level: integer }[] notes, fun() restore
function M.capture_notify()
  local notes, original = {}, vim.notify
  vim.notify = function(msg, level)
    notes[#notes + 1] = { msg = msg, level = level }
  end
  return notes, function()
    vim.notify = original
  end
end

--- Lets the notices of the last action go out (notice.lua sends one
--- line per turn of the event loop, once the turn ends).
function M.flush_notices()
  vim.wait(20)
end

--- Writes a .chat file and opens it (autocmds fire as for a user).
---@param path string
---@param lines string[]
---@return integer bufnr
function M.open_chat(path, lines)
  h.write(path, table.concat(lines, "\n") .. "\n")
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  -- a user's first message comes after the chat's prestart (its `true`
  -- run) ended: a call overlapping it would share its check after the run
  vim.wait(5000, function()
    return not require("flemma_sandbox.nvim.prestart").busy()
  end, 10)
  return vim.api.nvim_get_current_buf()
end

--- Runs a tool call through flemma_sandbox.tools and waits for its result.
---@param name string
---@param input table
---@param opts? table tools.run's options
---@return table result
function M.run_tool(name, input, opts)
  local result
  require("flemma_sandbox.tools").run(name, input, opts or {}, function(r)
    result = r
  end)
  assert(
    vim.wait(20000, function()
      return result ~= nil
    end, 10),
    "the tool call did not finish"
  )
  return result
end

--- Undo (or redo: opts.redo) of a chat's call through the API, without
--- the question (call_undo.lua); waits for it.
---@param bufnr integer
---@param opts? { n: integer|nil, redo: boolean|nil }
---@return flemma_sandbox.UndoReport|nil report, string|nil err
function M.undo_call(bufnr, opts)
  local call_undo = require("flemma_sandbox.api.call_undo")
  local report, err
  call_undo.prepare(bufnr, opts or {}, function(prep, e)
    if not prep then
      err = e
      return
    end
    call_undo.carry_out(prep, function(r)
      report = r
    end)
  end)
  assert(
    vim.wait(20000, function()
      return report ~= nil or err ~= nil
    end, 10),
    "undo did not finish"
  )
  return report, err
end

--- Starts one approved bash call per command in a chat at once, and waits
--- for all of them; their results in the order they finished.
---@param bufnr integer
---@param commands string[]
---@param wait_ms? integer
---@return table[]
function M.run_together(bufnr, commands, wait_ms)
  local results = {}
  for _, command in ipairs(commands) do
    require("flemma_sandbox.tools").run("bash", { command = command }, { bufnr = bufnr, approved = true }, function(r)
      results[#results + 1] = r
    end)
  end
  assert(
    vim.wait(wait_ms or 30000, function()
      return #results == #commands
    end, 10),
    "the tool calls did not finish"
  )
  return results
end

--- Syncs a clone-mode copy (backends/workspace_copies.lua sync) and waits
--- (processing events) until it is done; its error, or nil.
---@param spec flemma_sandbox.WorkspaceSpec
---@param name string the chat's name for the refs
---@return string|nil err
function M.sync_copy(spec, name)
  local err, finished = nil, false
  require("flemma_sandbox.backends.workspace_copies").sync(spec, name, function(e)
    err, finished = e, true
  end)
  assert(
    vim.wait(60000, function()
      return finished
    end, 20),
    "the sync did not finish"
  )
  return err
end

--- Runs job.run and waits (processing events) until on_exit fired.
---@return flemma_sandbox.JobResult result, flemma_sandbox.JobHandle handle
function M.run_job(argv, opts, wait_ms)
  local result
  opts = opts or {}
  opts.on_exit = function(r)
    result = r
  end
  opts.wrap = opts.wrap or require("flemma_sandbox").wrapper(opts.bufnr)
  local handle = assert(require("flemma_sandbox.run.job").run(argv, opts))
  assert(
    vim.wait(wait_ms or 20000, function()
      return result ~= nil
    end, 10),
    "job did not finish"
  )
  return result, handle
end

--- Runs a job like run_job and, while it runs, watches for host processes
--- whose command line holds marker; returns the result and the largest set
--- seen (no fixed sampling time, which a loaded machine can miss).
---@return table result, integer[] seen
function M.run_job_watching(argv, opts, marker)
  local result
  opts.on_exit = function(r)
    result = r
  end
  local seen = {}
  opts.wrap = opts.wrap or require("flemma_sandbox").wrapper(opts.bufnr)
  assert(require("flemma_sandbox.run.job").run(argv, opts))
  assert(
    vim.wait(20000, function()
      if result == nil then
        local now = M.pids_with(marker)
        if #now > #seen then
          seen = now
        end
      end
      return result ~= nil
    end, 20),
    "job did not finish"
  )
  return result, seen
end

--- Host PIDs whose command line contains marker.
---@param marker string
---@return integer[]
function M.pids_with(marker)
  local pids = {}
  for _, entry in ipairs(vim.fn.readdir("/proc")) do
    if entry:match("^%d+$") then
      local f = io.open("/proc/" .. entry .. "/cmdline", "rb")
      if f then
        local cmdline = (f:read("*a") or ""):gsub("%z", " ")
        f:close()
        if cmdline:find(marker, 1, true) then
          pids[#pids + 1] = tonumber(entry)
        end
      end
    end
  end
  return pids
end

--- Whether a process exists and is not a zombie.
---@param pid integer
---@return boolean
function M.alive(pid)
  local f = io.open("/proc/" .. pid .. "/stat", "r")
  if not f then
    return false
  end
  local stat = f:read("*a") or ""
  f:close()
  return not stat:match("^%d+ %b() Z")
end

--- Waits up to 3 s for every pid to be gone (a killed process needs a
--- moment to die and be reaped); returns those still alive.
---@param pids integer[]
---@return integer[]
function M.survivors(pids)
  local function left()
    local out = {}
    for _, pid in ipairs(pids) do
      if M.alive(pid) then
        out[#out + 1] = pid
      end
    end
    return out
  end
  vim.wait(3000, function()
    return #left() == 0
  end, 20)
  local out = left()
  for i, pid in ipairs(out) do
    local f = io.open("/proc/" .. pid .. "/stat", "r")
    out[i] = pid .. " " .. (f and f:read("*l") or "?")
    if f then
      f:close()
    end
  end
  return out
end

--- Digits unique to this run, for finding processes by command line
--- (`sleep 1000.<marker>` is a valid duration).
function M.marker()
  return string.format("%d%05d", math.random(100000, 999999), (vim.uv or vim.loop).hrtime() % 100000)
end

--- Waits ms while the event loop runs (callbacks and jobs go on).
---@param ms integer
function M.pause(ms)
  vim.wait(ms, function()
    return false
  end, 50)
end

--- The state letter of a host pid ("T": stopped), or nil when gone.
---@param pid integer
---@return string?
function M.state_of(pid)
  local f = io.open("/proc/" .. pid .. "/stat", "r")
  local stat = f and f:read("*a") or ""
  if f then
    f:close()
  end
  return stat:match("^%d+ %b() (%a)")
end

--- Sets the plugin up as the live-sandbox specs use it: bwrap, $CWD and
--- /tmp writable, no network; the keys of extra replace those.
---@param extra? table
function M.live_setup(extra)
  local opts = { backend = "bwrap", policy = { rw_paths = { "$CWD", "/tmp" }, network = false } }
  for k, v in pairs(extra or {}) do
    opts[k] = v
  end
  require("flemma_sandbox").setup(opts)
end

---@class support.LiveWorld
---@field dir string the test's temporary folder (XDG_CACHE_HOME is dir/cache)
---@field proj string dir/proj, the current directory during the test

--- A fresh world for each test of the describe block it is called in:
--- before, a temporary dir with dir/proj as the current directory,
--- XDG_CACHE_HOME at dir/cache and M.live_setup(); after, every live
--- sandbox stopped, live.options, the directory, XDG_CACHE_HOME and the
--- setup restored, and dir removed.
---@param set fun(w: support.LiveWorld)
function M.live_world(set)
  local busted = require("busted")
  local live = require("flemma_sandbox.backends.live")
  local w, old_cwd, old_cache, options
  busted.before_each(function()
    -- the sandboxes earlier specs of this Neovim left running, or their
    -- chats' prestarts still waiting, count against sandboxes.max_running
    -- (a prestart would find no room): none is left
    require("flemma_sandbox.nvim.prestart").reset()
    live.stop_all(require("flemma_sandbox.backends.helper").helper())
    local dir = h.tmpdir()
    w = { dir = dir, proj = dir .. "/proj" }
    old_cwd, old_cache = vim.fn.getcwd(), vim.env.XDG_CACHE_HOME
    vim.env.XDG_CACHE_HOME = dir .. "/cache"
    h.sh("mkdir -p " .. h.shell_quote(w.proj))
    vim.cmd("cd " .. vim.fn.fnameescape(w.proj))
    options = live.options
    M.live_setup()
    set(w)
  end)
  busted.after_each(function()
    live.options = options
    -- a prestart still waiting (nvim/prestart.lua) starts nothing of this test's
    require("flemma_sandbox.nvim.prestart").reset()
    live.stop_all(require("flemma_sandbox.backends.helper").helper())
    vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
    vim.env.XDG_CACHE_HOME = old_cache
    require("flemma_sandbox").setup()
    h.rmdir(w.dir)
  end)
end

return M
