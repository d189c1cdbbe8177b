--- Host unix sockets the sandbox must not reach. A read-only mount does not
--- stop connect() on a socket file, and a network namespace does not cover
--- sockets with a path: so each one the host has bound is covered.
local core = require("flemma_sandbox.core")
local host = require("flemma_sandbox.host")
local protect = require("flemma_sandbox.policy.protect")

local M = {}

--- Pathname sockets bound on the host, from /proc/net/unix.
---@return string[]
local function bound_sockets()
  local out = {}
  local f = io.open("/proc/net/unix", "r")
  if not f then
    return out
  end
  f:read("*l") -- header
  for line in f:lines() do
    local path = line:match("^%S+%s+%S+%s+%S+%s+%S+%s+%S+%s+%S+%s+%S+%s+(/.*)$")
    if path then
      out[#out + 1] = path
    end
  end
  f:close()
  return out
end

--- Whether the sandbox could reach `path` at all. Unprivileged, it has
--- our own rights, and lstat() already answered. Root in the sandbox's user
--- namespace keeps no rights over files of users it does not map: only
--- root-owned folders and ones searchable by others let it through (and
--- bwrap could not mount over anything else).
---@param path string
---@param privileged boolean
---@return boolean
local function sandbox_reaches(path, privileged)
  if privileged or core.getuid() ~= 0 then
    return true
  end
  local dir = path:match("^(.*)/[^/]+$")
  while dir and dir ~= "" do
    local kind, mode, uid, gid = core.file_type(dir)
    if kind ~= "directory" and kind ~= "link" then
      return false
    end
    local bit = uid == 0 and 64 or gid == 0 and 8 or 1
    if kind == "directory" and math.floor(mode / bit) % 2 == 0 then
      return false
    end
    dir = dir:match("^(.*)/[^/]+$")
  end
  return true
end

--- Host unix sockets the sandbox must not reach that no private folder
--- already takes away: every socket bound on the host outside the writable
--- project folders, plus the folders that hold session sockets.
--- allow_sockets lets chosen ones through.
---@param allow string[] resolved allow_sockets entries
---@param rw string[]
---@param hidden flemma_sandbox.Rule[] already hidden (sockets inside are skipped)
---@param privileged boolean policy.allow_privileged
---@param out_of_view? fun(real: string): boolean in a private folder: unreachable already
---@return flemma_sandbox.Rule[]
function M.hidden(allow, rw, hidden, privileged, out_of_view)
  local hidden_paths = {}
  for _, h in ipairs(hidden) do
    hidden_paths[#hidden_paths + 1] = h.path
  end
  local projects = protect.project_roots(rw)
  local out, seen = {}, {}
  local function consider(path, want_dir, rule)
    local real = path and core.resolve(path, "/")
    if not real or seen[real] or protect.within_any(real, allow) or protect.within_any(real, projects) then
      return
    end
    if protect.within_any(real, hidden_paths) or protect.covers_rw(real, rw) then
      return
    end
    if out_of_view and out_of_view(real) then
      return
    end
    local kind = core.file_type(real)
    if (kind == "socket" or (want_dir and kind == "directory")) and sandbox_reaches(real, privileged) then
      seen[real] = true
      out[#out + 1] = { path = real, rule = rule }
      if kind == "directory" then
        hidden_paths[#hidden_paths + 1] = real
      end
    end
  end
  local runtime = "/run/user/" .. core.getuid()
  for _, dir in ipairs({ runtime, host.getenv("XDG_RUNTIME_DIR"), "/tmp/.X11-unix", "/tmp/.ICE-unix" }) do
    consider(dir, true, "host sockets: session folder")
  end
  for _, path in ipairs({ host.getenv("SSH_AUTH_SOCK"), "/run/docker.sock", "/var/run/docker.sock" }) do
    consider(path, false, "host sockets")
  end
  for _, path in ipairs(bound_sockets()) do
    consider(path, false, "host sockets")
  end
  return out
end

return M
