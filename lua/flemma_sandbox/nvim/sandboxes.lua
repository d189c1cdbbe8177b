--- The chats' own folders (policy/chat_dirs.lua) seen from the command
--- line: list, reset, delete, gc. Removal runs `rm -rf --one-file-system`
--- in the background (rm never follows a link; the editor never waits) and
--- only on folders found under the base folder by name, each checked to be
--- a folder, not a link.
local chat_dirs = require("flemma_sandbox.policy.chat_dirs")
local client = require("flemma_sandbox.backends.helper")
local core = require("flemma_sandbox.core")
local live = require("flemma_sandbox.backends.live")
local process = require("flemma_sandbox.base.process")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")

local uv = process.uv()

local M = {}

---@class flemma_sandbox.ChatEntry
---@field name string
---@field dir string
---@field chat string|nil the chat file it belongs to (the first of its chats still there)
---@field chats integer how many chats used it (more than one: a shared sandboxes.name)
---@field chat_exists boolean whether any of them is still there
---@field kib integer disk used
---@field used integer|nil last use (seconds since the epoch)
---@field state "running"|"stopped" its live sandbox (backends/live.lua)
---@field processes integer what runs in it besides the sandbox's own
---@field held integer how many of them are held (stopped between calls)

--- A folder's entries that are folders themselves (never links), listed
--- from the folder opened without following a link (core.entries_beneath).
---@param dir string
---@return string[]
local function folders_in(dir)
  local out = {}
  if core.file_type(dir) ~= "directory" then
    return out
  end
  for name, kind in pairs(core.entries_beneath(dir, dir) or {}) do
    local plain = name:match("^[%w._-]+$") and name ~= "." and name ~= ".."
    if plain and kind == "directory" then
      out[#out + 1] = name
    end
  end
  table.sort(out)
  return out
end

--- KiB used by a folder (du counts links as links).
---@param dir string
---@return integer
local function kib_of(dir)
  local out = process.run({ "du", "-sk", "--one-file-system", dir })
  return tonumber(out:match("^(%d+)")) or 0
end

--- The chats kept for a project folder (policy/chat_dirs.lua project_dir).
---@param project_dir string
---@return flemma_sandbox.ChatEntry[]
function M.entries(project_dir)
  local out = {}
  for _, name in ipairs(folders_in(project_dir)) do
    local dir = project_dir .. "/" .. name
    -- every chat that used it (chats of one sandboxes.name share it)
    local members = chat_dirs.members({ dir = dir })
    local first = util.first_line(dir .. "/.chat")
    if #members == 0 and first then
      members = { first }
    end
    local chat, exists = nil, false
    for _, file in ipairs(members) do
      if core.file_type(file) ~= nil then
        chat, exists = chat or file, true
      end
    end
    chat = chat or members[1]
    local stat = uv.fs_stat(dir .. "/.chat")
    local helper = client.helper()
    local live_dir = live.dir_for({ dir = dir })
    local state, processes, held = "stopped", 0, 0
    if helper and live_dir then
      state, processes, held = live.info(helper, live_dir)
    end
    out[#out + 1] = {
      state = state,
      processes = processes,
      name = name,
      held = held,
      dir = dir,
      chat = chat,
      chats = #members,
      chat_exists = exists,
      kib = kib_of(dir),
      used = stat and stat.mtime.sec or nil,
    }
  end
  return out
end

--- This project's folder (Neovim's working directory).
---@return string|nil
function M.current_project_dir()
  local cwd = surroundings.cwd()
  local real = cwd and core.resolve(cwd, "/")
  return real and chat_dirs.project_dir(real)
end

--- What removing dirs would lose: work in a chat's copy not applied.
---@param dirs string[]
---@return string[]
function M.unapplied(dirs)
  local out = {}
  for _, dir in ipairs(dirs) do
    vim.list_extend(out, require("flemma_sandbox.backends.workspace_kept").unapplied_under(dir))
  end
  return out
end

--- One line of the list: a sandbox of a project.
---@param e flemma_sandbox.ChatEntry
---@return string
local function entry_line(e)
  local cli = e.chat and e.chat:sub(-#chat_dirs.CLI_CHAT - 1) == "/" .. chat_dirs.CLI_CHAT
  return string.format(
    "  %-30s %8d KiB  %s  %s  %s%s%s",
    e.name,
    e.kib,
    e.used and os.date("%Y-%m-%d %H:%M", e.used) or "-",
    e.state == "running" and string.format("running (%d, held %d)", e.processes, e.held or 0) or "stopped",
    cli and "command line (flemma-sandbox run)" or e.chat or "?",
    e.chats > 1 and string.format(" (+%d)", e.chats - 1) or "",
    e.chat_exists and "" or " (gone)"
  )
end

--- Lines for :FlemmaSandbox list and `flemma-sandbox list`: this
--- project's sandboxes (Neovim's working directory), or every project's.
---@param all? boolean
---@return string[]
function M.list_lines(all)
  local base = surroundings.chats_base()
  local project_dirs = {}
  if all then
    for _, name in ipairs(base and folders_in(base) or {}) do
      project_dirs[#project_dirs + 1] = base .. "/" .. name
    end
  else
    project_dirs[1] = M.current_project_dir()
  end
  local lines =
    { "flemma-sandbox: the chats' own folders of " .. (all and "every project" or tostring(surroundings.cwd())) }
  local count = 0
  for _, project_dir in ipairs(project_dirs) do
    local entries = M.entries(project_dir)
    if all and #entries > 0 then
      local project = util.first_line(entries[1].dir .. "/.project")
      lines[#lines + 1] = (project or "?") .. (project and core.file_type(project) == "directory" and "" or " (gone)")
    end
    for _, e in ipairs(entries) do
      lines[#lines + 1] = entry_line(e)
      count = count + 1
    end
    if not all then
      lines[#lines + 1] = "  in " .. project_dir
    end
  end
  if count == 0 then
    table.insert(lines, 2, "  none yet (a chat's first tool call makes its folders)")
  end
  return lines
end

--- A function to call once per piece of work: done() after the count-th
--- call, or at once when there is nothing to wait for.
---@param count integer
---@param done fun()
---@return fun()
local function countdown(count, done)
  if count == 0 then
    done()
  end
  return function()
    count = count - 1
    if count == 0 then
      done()
    end
  end
end

--- The chats' folders among dirs, or holding one of them, or in one of
--- them (a project's folder).
---@param dirs string[]
---@return string[]
local function chats_among(dirs)
  local out, seen = {}, {}
  local function add(dir)
    if not seen[dir] and core.file_type(dir .. "/.chat") == "file" then
      seen[dir] = true
      out[#out + 1] = dir
    end
  end
  for _, dir in ipairs(dirs) do
    add(dir)
    add(dir:match("^(.*)/[^/]+$") or dir)
    for _, name in ipairs(folders_in(dir)) do
      add(dir .. "/" .. name)
    end
  end
  return out
end

--- Stops the live sandboxes of the chats among dirs (their processes
--- end; nothing more can write to the folders), then done().
---@param dirs string[]
---@param done fun()
function M.stop_live(dirs, done)
  local helper = client.helper()
  local chats = helper and chats_among(dirs) or {}
  local one_done = countdown(#chats, done)
  for _, chat in ipairs(chats) do
    local live_dir = live.dir_for({ dir = chat })
    if live_dir then
      live.stop(helper, live_dir, one_done)
    else
      one_done()
    end
  end
end

--- Removes folders in the background, once the live sandboxes of the
--- chats among them stopped and the work of the copies among them is kept
--- (nothing is removed when it could not be); done(errors, kept) when all
--- are gone.
---@param dirs string[]
---@param done fun(errors: string[], kept: { top: string, ref: string }[])
function M.remove(dirs, done)
  -- a chat removed whole takes its live sandbox's folder (its key, its
  -- log) with it; reset keeps it
  local whole, all = {}, {}
  for _, dir in ipairs(dirs) do
    whole[dir] = true
    all[#all + 1] = dir
  end
  -- no prestart starts a chat's sandbox again (making its folders) meanwhile
  local prestart, held = require("flemma_sandbox.nvim.prestart"), {}
  for _, chat in ipairs(chats_among(dirs)) do
    local live_dir = live.dir_for({ dir = chat })
    if live_dir then
      prestart.hold(live_dir)
      held[#held + 1] = live_dir
    end
    if
      live_dir
      and (whole[chat] or whole[chat:match("^(.*)/[^/]+$") or ""])
      and core.file_type(live_dir) == "directory"
    then
      all[#all + 1] = live_dir
    end
  end
  local function finish(errors, kept)
    for _, live_dir in ipairs(held) do
      prestart.release(live_dir)
    end
    done(errors, kept)
  end
  M.stop_live(dirs, function()
    M.keep_copies(dirs, function(kept, errors)
      if #errors > 0 then
        return finish(errors, kept) -- nothing removed
      end
      M.remove_now(all, function(errs)
        finish(errs, kept)
      end)
    end)
  end)
end

--- The bwrap the git bwrap runs (the config's).
---@return string
local function bwrap_path()
  local ok, cfg = pcall(require("flemma_sandbox").resolve_config, nil)
  return ok and cfg.backends.bwrap.path or "bwrap"
end

--- Keeps the work of the copies under dirs in their repositories
--- (backends/workspace_keep.lua); done(kept, errors).
---@param dirs string[]
---@param done fun(kept: { top: string, ref: string }[], errors: string[])
function M.keep_copies(dirs, done)
  local items, bwrap = {}, bwrap_path()
  for _, dir in ipairs(dirs) do
    -- a command line sandbox's folder holds its .cli file (policy/chat_dirs.lua)
    local cli = core.file_type(dir .. "/" .. require("flemma_sandbox.policy.chat_dirs").CLI_CHAT) == "file"
    for _, copy in ipairs(require("flemma_sandbox.backends.workspace_kept").copies_under(dir)) do
      local spec = { bwrap = bwrap, top = copy.top, clone = copy.clone, hidden = {}, secrets = {} }
      items[#items + 1] = { spec = spec, name = copy.name, cli = cli }
    end
  end
  require("flemma_sandbox.backends.workspace_keep").keep_all(items, done)
end

--- gc's pruning of kept work older than 14 days, in the repositories that
--- hold some and this project's: a line for each ref deleted, and the
--- errors.
---@return string[] pruned, string[] errors
function M.prune_kept()
  local tops = {}
  local cwd = surroundings.cwd()
  local top = cwd and require("flemma_sandbox.policy.clone_plan").repository_of(core.resolve(cwd, "/") or cwd)
  tops[#tops + 1] = top
  local keep = require("flemma_sandbox.backends.workspace_keep")
  local pruned, errors = keep.prune(bwrap_path(), tops)
  local out = {}
  for _, ref in ipairs(pruned) do
    out[#out + 1] = "pruned kept work older than " .. keep.KEEP_DAYS .. " days: " .. ref
  end
  return out, errors
end

--- Removes folders in the background; done(errors) when all are gone.
---@param dirs string[]
---@param done fun(errors: string[])
function M.remove_now(dirs, done)
  local errors = {}
  if #dirs == 0 then
    return done(errors)
  end
  local one_done = countdown(#dirs, function()
    vim.schedule(function()
      done(errors)
    end)
  end)
  for _, dir in ipairs(dirs) do
    local handle = process.spawn({ "rm", "-rf", "--one-file-system", "--", dir }, {}, function(result)
      if result.code ~= 0 then
        errors[#errors + 1] = dir .. ": rm exited " .. result.code
      end
      one_done()
    end)
    if not handle then
      errors[#errors + 1] = dir .. ": cannot start rm"
      one_done()
    end
  end
end

--- The chat of a buffer, if it has folders.
---@param bufnr integer
---@return flemma_sandbox.ChatDir|nil
function M.chat_of(bufnr)
  -- the chat its policy names (sandboxes.name may set it)
  local chat = require("flemma_sandbox").get_policy(bufnr).chat
  return chat and core.file_type(chat.dir) == "directory" and chat or nil
end

--- What reset removes: the chat's /tmp and home folders (made again by
--- its next tool call); its name and notes stay.
---@param chat flemma_sandbox.ChatDir
---@return string[]
function M.reset_targets(chat)
  local out = {}
  for _, sub in ipairs({ "tmp", "run", "shm", "home", "overlay" }) do
    if core.file_type(chat.dir .. "/" .. sub) == "directory" then
      out[#out + 1] = chat.dir .. "/" .. sub
    end
  end
  return out
end

--- What gc removes: projects whose folder is gone, and chats whose file is
--- (a shared name's folder once every chat of it is gone).
---@return string[]
function M.gc_targets()
  local base = surroundings.chats_base()
  local out = {}
  for _, project in ipairs(base and folders_in(base) or {}) do
    local project_dir = base .. "/" .. project
    local entries = M.entries(project_dir)
    local gone_project = true
    for _, e in ipairs(entries) do
      local real_project = util.first_line(e.dir .. "/.project")
      gone_project = gone_project and not (real_project and core.file_type(real_project) == "directory")
    end
    if gone_project then
      out[#out + 1] = project_dir
    else
      for _, e in ipairs(entries) do
        if not e.chat_exists then
          out[#out + 1] = e.dir
        end
      end
    end
  end
  return out
end

return M
