--- Helpers for specs under plain LuaJIT: temporary folders, files, running
--- an argv and capturing its output and exit code.
local M = {}

--- Single-quotes a word for /bin/sh.
---@param s string
---@return string
function M.shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- The output of a shell command.
---@param cmd string
---@return string
local function capture(cmd)
  local f = assert(io.popen(cmd, "r"))
  local out = f:read("*a")
  f:close()
  return out
end
M.capture = capture

--- A fresh folder under /var/tmp, outside the default rw_paths (resolved, so comparisons with resolved paths hold).
---@return string
function M.tmpdir()
  local dir = capture("mktemp -d /var/tmp/flemma-spec.XXXXXX"):gsub("%s+$", "")
  assert(dir ~= "", "mktemp failed")
  return require("flemma_sandbox.core").resolve(dir)
end

---@param dir string
function M.rmdir(dir)
  assert(dir:match("^/var/tmp/flemma%-spec%."), "refusing to remove " .. dir)
  os.execute("chmod -R u+rwX " .. M.shell_quote(dir) .. " 2>/dev/null; rm -rf " .. M.shell_quote(dir))
end

---@param path string
---@param content string
function M.write(path, content)
  local f = assert(io.open(path, "wb"))
  f:write(content)
  f:close()
end

---@param path string
---@return string|nil
function M.read(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  return s
end

--- The script an install spec runs inside the installed Neovim (absolute:
--- the specs run Neovim in other folders).
M.INSTALL_CHECK = (os.getenv("PWD") or ".") .. "/spec/support/install_check.lua"

--- Starts Neovim with init (an init.lua's text, written to T/init.lua) in a
--- fresh HOME under t, runs INSTALL_CHECK there and asserts what a user
--- checks first: the command, the help, the health check, a command run
--- in the sandbox.
---@param t string the spec's folder (holds home/ and project/)
---@param init string
function M.check_install(t, init)
  local assert = require("luassert")
  M.write(t .. "/init.lua", init)
  local argv = { "timeout", "120", "nvim", "--headless", "-i", "NONE", "-u", t .. "/init.lua" }
  for _, word in ipairs({ "-c", "luafile " .. M.INSTALL_CHECK, "-c", "cquit 1" }) do
    argv[#argv + 1] = word
  end
  local r = M.run(argv, { HOME = t .. "/home", T = t }, t .. "/project")
  local result = M.read(t .. "/result") or ("no result:\n" .. r.stderr .. r.stdout)
  assert.matches("command=2\n", result)
  assert.matches("help=flemma%-sandbox%.txt\n", result)
  assert.matches("health=true", result)
  assert.matches("health_found=true\n", result)
  assert.matches("output=ran\n", result)
  assert.is_nil(M.read(t .. "/outside-wrapped"))
end

--- Copies this tree (the working directory) to dest as a user's clone
--- would hold it: built files left out, owned by whoever runs the spec (as
--- root, tar would keep the test user's ownership and git would refuse it).
---@param dest string
function M.copy_tree(dest)
  M.sh("mkdir -p " .. M.shell_quote(dest))
  M.sh(
    "tar -c --exclude=.git --exclude='*.so' --exclude='*.o' "
      .. "--exclude='lua/flemma_sandbox/flemma-sandbox-*' --exclude=doc/tags "
      .. "--exclude=fuzz/bin . | tar -x --no-same-owner -C "
      .. M.shell_quote(dest)
  )
end

---@param cmd string shell command
function M.sh(cmd)
  local out = capture("(" .. cmd .. ") 2>&1; echo __rc=$?")
  local body, rc = out:match("^(.-)__rc=(%d+)%s*$")
  assert(rc == "0", "command failed: " .. cmd .. "\n" .. tostring(body))
end

--- Runs argv (no shell between) and returns stdout, stderr and exit code.
---@param argv string[]
---@param env? table<string, string> extra environment variables
---@param cwd? string working directory
---@return { stdout: string, stderr: string, code: integer }
function M.run(argv, env, cwd)
  local words = { cwd and ("cd " .. M.shell_quote(cwd) .. " &&") or nil }
  for k, v in pairs(env or {}) do
    words[#words + 1] = k .. "=" .. M.shell_quote(v)
  end
  for _, w in ipairs(argv) do
    words[#words + 1] = M.shell_quote(w)
  end
  local err_file = os.tmpname()
  local out = capture(table.concat(words, " ") .. " 2>" .. err_file .. " </dev/null; echo __rc=$?")
  local stdout, rc = out:match("^(.-)__rc=(%d+)%s*$")
  local stderr = M.read(err_file) or ""
  os.remove(err_file)
  return { stdout = stdout or out, stderr = stderr, code = tonumber(rc) or -1 }
end

--- Runs a wrapped argv like M.run, and reads the run's records as
--- Neovim's runner does (run/records.lua): r.records, in order.
---@param argv string[] what wrap_command made
---@param env? table<string, string>
---@param cwd? string
---@param record? flemma_sandbox.WrapRecord wrap_command's third value
---@return { stdout: string, stderr: string, code: integer, records: table[] }
function M.run_wrapped(argv, env, cwd, record)
  local records = require("flemma_sandbox.run.records")
  if record then
    records.create_file(record.records_file)
  end
  local r = M.run(argv, env, cwd)
  r.records = record and records.take_file(record.records_file) or {}
  return r
end

--- The check after a run of the check file at path, as the helper does it
--- for a run whose host side was killed (flemma-sandbox-tool
--- --check-after): its records, and whether the helper exited 0.
---@param path string NAME.check
---@return table[] records, boolean ok
function M.check_after(path)
  local records = require("flemma_sandbox.run.records")
  local base = path:gsub("%.check$", "")
  M.sh("cp " .. M.shell_quote(path) .. " " .. M.shell_quote(base .. ".running") .. " 2>/dev/null; true")
  records.create(path)
  local helper = assert(require("flemma_sandbox.backends.helper").helper())
  local ok =
    os.execute(M.shell_quote(helper) .. " --check-after " .. M.shell_quote(base .. ".running") .. " 2>/dev/null")
  return records.take(path), (ok == 0 or ok == true)
end

--- The records of one type in a list of records.
---@param list table[]
---@param kind string
---@return table[]
function M.records_of(list, kind)
  local out = {}
  for _, rec in ipairs(list or {}) do
    if rec.type == kind then
      out[#out + 1] = rec
    end
  end
  return out
end

--- Leaves only one registered backend, which is never available.
---@param name string
---@param reason string what its available() says
function M.only_unavailable_backend(name, reason)
  local sandbox = require("flemma_sandbox")
  sandbox.clear()
  sandbox.register(name, {
    available = function()
      return false, reason
    end,
    wrap = function()
      error("wrap() of an unavailable backend must not be called")
    end,
  })
end

--- Whether the suite runs as root (root behaves differently in namespaces).
---@return boolean
--- Host processes whose command line contains marker (with anchored,
--- starts with it: the command itself, not a program that names it);
--- "" when there are none.
---@param marker string
---@param anchored? boolean
---@return string
function M.host_pids(marker, anchored)
  -- "[s]leep" so the shell running pgrep does not match itself
  local pattern = (anchored and "^" or "") .. "[" .. marker:sub(1, 1) .. "]" .. marker:sub(2)
  return (M.capture("pgrep -f -- " .. M.shell_quote(pattern) .. " || true"):gsub("%s+$", ""))
end

function M.is_root()
  return capture("id -u"):match("^0") ~= nil
end

--- What surroundings.use takes for a project: the working directory from
--- cwd() (a function, so a spec can move it), HOME at home, no XDG_
--- folder set (the plugin's own defaults under that home), the rest of the
--- environment as it is; extra's fields are added (runtimepath, ...).
---@param cwd fun(): string
---@param home string
---@param extra? table
---@return table
function M.project_surroundings(cwd, home, extra)
  local stand_in = {
    cwd = cwd,
    getenv = function(name)
      if name == "HOME" then
        return home
      end
      return not name:match("^XDG_") and os.getenv(name) or nil
    end,
  }
  for key, value in pairs(extra or {}) do
    stand_in[key] = value
  end
  return stand_in
end

return M
