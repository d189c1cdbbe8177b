--- The bubblewrap backend: checks that bwrap can start a sandbox, and
--- builds the argv through the C core.
local core = require("flemma.sandbox.core")
local host = require("flemma.sandbox.host")

local M = {}

--- Paths of bwrap that started a test sandbox (only successes are kept,
--- so a failure is checked again next time).
---@type table<string, boolean>
local started = {}

--- Single-quotes a word for /bin/sh.
local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- Runs `bwrap ... -- true` with the options every sandbox uses; returns
--- nil when it worked, else what bwrap said.
---@param found string the bwrap program
---@return string|nil err
local function try_start(found)
  local words = { quote(found), "--ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent -- true" }
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
--- bwrap path; a failure is not remembered, so it is tried again).
---@param backend_config flemma.sandbox.BwrapConfig|table
---@return boolean ok, string|nil err
function M.available(backend_config)
  if not host.is_linux() then
    return false, "bubblewrap needs Linux (user namespaces)"
  end
  local path = backend_config.path or "bwrap"
  local found, err = core.which(path, host.getenv("PATH"))
  if not found then
    return false, "bubblewrap not found (" .. err .. "); install the bubblewrap package"
  end
  if not started[found] then
    local failure = try_start(found)
    if failure then
      return false, "bubblewrap cannot start a sandbox here: " .. failure
    end
    started[found] = true
  end
  return true, nil
end

---@type table<string, string>
local versions = {}

--- "bubblewrap 0.8.0" as the program prints it, cached per path.
---@param backend_config flemma.sandbox.BwrapConfig|table
---@return string|nil version
function M.version(backend_config)
  local path = backend_config.path or "bwrap"
  if versions[path] == nil then
    local found = core.which(path, host.getenv("PATH"))
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

--- Options this bwrap knows, read once per path from `bwrap --help`, so
--- newer ones (--disable-userns arrived in 0.8) are used only where present.
---@param backend_config flemma.sandbox.BwrapConfig|table
---@return table<string, boolean>
function M.features(backend_config)
  local path = backend_config.path or "bwrap"
  if not features[path] then
    local found = core.which(path, host.getenv("PATH"))
    local known = {}
    local f = found and io.popen(quote(found) .. " --help 2>&1")
    if f then
      for option in (f:read("*a") or ""):gmatch("%-%-([%w-]+)") do
        known[option] = true
      end
      f:close()
    end
    features[path] = known
  end
  return features[path]
end

---@param policy flemma.sandbox.ResolvedPolicy
---@param backend_config flemma.sandbox.BwrapConfig|table
---@param inner_cmd string[]
---@return string[]|nil argv, string|nil err
function M.wrap(policy, backend_config, inner_cmd)
  if not policy.allow_privileged and M.features(backend_config)["disable-userns"] then
    -- no nested user namespaces: they reopen kernel attack surface
    local extra = { "--disable-userns" }
    for _, arg in ipairs(backend_config.extra_args or {}) do
      extra[#extra + 1] = arg
    end
    backend_config = setmetatable({ extra_args = extra }, { __index = backend_config })
  end
  local argv, err = core.bwrap_argv(policy, backend_config, inner_cmd)
  if not argv then
    return nil, err
  end
  return argv, nil
end

return M
