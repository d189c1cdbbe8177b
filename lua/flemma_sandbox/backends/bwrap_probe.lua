--- Whether bubblewrap works here: on PATH, and a real test sandbox starts
--- (at once, or in the background for the first chat); its version and
--- the options it knows. The backend (backends/bwrap.lua) uses only what
--- this finds.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")

local M = {}

--- Paths of bwrap that started a test sandbox (only successes are kept,
--- so a failure is checked again next time).
---@type table<string, boolean>
local started = {}

local quote = util.shell_quote

--- The words of the test sandbox: the options every sandbox uses.
local TEST_WORDS = { "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent" }

--- Runs `bwrap ... -- true` with the options every sandbox uses; returns
--- nil when it worked, else what bwrap said.
---@param found string the bwrap program
---@return string|nil err
local function try_start(found)
  local words = { quote(found), table.concat(TEST_WORDS, " "), "-- true" }
  -- LuaJIT's popen close() does not report the exit status: print it
  local f = io.popen(table.concat(words, " ") .. " 2>&1 </dev/null; echo __rc=$?")
  if not f then
    return "cannot run " .. found
  end
  local out = f:read("*a") or ""
  f:close()
  local text, code = out:match("^(.-)%s*__rc=(%d+)%s*$")
  if code == "0" then
    return nil
  end
  return (text and text ~= "") and text or ("exit status " .. tostring(code))
end

--- Linux, bwrap on PATH, and a real test sandbox that starts (once per
--- bwrap path; a failure is not remembered, so it is tried again). With
--- opts.start = false the test sandbox is left for later (Flemma asks every
--- backend in its setup(), at Neovim's start-up): check_in_background()
--- or the next call without it starts it.
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param opts? { start: boolean|nil }
---@return boolean ok, string|nil err
function M.available(backend_config, opts)
  if not surroundings.is_linux() then
    return false, "bubblewrap needs Linux (user namespaces)"
  end
  local path = backend_config.path or "bwrap"
  local found, err = core.which(path, surroundings.getenv("PATH"))
  if not found then
    return false, "bubblewrap not found (" .. err .. "); install the bubblewrap package"
  end
  if not started[found] and not (opts and opts.start == false) then
    local failure = try_start(found)
    if failure then
      return false, "bubblewrap cannot start a sandbox here: " .. failure
    end
    started[found] = true
  end
  return true, nil
end

---@type table<string, boolean> bwrap paths whose test sandbox is running
local checking = {}

--- Starts the test sandbox in the background (off the editor's thread),
--- unless this bwrap already passed; done(ok, err) runs in the main loop
--- when it ends. For the first chat buffer, so the first tool call finds
--- the backend checked.
---@param backend_config flemma_sandbox.BwrapConfig|table
---@param done fun(ok: boolean, err: string|nil)
function M.check_in_background(backend_config, done)
  local ok, err = M.available(backend_config, { start = false })
  local found = ok and core.which(backend_config.path or "bwrap", surroundings.getenv("PATH"))
  if not found or started[found] then
    return done(ok, err)
  end
  if checking[found] then
    return
  end
  local uv = vim.uv or vim.loop
  -- bwrap says why on stderr (one pipe may not be both stdout and stderr)
  local out = uv.new_pipe(false)
  local chunks = {}
  checking[found] = true
  local args = vim.list_extend(vim.deepcopy(TEST_WORDS), { "--", "true" })
  local handle
  handle = uv.spawn(found, { args = args, stdio = { nil, nil, out } }, function(code)
    handle:close()
    vim.schedule(function()
      checking[found] = nil
      if code == 0 then
        started[found] = true
        return done(true, nil)
      end
      local text = table.concat(chunks):gsub("%s+$", "")
      done(false, "bubblewrap cannot start a sandbox here: " .. (text ~= "" and text or ("exit status " .. code)))
    end)
  end)
  if not handle then
    checking[found] = nil
    out:close()
    return done(false, "bubblewrap cannot start a sandbox here: cannot run " .. found)
  end
  out:read_start(function(_, data)
    if data then
      chunks[#chunks + 1] = data
    else
      out:close()
    end
  end)
end

---@type table<string, string>
local versions = {}

--- "bubblewrap 0.8.0" as the program prints it, cached per path.
---@param backend_config flemma_sandbox.BwrapConfig|table
---@return string|nil version
function M.version(backend_config)
  local path = backend_config.path or "bwrap"
  if versions[path] == nil then
    local found = core.which(path, surroundings.getenv("PATH"))
    local text = ""
    if found then
      local f = io.popen(quote(found) .. " --version 2>/dev/null")
      text = f and f:read("*l") or ""
      if f then
        f:close()
      end
    end
    versions[path] = text or ""
  end
  return versions[path] ~= "" and versions[path] or nil
end

---@type table<string, table<string, boolean>>
local features = {}

--- The options named in bwrap's --help text.
---@param text string
---@return table<string, boolean>
local function options_in(text)
  local known = {}
  for option in text:gmatch("%-%-([%w-]+)") do
    known[option] = true
  end
  return known
end

--- Options this bwrap knows, read once per path from `bwrap --help`, so
--- newer ones (--disable-userns arrived in 0.8) are used only where present.
---@param backend_config flemma_sandbox.BwrapConfig|table
---@return table<string, boolean>
function M.features(backend_config)
  local path = backend_config.path or "bwrap"
  if not features[path] then
    local found = core.which(path, surroundings.getenv("PATH"))
    local f = found and io.popen(quote(found) .. " --help 2>&1")
    features[path] = options_in(f and f:read("*a") or "")
    if f then
      f:close()
    end
  end
  return features[path]
end

---@type table<string, boolean> bwrap paths whose --help is being read
local reading = {}

--- Reads the options this bwrap knows in the background (for the first
--- chat buffer), so the first tool call does not wait for `bwrap --help`.
---@param backend_config flemma_sandbox.BwrapConfig|table
function M.features_in_background(backend_config)
  local path = backend_config.path or "bwrap"
  local found = not features[path] and not reading[path] and core.which(path, surroundings.getenv("PATH"))
  if not found then
    return
  end
  reading[path] = surroundings.output_in_background(found, { "--help" }, function(stdout, stderr)
    reading[path] = nil
    features[path] = features[path] or options_in(stdout .. stderr)
  end)
end

---@type table<string, boolean>
local overlays = {}

--- Whether this bwrap mounts an overlay here (its --tmp-overlay came in
--- 0.11; the kernel must allow overlayfs in a user namespace): read once
--- per path, from --help and a test mount in a temporary folder.
---@param backend_config flemma_sandbox.BwrapConfig|table
---@return boolean
function M.overlay_works(backend_config)
  local path = backend_config.path or "bwrap"
  if overlays[path] == nil then
    local known = M.features(backend_config)
    local found = core.which(path, surroundings.getenv("PATH"))
    overlays[path] = false
    if found and known["tmp-overlay"] and known["overlay-src"] then
      local dir = vim.fn.tempname() .. "-overlay"
      for _, sub in ipairs({ "lower", "mnt" }) do
        vim.fn.mkdir(dir .. "/" .. sub, "p")
      end
      -- a file made in the overlay, and not in the folder under it
      vim.fn.system({
        found,
        "--dev-bind",
        "/",
        "/",
        "--overlay-src",
        dir .. "/lower",
        "--tmp-overlay",
        dir .. "/mnt",
        "--",
        "touch",
        "--",
        dir .. "/mnt/probe",
      })
      overlays[path] = vim.v.shell_error == 0 and core.file_type(dir .. "/lower/probe") == nil
      vim.fn.system({ "rm", "-rf", "--one-file-system", "--", dir })
    end
  end
  return overlays[path]
end

return M
