--- Review of clone mode's copies (api/clone_mode.lua): what a chat's copy
--- changed since the tree it started from (or since the last apply), and
--- bringing that into the user's working tree, three-way, without
--- committing: the user's own changes are kept, a clash becomes conflict
--- markers. Reads go through git on the user's own repository (the sync
--- put the copy's work there as refs/remotes/sandbox-NAME/*); writes go
--- beneath the repository's folder, never through a link.
local core = require("flemma_sandbox.core")
local process = require("flemma_sandbox.base.process")

local M = {}

---@class flemma_sandbox.Change
---@field top string the repository
---@field path string relative to it
---@field status string "A", "M", "D" or "T" (base to wip)
---@field old_mode string
---@field new_mode string
---@field old_oid string
---@field new_oid string
---@field remote string refs/remotes/sandbox-NAME

--- git in the user's repository, no external diff or textconv; stdout and
--- whether it exited 0.
---@param top string
---@param args string[]
---@return string, boolean
local function git(top, args)
  local argv = { "git", "-C", top, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null" }
  vim.list_extend(argv, args)
  local out, code = process.run(argv)
  return out, code == 0
end

--- git's stdout byte for byte (vim.fn.system turns NUL into SOH): for -z
--- lists and blobs.
---@param top string
---@param args string[]
---@return string
local function git_raw(top, args)
  local argv = { "git", "-C", top, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null" }
  vim.list_extend(argv, args)
  return (process.run(argv, { stderr = "null", raw = true }))
end

--- The changes of one copy, from its sync's refs.
---@param top string
---@param chat_name string
---@return flemma_sandbox.Change[] changes
function M.changes_in(top, chat_name)
  local remote = "refs/remotes/sandbox-" .. chat_name
  local _, has = git(top, { "rev-parse", "-q", "--verify", remote .. "/wip" })
  if not has then
    return {}
  end
  local out = git_raw(top, {
    "diff",
    "--no-ext-diff",
    "--no-textconv",
    "--no-renames",
    "--raw",
    "-z",
    "--abbrev=40",
    remote .. "/base",
    remote .. "/wip",
  })
  local changes, fields = {}, vim.split(out, "\0", { plain = true })
  local i = 1
  while i < #fields do
    local meta, path = fields[i], fields[i + 1]
    local old_mode, new_mode, old_oid, new_oid, status = meta:match("^:(%d+) (%d+) (%x+) (%x+) (%a)")
    if not status or not path then
      break
    end
    changes[#changes + 1] = {
      top = top,
      path = path,
      status = status,
      old_mode = old_mode,
      new_mode = new_mode,
      old_oid = old_oid,
      new_oid = new_oid,
      remote = remote,
    }
    i = i + 2
  end
  return changes
end

--- The unified diff of one copy's changes not applied (base to wip), as
--- git prints it, no external diff or textconv.
---@param top string
---@param chat_name string
---@return string
function M.patch(top, chat_name)
  local remote = "refs/remotes/sandbox-" .. chat_name
  local base, wip = remote .. "/base", remote .. "/wip"
  local out = git(top, { "diff", "--no-ext-diff", "--no-textconv", "--no-renames", base, wip })
  return out
end

--- A blob's content from the user's repository.
---@param top string
---@param oid string
---@return string|nil
function M.blob(top, oid)
  if oid:match("^0+$") then
    return nil
  end
  return git_raw(top, { "cat-file", "blob", oid })
end

--- Whether rel goes through a link (or is one) below top.
---@param top string
---@param rel string
---@return boolean
local function through_link(top, rel)
  local path = top
  for part in rel:gmatch("[^/]+") do
    path = path .. "/" .. part
    local kind = core.file_type(path)
    if kind == "link" then
      return true
    elseif kind == nil then
      return false
    end
  end
  return false
end

--- A path git could never have checked out: absolute, "..", ".git". The
--- copy's objects are the sandbox's: a tree it forged can hold any name.
---@param rel string
---@return boolean
function M.unsafe(rel)
  if rel == "" or rel:sub(1, 1) == "/" then
    return true
  end
  for part in rel:gmatch("[^/]+") do
    if part == ".." or part == "." or part:lower() == ".git" then
      return true
    end
  end
  return false
end

--- Whether a name on rel's way is one the check after a run gave what it
--- moved aside in place (NAME.flemma-quarantine-..., csrc/exec/after_run.c):
--- in a copy that is its quarantine, never the user's file.
---@param rel string
---@return boolean
function M.quarantined(rel)
  for part in rel:gmatch("[^/]+") do
    if part:find(".flemma-quarantine-", 1, true) then
      return true
    end
  end
  return false
end

--- Why the user's file of a change may not be opened or written: a path
--- from the copy's objects that leaves the repository or goes through a
--- link, or what is there is no regular file (a FIFO would block the
--- editor); nil when it may.
---@param c flemma_sandbox.Change
---@return string|nil
function M.refused(c)
  if M.unsafe(c.path) or through_link(c.top, c.path) then
    return "the path goes through a link or out of the repository"
  end
  local kind = core.file_type(c.top .. "/" .. c.path)
  if kind ~= nil and kind ~= "file" then
    return "yours is a " .. kind .. ", not a regular file"
  end
  return nil
end

--- The user's file of a change: its content, nil when it is not there,
--- or false with why when it cannot be read as a regular file beneath the
--- repository (opened without following a link, O_NONBLOCK).
---@param c flemma_sandbox.Change
---@return string|false|nil, string|nil
function M.mine(c)
  local data, err, word = core.read_beneath(c.top, c.top .. "/" .. c.path)
  if data then
    return data
  elseif word == "missing" then
    return nil
  end
  return false, err
end

--- git merge-file of three texts; the result and how many clashes (-1 on
--- an error, binary files among them).
---@param mine string
---@param base string
---@param theirs string
---@return string, integer
local function merge3(mine, base, theirs)
  local names = { os.tmpname(), os.tmpname(), os.tmpname() }
  for i, text in ipairs({ mine, base, theirs }) do
    local f = io.open(names[i], "wb")
    if not f then
      for _, name in ipairs(names) do
        os.remove(name)
      end
      return "", -1
    end
    f:write(text)
    f:close()
  end
  local out, code = process.run({
    "git",
    "merge-file",
    "-p",
    "-L",
    "yours",
    "-L",
    "base",
    "-L",
    "sandbox",
    names[1],
    names[2],
    names[3],
  })
  for _, name in ipairs(names) do
    os.remove(name)
  end
  return out, code > 127 and -1 or code
end

---@class flemma_sandbox.ApplyResult
---@field applied string[] paths brought in
---@field conflicts { path: string, text: string, written: boolean|nil }[] left for the user (written with markers,
--- or a choice)
---@field skipped { path: string, text: string }[] not brought in, and why

--- Brings one change into the user's tree. writable(path) says whether the
--- sandbox's rules let a command write that path (protected names are not
--- brought in either).
---@param c flemma_sandbox.Change
---@param writable fun(path: string): boolean, string|nil
---@param out flemma_sandbox.ApplyResult
function M.apply_one(c, writable, out)
  local full = c.top .. "/" .. c.path
  local function skip(why)
    out.skipped[#out.skipped + 1] = { path = full, text = why }
  end
  local refused = M.refused(c)
  if refused then
    return skip("not brought in: " .. refused)
  end
  if M.quarantined(c.path) then
    return skip("not brought in: what the check after a run moved aside in the copy")
  end
  if c.old_mode == "120000" or c.new_mode == "120000" or c.new_mode == "160000" or c.old_mode == "160000" then
    return skip("not brought in: a link or a submodule (see the copy's commits)")
  end
  local ok, why = writable(full)
  if not ok then
    return skip("not brought in: " .. tostring(why))
  end
  local mine, unread = M.mine(c)
  if mine == false then
    return skip("not brought in: " .. tostring(unread))
  end
  local base = M.blob(c.top, c.old_oid)
  local theirs = M.blob(c.top, c.new_oid)
  local mode = c.new_mode == "100755" and 493 or 420
  ---@param conflict? string what to say when the text holds conflict markers
  local function write(text, conflict)
    local dir = full:match("^(.*)/[^/]+$")
    if dir ~= c.top and core.file_type(dir) == nil then
      local made, err = core.make_dirs(dir, 493)
      if not made then
        return skip("not brought in: " .. tostring(err))
      end
    end
    local done, err = core.write_atomic(c.top, c.path, text, mode)
    if not done then
      return skip("not brought in: " .. tostring(err))
    end
    if conflict then
      -- written, but with markers: a conflict, not also "applied"
      out.conflicts[#out.conflicts + 1] = { path = full, text = conflict, written = true }
    else
      out.applied[#out.applied + 1] = full
    end
  end
  if c.status == "D" then
    if mine == nil then
      return
    elseif mine == base then
      os.remove(full)
      out.applied[#out.applied + 1] = full
    else
      out.conflicts[#out.conflicts + 1] = { path = full, text = "deleted in the copy, changed by you: kept" }
    end
    return
  end
  if mine == theirs then
    return
  elseif mine == nil and c.status ~= "A" then
    out.conflicts[#out.conflicts + 1] = { path = full, text = "changed in the copy, deleted by you: not made again" }
  elseif mine == nil or mine == base then
    write(theirs or "")
  else
    local merged, clashes = merge3(mine, base or "", theirs or "")
    if clashes < 0 then
      out.conflicts[#out.conflicts + 1] = { path = full, text = "changed by both, cannot merge (binary?): yours kept" }
    else
      write(merged, clashes > 0 and (clashes .. " conflict(s): markers in the file") or nil)
    end
  end
end

--- Marks what was brought in as the new starting point in the user's
--- repository (the copy's own mark is backends/workspace_copies.lua's).
---@param top string
---@param remote string
---@return boolean
function M.mark_applied(top, remote)
  local _, ok = git(top, { "update-ref", remote .. "/base", remote .. "/wip" })
  return ok
end

--- Removes the copy's refs from the user's repository (discard).
---@param top string
---@param chat_name string
function M.forget(top, chat_name)
  local out = git(top, { "for-each-ref", "--format=%(refname)", "refs/remotes/sandbox-" .. chat_name .. "/" })
  for ref in out:gmatch("[^\n]+") do
    git(top, { "update-ref", "-d", ref })
  end
end

return M
