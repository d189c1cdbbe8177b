--- The sandbox's private folders. The home folder, /tmp and /run are each a
--- fresh, empty tmpfs in every command: what the host keeps there (keys,
--- tokens, shell history, Neovim's shada, session sockets, sockets made
--- while the command runs) is not there to reach, whatever its name. Into
--- them go the writable roots, the home allowlist (policy.home_allow) read-only,
--- what /run must hold for the system (the resolver file) and the
--- allow_sockets entries. A deny list is not needed for these folders, so it
--- does not grow with the machine.
local core = require("flemma_sandbox.core")
local defaults = require("flemma_sandbox.policy.default_lists")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")

local M = {}

--- The default lists (policy/default_lists.lua says what each holds and why).
M.DEFAULT_HOME_ALLOW = defaults.HOME_ALLOW
M.DEFAULT_HOME_WRITABLE = defaults.HOME_WRITABLE

--- What /run must keep for the system to work: NixOS's system profile and
--- setuid wrappers (no_new_privs keeps them unprivileged).
M.RUN_SHOW = { "/run/current-system", "/run/wrappers" }

--- Files in /etc that are often links into /run, followed to what the
--- system needs there (systemd-resolved's or NetworkManager's resolv.conf).
M.ETC_LINKS = { "/etc/resolv.conf" }

---@class flemma_sandbox.Private
---@field folders flemma_sandbox.Rule[] each a fresh tmpfs, with why (write_rule: why a write there is refused
--- where that differs)
---@field inner string[] home_writable folders: a fresh tmpfs each inside the private home (the host need not have them)
---@field readonly string[] private folders remounted read-only once everything is mounted in them
---@field shown string[] bound read-only into them
---@field writable string[] rw roots that become part of the private /tmp (not bound from the host)

---@param path string|nil
---@return string|nil real, when it is a folder
local function real_dir(path)
  local real = path and path ~= "" and core.resolve(path, "/") or nil
  return real and core.file_type(real) == "directory" and real or nil
end

--- The folder of this project's earlier outputs (tools/outputs.lua), shown
--- read-only once it exists: a policy resolved before the first output
--- looks at it (policy/init.lua), so its making is noticed.
---@return string|nil
function M.outputs_path()
  local cache = surroundings.stdpath("cache")
  local cwd = surroundings.cwd()
  local real_cwd = cwd and core.resolve(cwd, "/")
  return cache and real_cwd and core.resolve(util.outputs_dir(cache, real_cwd), "/") or nil
end

--- The home_writable folders: each a fresh tmpfs inside the private home
--- (appended to `inner` and `folders`). Whether one of them is the whole
--- home (then it stays writable).
---@return boolean all_writable
local function home_writable_folders(home, expand, rw, shown, home_writable, folders, inner)
  local all_writable = false
  -- the folder as named under $HOME, not where a host symlink points:
  -- the private home is a fresh tmpfs, with no such link in it
  local named_home = core.normalize(surroundings.getenv("HOME") or "")
  for _, entry in ipairs(home_writable or {}) do
    local real, _, raw = expand(entry)
    raw = raw and core.normalize(raw)
    if raw and raw ~= named_home and core.is_within(raw, named_home) then
      real = home .. raw:sub(#named_home + 1)
    end
    -- inside a writable root or a shown folder it would be made in the
    -- host's folder (a mount point bwrap creates there, or cannot)
    local on_host = false
    for _, list in ipairs({ rw, shown }) do
      for _, path in ipairs(list) do
        on_host = on_host or (real ~= nil and core.is_within(real, path))
      end
    end
    if real == home then
      all_writable = true
    elseif real and not on_host and core.is_within(real, home) then
      inner[#inner + 1] = real
      folders[#folders + 1] = {
        path = real,
        rule = "private home (" .. real .. " in policy.home_writable: each command has its own, thrown away after it)",
      }
    end
  end
  return all_writable
end

--- What the system needs shown in the private folders (appended to
--- `shown`): the init program, the only one of ours that runs inside the
--- sandbox (limits, seccomp), from a plugin folder in the home folder too
--- (lazy.nvim installs under ~/.local/share); the whole outputs of earlier
--- commands of this project, which the bash tool names for read
--- (tools/outputs.lua: the sandbox's own output, read-only; never another
--- project's, nor a run's with the sandbox off); what /run must keep;
--- allow_sockets.
---@param shown string[] appended to
---@param allow_sockets string[]
local function show_system(shown, allow_sockets)
  local so = surroundings.core_so()
  local helper = so and so:gsub("core%.so$", "flemma-sandbox-init")
  if helper and core.exists(helper) then
    shown[#shown + 1] = core.resolve(helper, "/")
  end
  local outputs = M.outputs_path()
  if outputs and core.exists(outputs) then
    shown[#shown + 1] = outputs
  end
  for _, path in ipairs(M.RUN_SHOW) do
    if core.exists(path) then
      shown[#shown + 1] = path
    end
  end
  for _, link in ipairs(M.ETC_LINKS) do
    local real = core.resolve(link, "/")
    if real and core.is_within(real, "/run") and core.exists(real) then
      shown[#shown + 1] = real
    end
  end
  for _, socket in ipairs(allow_sockets) do
    if core.exists(socket) then
      shown[#shown + 1] = socket
    end
  end
end

--- What of `shown` is inside a private folder (a bind matters only there).
---@return string[]
local function inside_folders(shown, folders)
  local inside = {}
  for _, path in ipairs(core.dedupe(shown)) do
    for _, f in ipairs(folders) do
      if core.is_within(path, f.path) then
        inside[#inside + 1] = path
        break
      end
    end
  end
  return inside
end

--- The private folders for a policy and what is shown in them.
---@param home_allow string[] effective entries (expanded by `expand`)
---@param expand fun(entry: string): string|nil
---@param rw string[] resolved writable roots, deduplicated
---@param allow_sockets string[] resolved allow_sockets entries
---@param home_writable? string[] policy.home_writable entries (expanded by `expand`)
---@return flemma_sandbox.Private
function M.folders(home_allow, expand, rw, allow_sockets, home_writable)
  local folders, shown, writable, inner, readonly = {}, {}, {}, {}, {}
  local tmp = "/tmp"
  folders[#folders + 1] = { path = tmp, rule = "private /tmp (each command has its own)" }
  -- $TMPDIR (Flemma lists it as writable) is a folder of the private /tmp
  local tmpdir = real_dir(surroundings.getenv("TMPDIR"))
  for _, root in ipairs(rw) do
    if root == tmp or (root == tmpdir and core.is_within(root, tmp)) then
      writable[#writable + 1] = root
      if root ~= tmp then
        folders[#folders + 1] = { path = root, rule = "private $TMPDIR (in the private /tmp)" }
      end
    end
  end
  folders[#folders + 1] = { path = "/run", rule = "private /run" }
  local home = real_dir(surroundings.getenv("HOME"))
  local whole_home = home == nil or home == "/"
  for _, root in ipairs(rw) do
    whole_home = whole_home or core.is_within(home, root)
  end
  for _, entry in ipairs(home_allow) do
    local real = expand(entry)
    if real and real == home then
      whole_home = true
    elseif real and core.exists(real) and home and core.is_within(real, home) then
      shown[#shown + 1] = real
    end
  end
  if not whole_home then
    local home_rule = { path = home, rule = "private home (not in policy.home_allow)" }
    folders[#folders + 1] = home_rule
    if not home_writable_folders(home, expand, rw, shown, home_writable, folders, inner) then
      readonly[#readonly + 1] = home
      home_rule.write_rule = "private home, read-only: nothing written there would reach the real home "
        .. "(policy.home_writable lists the folders commands may write: a chat keeps its own between its calls, "
        .. "another buffer's command gets them empty)"
    end
  end
  show_system(shown, allow_sockets)
  local inside = inside_folders(shown, folders)
  return { folders = folders, shown = inside, writable = writable, inner = core.dedupe(inner), readonly = readonly }
end

--- bwrap's --dev gives every command its own /dev (the usual device nodes,
--- an empty /dev/shm, its own pts): what the host keeps there (a password
--- manager's decrypted entry in /dev/shm, message queues) is not there to
--- reach. Not a folder made by the policy, so listed apart from `folders`.
M.DEV = { path = "/dev", rule = "private /dev (each command has its own devices and /dev/shm)" }

--- The private folder (and its rule) that takes `real` out of the host's
--- view, or nil when the sandbox sees the host's file there: it is not in a
--- private folder, or lies in a writable root or a shown path inside one.
---@param real string
---@param private flemma_sandbox.Private|nil
---@param rw string[]
---@return flemma_sandbox.Rule|nil
function M.hiding(real, private, rw)
  if not private then
    return nil
  end
  local holder
  for _, f in ipairs(private.folders) do
    if core.is_within(real, f.path) and (not holder or #f.path > #holder.path) then
      holder = f
    end
  end
  if not holder and core.is_within(real, M.DEV.path) then
    holder = M.DEV
  end
  if not holder then
    return nil
  end
  for _, list in ipairs({ rw, private.shown }) do
    for _, path in ipairs(list) do
      -- a root bound into the private folder, not one the folder covers
      if core.is_within(real, path) and #path > #holder.path then
        return nil
      end
    end
  end
  return holder
end

return M
