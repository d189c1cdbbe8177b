--- A chat's own folders. Its /tmp and the writable folders of its private
--- home (policy.home_writable) are kept on disk, in
--- $XDG_CACHE_HOME/flemma-sandbox/<project>-<sha256 of the project's real
--- path>/<chat name>/, so what one tool call of the chat writes there the
--- next one finds, also after Neovim restarts, until the user resets or
--- deletes it (:FlemmaSandbox reset, delete, gc). Another chat has its own.
---
--- The base folder is hidden from every sandbox (policy/init.lua), so no
--- command can plant a link on the way; the host still checks that every
--- folder on the way is a folder, not a link, before bwrap binds it (fail
--- closed), and removes them with rm, which never follows a link.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")

local editor = require("flemma_sandbox.base.editor")
local M = {}

---@class flemma_sandbox.ChatDir
---@field dir string the chat's folder
---@field name string the chat's name (its file's name and a hash of its path)
---@field project string the project's real path (Neovim's working directory)
---@field chat string the chat file's real path

--- The chat file name of a command line sandbox (bin/flemma-sandbox):
--- an empty file in its own folder, so the folder is kept until its
--- project is gone. Its buffer is a chat by its filetype: no frontmatter
--- is read from it.
M.CLI_CHAT = ".cli"

--- What a folder name may hold.
---@param s string
---@return string
local function safe_name(s)
  return (s:gsub("[^%w._-]", "_"))
end

--- The folder of a project's chats.
---@param real_project string
---@return string|nil
function M.project_dir(real_project)
  local base = surroundings.chats_base()
  if not base then
    return nil
  end
  local name = real_project:match("([^/]+)$") or "root"
  return base .. "/" .. safe_name(name) .. "-" .. surroundings.sha256(real_project)
end

--- A chat's name: its file's name without ".chat", and the first eight
--- hex digits of the SHA-256 of its real path (two chats of one name in
--- different folders differ).
---@param real_chat string
---@return string
function M.chat_name(real_chat)
  local stem = (real_chat:match("([^/]+)$") or "chat"):gsub("%.chat$", "")
  return safe_name(stem):sub(1, 60) .. "-" .. surroundings.sha256(real_chat):sub(1, 8)
end

--- Whether a buffer is a chat: its file's name ends in ".chat", or
--- Neovim set its filetype to "chat" (Flemma's).
---@param bufnr integer
---@param file string
---@return boolean
local function is_chat(bufnr, file)
  if file:match("%.chat$") then
    return true
  end
  return editor.present() and bufnr ~= 0 and vim.api.nvim_buf_is_valid(bufnr) and vim.bo[bufnr].filetype == "chat"
    or false
end

--- The chat of a chat buffer with a file, in Neovim's working directory as
--- its project; nil for any other buffer (its calls get fresh folders).
--- name (sandboxes.name, from its frontmatter) replaces the one made from
--- the chat file's: chats of one name share their folders and sandbox.
---@param bufnr integer|nil
---@param name? string|false
---@return flemma_sandbox.ChatDir|nil
function M.for_buffer(bufnr, name)
  local file = bufnr and surroundings.buffer_file(bufnr)
  if file and not is_chat(bufnr, file) then
    return nil
  end
  local cwd = surroundings.cwd()
  local chat = file and core.resolve(file, "/")
  local project = cwd and core.resolve(cwd, "/")
  local project_dir = project and M.project_dir(project)
  if not chat or not project_dir then
    return nil
  end
  name = name or M.chat_name(chat)
  return { dir = project_dir .. "/" .. name, name = name, project = project, chat = chat }
end

--- The chat files that used the chat's folder (more than one where
--- sandboxes.name gives chats one name), as prepare() noted them.
---@param chat flemma_sandbox.ChatDir
---@return string[]
function M.members(chat)
  local out = {}
  local f = io.open(chat.dir .. "/.chats", "rb")
  if f then
    for line in f:lines() do
      if line:sub(1, 1) == "/" then
        out[#out + 1] = line
      end
    end
    f:close()
  end
  return out
end

--- The other chats that used the buffer's chat name (sandboxes.name gives
--- chats one name), sorted real paths; none without a name.
---@param bufnr integer|nil
---@param name? string|false
---@return string[]
function M.others(bufnr, name)
  local chat = name and M.for_buffer(bufnr, name)
  local out = {}
  for _, file in ipairs(chat and M.members(chat) or {}) do
    if file ~= chat.chat and not util.contains(out, file) then
      out[#out + 1] = file
    end
  end
  table.sort(out)
  return out
end

--- Copies the host's file or folder from (never following a link: the
--- caller refused one) to path, written aside and renamed into place, so
--- a copy cut short is never taken for a whole one.
---@param from string
---@param path string
---@return boolean|nil ok, string|nil err
local function copy_in(from, path)
  local aside = path .. ".copying"
  local run = util.run_quietly
  run({ "rm", "-rf", "--one-file-system", "--", aside })
  if not run({ "cp", "-a", "--no-dereference", "--no-target-directory", "--", from, aside }) then
    run({ "rm", "-rf", "--one-file-system", "--", aside })
    return nil, "cannot copy " .. from
  end
  local ok, err = os.rename(aside, path)
  return ok, err
end

--- Makes the folder at path, below base (the chats' folder, which must be
--- a folder itself), one folder at a time, each opened without following
--- a link before the next is made in it (core.make_dirs_beneath): a link
--- on the way is refused before anything is made through it.
---@param base string
---@param path string
---@return boolean|nil ok, string|nil err
local function make_beneath(base, path)
  if path:sub(1, #base + 1) ~= base .. "/" then
    return nil, path .. " is not below " .. base
  end
  if core.file_type(base) == nil then
    core.make_dirs(base, 448)
  end
  if core.file_type(base) ~= "directory" then
    return nil, base .. " is not a folder (a link?)"
  end
  return core.make_dirs_beneath(base, path:sub(#base + 2), 448) -- 0700
end

--- Makes the chat's folders (mode 0700): sub is each folder below the
--- chat's own, e.g. "tmp". Every folder from the base down must be a
--- folder, not a link: one is refused before anything is made through it.
--- Notes the chat file and the project for list and gc.
---@param chat flemma_sandbox.ChatDir
---@param subs string[]
---@param copies? table<string, string> sub -> the host's file or folder it starts as a copy of
---@return boolean|nil ok, string|nil err
function M.prepare(chat, subs, copies)
  local base = surroundings.chats_base()
  for _, sub in ipairs(subs) do
    local path = chat.dir .. "/" .. sub
    local from = copies and copies[sub]
    local ok, err
    if from then
      -- a copy is written into its folder only once that folder is made
      ok, err = make_beneath(base, path:match("^(.*)/[^/]+$"))
      if ok and core.file_type(path) == nil then
        ok, err = copy_in(from, path)
      end
      if ok and core.file_type(path) == "link" then
        ok, err = nil, path .. " is a link"
      end
    else
      ok, err = make_beneath(base, path)
    end
    if not ok then
      return nil, "flemma-sandbox: cannot make the chat's folder: " .. tostring(err)
    end
  end
  -- every chat that used this folder (chats of one sandboxes.name): each
  -- is kept read-only in the sandbox whichever of them calls
  if not util.contains(M.members(chat), chat.chat) then
    local f = io.open(chat.dir .. "/.chats", "ab")
    if f then
      f:write(chat.chat, "\n")
      f:close()
    end
  end
  for name, value in pairs({ chat = chat.chat, project = chat.project }) do
    local file = chat.dir .. "/." .. name
    if core.file_type(file) == nil then
      local f = io.open(file, "wb")
      if f then
        f:write(value, "\n")
        f:close()
      end
    end
  end
  -- its time is the chat's last use (:FlemmaSandbox list)
  local uv = require("flemma_sandbox.base.process").uv()
  if uv then
    local now = os.time()
    uv.fs_utime(chat.dir .. "/.chat", now, now)
  end
  return true
end

--- The host's paths of policy.home_overlay: in the home (not the home
--- itself), there, and no link (its copy would lead out); the others
--- skipped with the reason. None without a chat, which keeps the copies.
---@param entries string[]|nil
---@param expand fun(entry: string): string|nil, string|nil, string|nil
---@param skipped flemma_sandbox.Skipped[]
---@param chat flemma_sandbox.ChatDir|nil
---@return string[]
function M.overlay_paths(entries, expand, skipped, chat)
  local out = {}
  local home = core.resolve(surroundings.getenv("HOME") or "/", "/")
  for _, entry in ipairs(entries or {}) do
    local real, err, raw = expand(entry)
    local why = not real and err
      or not chat and "home_overlay needs a chat or a command line sandbox (it keeps the copy)"
      or (not home or real == home or not core.is_within(real, home)) and "not in the home folder"
      or core.file_type(raw) == "link" and "a link (its copy would lead out of the sandbox)"
      or core.file_type(real) == nil and "not on the host"
      or nil
    if why then
      skipped[#skipped + 1] = { path = entry, reason = "home_overlay: " .. why }
    else
      out[#out + 1] = real
    end
  end
  -- one inside another would be copied into a copy the sandbox writes
  table.sort(out)
  local kept = {}
  for _, real in ipairs(out) do
    local last = kept[#kept]
    if last and (real == last or core.is_within(real, last)) then
      if real ~= last then
        skipped[#skipped + 1] = { path = real, reason = "home_overlay: inside " .. last .. ", whose copy has it" }
      end
    else
      kept[#kept + 1] = real
    end
  end
  return kept
end

--- What a chat keeps on disk between its commands: its /tmp, the
--- home_writable folders of its private home and its copies of the
--- home_overlay paths, each bound from the chat's own folder (below). The
--- private folders' rules say so. Nothing without a chat.
---@param chat flemma_sandbox.ChatDir|nil
---@param private flemma_sandbox.Private
---@param overlay? string[] real paths in the home (policy.home_overlay): each copied at first use
---@return { paths: string[], sources: string[], subs: string[], copies: table<string, string> }
function M.persist(chat, private, overlay)
  local out = { paths = {}, sources = {}, subs = {}, copies = {} }
  if not chat then
    return out
  end
  local home = core.resolve(surroundings.getenv("HOME") or "/", "/")
  for _, f in ipairs(private.folders) do
    local sub
    if f.path == "/tmp" then
      sub = "tmp"
      f.rule = "this chat's /tmp (kept between its commands until :FlemmaSandbox reset)"
    elseif f.path == "/run" then
      sub = "run"
      f.rule = "this chat's /run (kept between its commands until :FlemmaSandbox reset)"
    elseif util.contains(private.inner, f.path) and home and core.is_within(f.path, home) then
      sub = "home" .. f.path:sub(#home + 1)
      f.rule = "this chat's " .. f.path .. " (policy.home_writable: kept between its commands until reset)"
    end
    if sub then
      out.paths[#out.paths + 1] = f.path
      out.sources[#out.sources + 1] = chat.dir .. "/" .. sub
      out.subs[#out.subs + 1] = sub
    end
  end
  -- its copies of home_overlay: sub -> the host's path it is copied from
  for _, path in ipairs(overlay or {}) do
    local sub = "overlay" .. path:sub(#home + 1)
    out.paths[#out.paths + 1] = path
    out.sources[#out.sources + 1] = chat.dir .. "/" .. sub
    out.subs[#out.subs + 1] = sub
    out.copies[sub] = path
  end
  -- its /dev/shm (not among the private folders: --dev makes it)
  out.paths[#out.paths + 1] = "/dev/shm"
  out.sources[#out.sources + 1] = chat.dir .. "/shm"
  out.subs[#out.subs + 1] = "shm"
  return out
end

return M
