--- The command line for specs: bin/flemma-sandbox run with a home and
--- state and cache folders of the spec's own, a saved config written as
--- Neovim's setup() writes it, and every sandbox stopped at the end.
local h = require("support.helpers")

local M = {}

M.BIN = vim.fn.getcwd() .. "/bin/flemma-sandbox"

---@class support.CliWorld
---@field base string
---@field home string
---@field proj string a git repository with one commit (a.txt)

--- A fresh world: base/home (HOME), base/proj.
---@param opts? { git?: boolean } git = false: a plain folder
---@return support.CliWorld
function M.world(opts)
  local base = h.tmpdir()
  local w = { base = base, home = base .. "/home", proj = base .. "/proj" }
  vim.fn.mkdir(w.home, "p")
  vim.fn.mkdir(w.proj, "p")
  h.write(w.proj .. "/a.txt", "original\n")
  if not opts or opts.git ~= false then
    h.sh(
      "cd "
        .. h.shell_quote(w.proj)
        .. " && git init -q && git add a.txt && git -c user.email=t@t -c user.name=t commit -qm init"
    )
  end
  return w
end

--- A fresh world for each test of the describe block it is called in:
--- made and given to set before, stopped and removed after.
---@param set fun(w: support.CliWorld)
---@param opts? { git?: boolean }
function M.each_world(set, opts)
  local busted = require("busted")
  local current
  busted.before_each(function()
    current = M.world(opts)
    set(current)
  end)
  busted.after_each(function()
    M.destroy(current)
  end)
end

--- The environment of a run in w.
---@param w support.CliWorld
---@param extra? table<string, string>
---@return table<string, string>
function M.env(w, extra)
  local env = {
    HOME = w.home,
    XDG_STATE_HOME = w.home .. "/.local/state",
    XDG_CACHE_HOME = w.home .. "/.cache",
    SHELL = "/bin/sh",
  }
  for k, v in pairs(extra or {}) do
    env[k] = v
  end
  return env
end

--- The shell line that runs argv (quoted word by word) in w's project
--- with w's environment (M.env(w, opts.env)) and, unless opts.term is
--- false, TERM=xterm-256color; for a terminal (tmux) to run.
---@param w support.CliWorld
---@param argv string[]
---@param opts? { env?: table<string, string>, term?: boolean }
---@return string
function M.shell_line(w, argv, opts)
  opts = opts or {}
  local words = { "cd", h.shell_quote(w.proj), "&&", "env" }
  if opts.term ~= false then
    words[#words + 1] = "TERM=xterm-256color"
  end
  for k, v in pairs(M.env(w, opts.env)) do
    words[#words + 1] = k .. "=" .. h.shell_quote(v)
  end
  for _, a in ipairs(argv) do
    words[#words + 1] = h.shell_quote(a)
  end
  return table.concat(words, " ")
end

--- Saves setup(opts) for w as the user's Neovim does (a real Neovim).
---@param w support.CliWorld
---@param opts table
function M.setup(w, opts)
  local script = w.base .. "/setup.lua"
  h.write(
    script,
    "vim.opt.rtp:prepend("
      .. string.format("%q", vim.fn.getcwd())
      .. ")\n"
      .. "require('flemma_sandbox').setup("
      .. vim.inspect(opts)
      .. ")\n"
  )
  local r =
    h.run({ "nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", "luafile " .. script, "-c", "qa!" }, M.env(w))
  assert(r.code == 0, r.stderr)
  assert(h.read(w.home .. "/.local/state/flemma-sandbox/config.json"), "setup() saved no config")
end

--- Runs bin/flemma-sandbox with args in cwd (default w.proj).
---@param w support.CliWorld
---@param args string[]
---@param opts? { cwd?: string, env?: table<string, string> }
---@return { stdout: string, stderr: string, code: integer }
function M.run(w, args, opts)
  opts = opts or {}
  return h.run(vim.list_extend({ M.BIN }, args), M.env(w, opts.env), opts.cwd or w.proj)
end

--- Starts bin/flemma-sandbox with args without waiting (a job).
---@param w support.CliWorld
---@param args string[]
---@return integer job
function M.start(w, args)
  local job = vim.fn.jobstart(vim.list_extend({ M.BIN }, args), { cwd = w.proj, env = M.env(w) })
  assert(job > 0, "cannot start the command line")
  return job
end

--- The sandbox NAME's folder in w.
---@param w support.CliWorld
---@param name string
---@return string
function M.folder(w, name)
  local project_dirs = vim.fn.glob(w.home .. "/.cache/flemma-sandbox/proj-*", false, true)
  return (project_dirs[1] or "?") .. "/" .. name
end

--- Stops every sandbox of w and removes it.
---@param w support.CliWorld
function M.destroy(w)
  local helper = vim.fn.getcwd() .. "/lua/flemma_sandbox/flemma-sandbox-tool"
  for _, dir in ipairs(vim.fn.glob(w.home .. "/.local/state/flemma-sandbox/live/*", false, true)) do
    vim.fn.system({ helper, "--live-stop", dir })
  end
  h.sh("chmod -R u+w " .. h.shell_quote(w.base) .. " 2>/dev/null; rm -rf " .. h.shell_quote(w.base))
end

--- Host processes whose command line starts with marker ("" when none):
--- the command itself, not the flemma-sandbox or shell that names it.
---@param marker string
---@return string
function M.host_pids(marker)
  return h.host_pids(marker, true)
end

--- Polls (at most 10 s) until fn() is true; its last value.
---@param fn fun(): any
---@return any
function M.eventually(fn)
  local v
  for _ = 1, 100 do
    v = fn()
    if v then
      return v
    end
    vim.loop.sleep(100)
  end
  return v
end

return M
