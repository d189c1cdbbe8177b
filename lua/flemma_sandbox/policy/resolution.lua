--- The parts of one resolution of a policy (policy/init.lua's
--- resolve_fresh, without the cache): how a configured path expands, the
--- roots bound from the host, the chat files and the chats' own folders,
--- what the cache watches, the private folders and the network mode.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")

local M = {}

--- The expander of a resolution: a configured path to its real path (nil
--- and the error when it does not expand), the error of resolving it, and
--- the path as written (a protected symlink is protected as a link); both
--- are noted in `looked`.
---@return fun(entry: string): string|nil, string|nil, string|nil
function M.expander(vars, cwd, looked)
  return function(entry)
    local expanded, err = core.expand(entry, vars)
    if not expanded then
      return nil, err
    end
    local resolved, rerr = core.resolve(expanded, cwd)
    local raw = core.absolute(expanded, cwd)
    looked[#looked + 1] = raw
    looked[#looked + 1] = resolved
    return resolved, rerr, raw
  end
end

--- Hides every chat's own folders (no command sees or writes them but
--- through its own chat's binds) and the live sandboxes' sockets
--- (backends/live.lua: a socket on a read-only bind still connects, and
--- another chat's sandbox is another policy), for a buffer's chat.
---@param chat table|nil the chat's folders (chat_dirs.for_buffer)
---@param hidden flemma_sandbox.Rule[] appended to
---@param out_of_view fun(real: string): boolean
---@param looked string[] appended to: both folders, there or not
function M.hide_chats_folders(chat, hidden, out_of_view, looked)
  local chats_base = surroundings.chats_base()
  if chat and chats_base and core.file_type(chats_base) == nil then
    -- made now, so a chat's first call hides it as its later ones do
    -- (and its live sandbox's key stays the same)
    core.make_dirs(chats_base, 448)
  end
  local chats_real = chats_base and core.resolve(chats_base, "/")
  looked[#looked + 1] = chats_real
  if chats_real and core.exists(chats_real) and not out_of_view(chats_real) then
    hidden[#hidden + 1] = { path = chats_real, rule = "the chats' own folders (each chat sees only its own)" }
  end
  local live_base = chat and surroundings.state_dir("live")
  local live_real = live_base and core.resolve(live_base, "/")
  looked[#looked + 1] = live_real
  if live_real and core.exists(live_real) and not out_of_view(live_real) then
    hidden[#hidden + 1] = { path = live_real, rule = "the chats' live sandboxes (their sockets)" }
  end
end

--- What a change of would change this resolution (cache.put): a root
--- itself, not what is in it (the entries that matter, watched names,
--- rules, ".git", are looked at one by one), but what comes and goes at a
--- project's top, since a new folder there may hold a repository; of git,
--- what it reads hooks and links from, not the whole git folder, which
--- changes with every git status (index.lock).
---@param looked string[] appended to
---@param rules flemma_sandbox.Rule[][] protected, watched, links, hidden
function M.note_looked(looked, listed, projects, rules, found, chat_file)
  for _, root in ipairs(listed) do
    looked[#looked + 1] = root
  end
  for _, root in ipairs(projects) do
    looked[#looked + 1] = root .. "/"
  end
  for _, list in ipairs(rules) do
    for _, r in ipairs(list) do
      looked[#looked + 1] = r.path
    end
  end
  for _, dot_git in ipairs(found.dot_gits) do
    looked[#looked + 1] = dot_git
    if core.file_type(dot_git) == "file" then
      looked[#looked + 1] = dot_git .. "/" -- the gitdir it names
    end
  end
  for _, r in ipairs(found.protect) do
    looked[#looked + 1] = r.path
    for _, name in ipairs({ "config", "config.worktree", "commondir" }) do
      looked[#looked + 1] = r.path .. "/" .. name .. "/"
    end
  end
  for _, file in ipairs(found.configs or {}) do
    looked[#looked + 1] = file .. "/" -- the file itself: the home folder changes often
  end
  looked[#looked + 1] = chat_file
end

--- Every path a rule of the projects names, and every chat file it
--- protects, whether or not it is protected or watched now (a file where
--- the rule's folder goes, a folder the user cannot write to, a chat file
--- missing): its coming or going resolves again, also at a project's top,
--- where a plain file made or removed keeps the resolution otherwise
--- (cache.unaffected).
---@param looked string[] appended to
---@param deny_write string[] policy.deny_write, effective
---@param projects string[]
---@param chat_files string[]
function M.note_rule_paths(looked, deny_write, projects, chat_files)
  for _, entry in ipairs(deny_write) do
    local bare = entry:sub(-1) == "/" and entry:sub(1, -2) or entry
    if bare == "$NVIM_RUNTIMEPATH" then
      for _, folder in ipairs(surroundings.runtimepath()) do
        -- (a relative one is no path a watch can follow: protect.protected resolves it anew)
        looked[#looked + 1] = folder:sub(1, 1) == "/" and folder or nil
      end
    elseif not bare:match("^[/~$]") then
      for _, root in ipairs(projects) do
        looked[#looked + 1] = root .. "/" .. bare
      end
    end
  end
  for _, file in ipairs(chat_files) do
    looked[#looked + 1] = file
  end
end

--- The private folders made as tmpfs, and the home_writable folders made
--- inside the private home, not over a host folder (which the host need
--- not have); neither what a chat keeps (persist).
---@return string[] private_paths, string[] inner_tmpfs
function M.private_split(private, persist)
  local private_paths, inner_tmpfs = {}, {}
  for _, f in ipairs(private.folders) do
    if not util.contains(private.inner, f.path) and not util.contains(persist.paths, f.path) then
      private_paths[#private_paths + 1] = f.path
    end
  end
  for _, path in ipairs(private.inner) do
    if not util.contains(persist.paths, path) then
      inner_tmpfs[#inner_tmpfs + 1] = path
    end
  end
  return private_paths, inner_tmpfs
end

--- policy.network as a mode: true and "allowlist" go out through the
--- proxy; "ask": the same proxy, which asks the user about names no entry
--- lists.
---@return "off"|"allowlist"|"ask"|"host"
function M.network_mode_of(policy)
  local configured = policy.network
  return configured == false and "off" or (configured == "host" or configured == "ask") and configured or "allowlist"
end

--- The writable roots bound from the host: /tmp and $TMPDIR as writable
--- roots are the private ones, not the host's; what lies inside them (a
--- project under /tmp) is bound in.
---@return string[]
function M.bound_roots(listed, private)
  local bound = {}
  for _, root in ipairs(listed) do
    if not util.contains(private.writable, root) then
      bound[#bound + 1] = root
    end
  end
  return bound
end

--- The chat file and the other chats that share its folder and sandbox
--- (sandboxes.name), sorted: the same protection whichever of them calls.
---@return string|nil chat_file, string|nil chat_real, string[] chat_files
function M.chat_files_of(bufnr, others)
  local chat_file = surroundings.buffer_file(bufnr)
  local chat_real = chat_file and core.resolve(chat_file, "/")
  local chat_files = { chat_real }
  for _, file in ipairs(others) do
    chat_files[#chat_files + 1] = file
  end
  table.sort(chat_files)
  return chat_file, chat_real, chat_files
end

return M
