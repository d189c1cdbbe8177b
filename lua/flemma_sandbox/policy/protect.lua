--- What the sandbox hides and what it keeps read-only inside writable
--- folders: deny_read (with the secret-file scan) and deny_write (with every
--- git folder in a project, and what git reads from outside it). Host unix
--- sockets are covered by the helper (csrc/exec/before_run.c). A protected path
--- that is missing cannot be mounted over: it is watched instead, and what
--- a command creates there is moved to the quarantine when the command
--- ends (csrc/exec/after_run.c).
local core = require("flemma_sandbox.core")
local defaults = require("flemma_sandbox.policy.default_lists")
local surroundings = require("flemma_sandbox.base.surroundings")
local repos_mod = require("flemma_sandbox.policy.repos")

local M = {}

--- The default lists (policy/default_lists.lua says what each holds and why).
M.DEFAULT_DENY_READ = defaults.DENY_READ
M.DEFAULT_DENY_WRITE = defaults.DENY_WRITE
M.DEFAULT_SECRET_FILES = defaults.SECRET_FILES

--- Folders the scan does not enter.
M.SCAN_SKIP = { ".git", "node_modules", ".venv", "venv", "__pycache__" }

--- At most this many secret files per project are hidden (the helper's
--- SECRET_LIMIT); more are reported.
M.SCAN_LIMIT = 1000

---@class flemma_sandbox.SecretScan
---@field roots string[] projects the helper scans right before each command
---@field patterns string[] secret_files
---@field depth integer secret_scan_depth

--- What the helper scans for secret files before each command: the whole
--- of every project (not the shared temp folders, the playground or the
--- XDG folders), so what the tree holds then is what is hidden, at no cost
--- to Neovim.
---@param policy flemma_sandbox.Policy
---@param projects string[]
---@return flemma_sandbox.SecretScan
function M.secret_scan(policy, projects)
  local patterns = M.effective(policy.secret_files)
  local depth = policy.secret_scan_depth or 64
  if depth == 0 or #patterns == 0 then
    return { roots = {}, patterns = patterns, depth = depth }
  end
  return { roots = projects, patterns = patterns, depth = depth }
end

--- The rule hiding `real` as a secret file, by name, as the helper's scan
--- would find it: in a project, within the depth, through no skipped
--- folder. Host-side tools (read, and Flemma's read) ask this.
---@param real string
---@param scan flemma_sandbox.SecretScan|nil
---@return flemma_sandbox.Rule|nil
function M.secret_rule(real, scan)
  local root = scan and M.within_any(real, scan.roots)
  if not root or real == root then
    return nil
  end
  local parts = {}
  for part in real:sub(#root + 2):gmatch("[^/]+") do
    parts[#parts + 1] = part
  end
  if #parts > scan.depth then
    return nil
  end
  for i = 1, #parts - 1 do
    for _, skip in ipairs(M.SCAN_SKIP) do
      if parts[i] == skip then
        return nil
      end
    end
  end
  for _, glob in ipairs(scan.patterns) do
    if core.fnmatch(glob, parts[#parts]) then
      return { path = real, rule = "secret_files" }
    end
  end
end

--- Shared by every program on the host: as a writable path (not a project
--- folder inside one) they get no project entries, and host sockets in them
--- are hidden although they are writable.
M.SHARED_TEMP = { "/tmp", "/var/tmp", "/dev/shm" }

--- The list a layered config value means: entries in order, where "!entry"
--- removes an earlier equal entry.
---@param list string[]|nil
---@return string[]
function M.effective(list)
  local out = {}
  for _, entry in ipairs(list or {}) do
    local removed = entry:match("^!(.+)$")
    if removed then
      for i = #out, 1, -1 do
        if out[i] == removed then
          table.remove(out, i)
        end
      end
    else
      out[#out + 1] = entry
    end
  end
  return out
end

---@param path string
---@param list string[]
---@return string|nil the entry of list that holds path
function M.within_any(path, list)
  for _, root in ipairs(list) do
    if core.is_within(path, root) then
      return root
    end
  end
end

---@param root string
---@return boolean
local function is_shared_temp(root)
  for _, temp in ipairs(M.SHARED_TEMP) do
    if root == temp then
      return true
    end
  end
  return false
end

--- Writable folders that may be projects: not shared temp folders, not
--- the playground, not the XDG cache, data and state folders (Flemma's
--- default rw_paths hold ~/.cache and ~/.local/share: tools keep caches
--- and clones there, often hundreds of thousands of files, and nothing on
--- the host runs from them by itself; the rules for what does, such as
--- $NVIM_CACHE/, still apply). Given the list before dedupe, a project
--- inside /tmp stays a project.
---@param rw string[]
---@return string[]
function M.project_roots(rw)
  local out, seen = {}, {}
  local playground = surroundings.playground_path()
  seen[playground and core.resolve(playground, "/") or ""] = true
  for _, base in ipairs(surroundings.xdg_bases()) do
    seen[core.resolve(base, "/") or ""] = true
  end
  for _, root in ipairs(rw) do
    if not is_shared_temp(root) and not seen[root] then
      seen[root] = true
      out[#out + 1] = root
    end
  end
  return out
end

--- A path may be hidden unless that would also hide a writable folder.
---@param path string
---@param rw string[]
---@return string|nil reason
function M.covers_rw(path, rw)
  for _, root in ipairs(rw) do
    if core.is_within(root, path) then
      return "holds the writable folder " .. root
    end
  end
end

---@class flemma_sandbox.Rule
---@field path string real path
---@field rule string the config entry (or scan) that caused it
---@field dir boolean|nil deny_write: a folder

--- deny_read entries that need a mount (the secret files are found by the
--- helper right before each command: M.secret_scan).
---@param policy flemma_sandbox.Policy
---@param expand fun(entry: string): string|nil, string|nil
---@param rw string[] resolved writable folders
---@param skipped flemma_sandbox.Skipped[]
---@param out_of_view? fun(real: string): boolean already unseen (in a private folder): needs no mount
---@return flemma_sandbox.Rule[]
function M.hidden(policy, expand, rw, skipped, out_of_view)
  local out = {}
  for _, entry in ipairs(M.effective(policy.deny_read)) do
    local real, err = expand(entry)
    if real and out_of_view and out_of_view(real) then -- luacheck: ignore 542
      -- nothing to hide: a private folder holds no host file there
    elseif real and core.exists(real) then
      local reason = M.covers_rw(real, rw)
      if reason then
        skipped[#skipped + 1] = { path = entry, reason = "not hidden: " .. reason }
      else
        out[#out + 1] = { path = real, rule = "deny_read " .. entry }
      end
    elseif err then
      skipped[#skipped + 1] = { path = entry, reason = err }
    end
  end
  return out
end

--- The folders between a writable root and each protected or watched
--- path. Binding each onto itself makes it a mount point, which cannot be
--- renamed or removed: else `mv .git .git-old` and a fresh .git/hooks would
--- get round the protection of the old one, and a symlink put in place of
--- the folder above a watched path (tools/ of a missing tools/hooks) would
--- lead the name elsewhere, where the check after the run does not follow.
---@param protected flemma_sandbox.Rule[]
---@param rw string[]
---@param watched? flemma_sandbox.Rule[]
---@return string[]
function M.pins(protected, rw, watched)
  local out, seen, all = {}, {}, {}
  for _, list in ipairs({ protected, watched or {} }) do
    for _, p in ipairs(list) do
      all[#all + 1] = p
    end
  end
  for _, p in ipairs(all) do
    local root
    for _, r in ipairs(rw) do
      if core.is_within(p.path, r) and (not root or #r > #root) then
        root = r
      end
    end
    local dir = p.path:match("^(.*)/[^/]+$")
    while root and dir and #dir > #root and not seen[dir] do
      seen[dir] = true
      out[#out + 1] = dir
      dir = dir:match("^(.*)/[^/]+$")
    end
  end
  return out
end

---@class flemma_sandbox.Link
---@field path string the link, its folder resolved
---@field target string what it points to, as written
---@field rule string

--- Protected paths that are symlinks in a writable folder (a dotfile kept
--- in a dotfiles repository): the mount lands on the target, so the link
--- itself could be replaced; the check after the run makes it again.
---@param candidates table[]
---@param rw string[]
---@return flemma_sandbox.Link[]
function M.links(candidates, rw)
  local out, seen = {}, {}
  for _, c in ipairs(candidates) do
    local parent, name = (c.raw or c.path or ""):match("^(.*)/([^/]+)$")
    local real_parent = parent and core.resolve(parent == "" and "/" or parent, "/")
    local link = real_parent and (real_parent .. "/" .. name)
    if link and not seen[link] and core.file_type(link) == "link" and M.within_any(real_parent, rw) then
      seen[link] = true
      out[#out + 1] = { path = link, target = core.readlink(link), rule = c.rule }
    end
  end
  return out
end

--- Where each deny_write entry lands: every candidate that lies strictly
--- inside a writable folder. What exists is protected (bound read-only);
--- what is missing is watched: the first missing folder on its way, else a
--- `mkdir -p` inside the sandbox would make the whole chain unseen.
---@param policy flemma_sandbox.Policy
---@param expand fun(entry: string): string|nil, string|nil, string|nil resolved, err, as written
---@param rw string[]
---@param chat_files? string[] real paths: the buffer's own file (its frontmatter sets the
--- policy) and the other chats of its sandbox (sandboxes.name)
---@param own_chat? string the buffer's own, among them
---@param projects? string[] project roots (M.project_roots of the list before dedupe); default from rw
---@param repos? flemma_sandbox.Repos repos.find(projects), or none
---@return flemma_sandbox.Rule[] protected, flemma_sandbox.Rule[] watched, flemma_sandbox.Link[] links
---@return string[] unwritable the folders a missing path is not watched in, since the user cannot
--- write to them: their mode decides it (the policy cache watches their own changes)
function M.protected(policy, expand, rw, chat_files, own_chat, projects, repos)
  local candidates = {}
  for _, file in ipairs(chat_files or {}) do
    if core.exists(file) then
      local rule = file == own_chat and "the chat file (its frontmatter sets this policy)"
        or "another chat of this chat's sandbox (sandboxes.name)"
      candidates[#candidates + 1] = { rule = rule, path = file, dir = false }
    end
  end
  -- the host-side helper trusts what it finds there (check files, the
  -- quarantine, bwrap's argument files): never writable from inside
  -- made now, before anything is watched: else the first run would watch
  -- (and move) the state folder the helper itself is about to use
  local state = surroundings.state_dir("runs") and surroundings.state_dir("quarantine") and surroundings.state_base()
  if state and core.exists(state) then
    candidates[#candidates + 1] = { rule = "flemma-sandbox's own state", path = state, dir = true }
  end
  projects = projects or M.project_roots(rw)
  for _, entry in ipairs(M.effective(policy.deny_write)) do
    local dir = entry:sub(-1) == "/"
    local bare = dir and entry:sub(1, -2) or entry
    if bare == "$NVIM_RUNTIMEPATH" then
      for _, folder in ipairs(surroundings.runtimepath()) do
        candidates[#candidates + 1] = { rule = "deny_write " .. entry, path = folder, dir = true }
      end
    elseif bare:match("^[/~$]") then
      local path, _, raw = expand(bare)
      candidates[#candidates + 1] = { rule = "deny_write " .. entry, path = path, raw = raw, dir = dir }
    else
      for _, root in ipairs(projects) do
        candidates[#candidates + 1] = { rule = "deny_write " .. entry, path = root .. "/" .. bare, dir = dir }
      end
    end
  end
  for _, r in ipairs((repos or repos_mod.NONE).protect) do
    candidates[#candidates + 1] = r
  end
  local protected, watched, seen, unwritable = {}, {}, {}, {}
  local links = M.links(candidates, rw)
  for _, c in ipairs(candidates) do
    local real = c.path and core.resolve(c.path, "/")
    local parent = real and real:match("^(.*)/[^/]+$")
    while parent and parent ~= "" and not core.file_type(parent) do
      real, parent, c = parent, parent:match("^(.*)/[^/]+$"), { rule = c.rule .. " (missing parent)", dir = true }
    end
    if real and not seen[real] and parent and core.file_type(parent == "" and "/" or parent) == "directory" then
      local inside, equal = false, false
      for _, root in ipairs(rw) do
        equal = equal or real == root
        inside = inside or (real ~= root and core.is_within(real, root))
      end
      local kind = core.file_type(real)
      if inside and not equal then
        seen[real] = true
        if kind then
          protected[#protected + 1] = { path = real, rule = c.rule, dir = kind == "directory" }
        elseif core.can_write(parent == "" and "/" or parent) then
          -- a missing path in a folder we cannot write to cannot appear
          -- from inside the sandbox either
          watched[#watched + 1] = { path = real, rule = c.rule, dir = c.dir }
        else
          unwritable[#unwritable + 1] = parent == "" and "/" or parent
        end
      end
    end
  end
  return protected, watched, links, unwritable
end

return M
