--- Whether bubblewrap works here: on PATH, and a real test sandbox starts
--- (at once, or in the background for the first chat); its version and
--- the options it knows. The backend (backends/bwrap.lua) uses only what
--- this finds.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local process = require("flemma_sandbox.base.process")
local background = require("flemma_sandbox.backends.background")

local M = {}

--- Paths of bwrap that started a test sandbox (only successes are kept,
--- so a failure is checked again next time).
---@type table<string, boolean>
local started = {}

--- The words of the test sandbox: the options every sandbox uses.
local TEST_WORDS = { "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent" }

--- Runs `bwrap ... -- true` with the options every sandbox uses; returns
--- nil when it worked, else what bwrap said.
---@param found string the bwrap program
---@return string|nil err
local function try_start(found)
  local argv = { found, unpack(TEST_WORDS) }
  argv[#argv + 1] = "--"
  argv[#argv + 1] = "true"
  -- through the shell, in Neovim too, as before
  local out, code = process.run(argv, { raw = true })
  if code == 0 then
    return nil
  end
  local text = out:gsub("%s+$", "")
  return text ~= "" and text or ("exit status " .. tostring(code))
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
  checking[found] = true
  local argv = vim.list_extend({ found }, TEST_WORDS)
  vim.list_extend(argv, { "--", "true" })
  -- bwrap says why on stderr
  local handle = process.spawn(argv, { stdout = false }, function(result)
    vim.schedule(function()
      checking[found] = nil
      if result.code == 0 then
        started[found] = true
      end
      -- a call waiting for it goes on first: done may start more
      background.ended()
      if result.code == 0 then
        return done(true, nil)
      end
      local text = result.stderr:gsub("%s+$", "")
      local why = text ~= "" and text or ("exit status " .. result.code)
      done(false, "bubblewrap cannot start a sandbox here: " .. why)
    end)
  end)
  if not handle then
    checking[found] = nil
    return done(false, "bubblewrap cannot start a sandbox here: cannot run " .. found)
  end
  background.began()
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
      text = process.run({ found, "--version" }, { stderr = "null" }):match("^[^\n]*")
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
    features[path] = options_in(found and process.run({ found, "--help" }, { raw = true }) or "")
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
    background.ended()
  end)
  if reading[path] then
    background.began()
  end
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
      local _, code = process.run({
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
      overlays[path] = code == 0 and core.file_type(dir .. "/lower/probe") == nil
      process.run({ "rm", "-rf", "--one-file-system", "--", dir })
    end
  end
  return overlays[path]
end

return M
