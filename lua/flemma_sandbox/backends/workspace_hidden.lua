--- What a clone mode copy hides (backends/workspace_copies.lua): the lists
--- its making and its sync read (the secret names, the hidden paths,
--- beside the copy in the chat's workspace folder, which no sandbox
--- sees), the sync's step that holds back a ref whose new commits change
--- or delete a hidden file, and the identity the copy gets.
local git_box = require("flemma_sandbox.backends.git_box")
local core = require("flemma_sandbox.core")
local process = require("flemma_sandbox.base.process")
local notice = require("flemma_sandbox.base.notice")

local M = {}

-- The sync's second step: its arguments and what it does are said in the script.
local SYNC_USER = "workspace_sync_user.sh"

--- The argv of the sync's second step: the caller's binds (the copy
--- read-only, the user's git folder writable at /user.git) and the lists
--- beside the copy, read-only at their own paths.
---@param spec flemma_sandbox.WorkspaceSpec
---@param parent string the copy's parent (the chat's workspace folder)
---@param name string the chat's name
---@param binds string[]
---@return string[]
function M.sync_user_argv(spec, parent, name, binds)
  local lists = { parent .. "/secrets", spec.clone .. ".hidden" }
  for _, path in ipairs(lists) do
    vim.list_extend(binds, { "--ro-bind", path, path })
  end
  return git_box.script_argv(spec.bwrap, binds, SYNC_USER, { spec.top, name, lists[1], lists[2] })
end

--- The identity git resolves for the user's repository (its own config,
--- the user's global one and their includeIf sections): asked of git on
--- the host, in the repository, with no hook and no fsmonitor (config
--- reading runs neither); "" for what is set nowhere (or a repository git
--- refuses to read, one of another owner).
---@param top string
---@return string name, string email
function M.user_identity(top)
  local function get(key)
    local out, code = process.run({
      "git",
      "-c",
      "core.hooksPath=/dev/null",
      "-c",
      "core.fsmonitor=false",
      "-C",
      top,
      "config",
      "--get",
      key,
    })
    if code ~= 0 then
      return ""
    end
    return vim.trim(out)
  end
  return get("user.name"), get("user.email")
end

--- The hidden paths of a spec within its repository, relative and
--- NUL-separated (the copy's making and the sync read them).
---@param spec flemma_sandbox.WorkspaceSpec
---@return string
local function hidden_lines(spec)
  local out = {}
  for _, path in ipairs(spec.hidden) do
    if path ~= spec.top then
      out[#out + 1] = path:sub(#spec.top + 2) .. "\0"
    end
  end
  return table.concat(out)
end

--- Writes the secret names and the hidden paths of a copy beside it (in
--- the chat's workspace folder, which no sandbox sees).
---@param spec flemma_sandbox.WorkspaceSpec
---@return string|nil parent, string|nil err
function M.write_lists(spec)
  local parent, base = spec.clone:match("^(.*)/([^/]+)$")
  local ok, err = core.make_dirs(parent, 448)
  if not ok then
    return nil, err
  end
  ok, err = core.write_atomic(parent, "secrets", git_box.ignore_lines(spec.secrets), 384)
  if ok then
    ok, err = core.write_atomic(parent, base .. ".hidden", hidden_lines(spec), 384)
  end
  if not ok then
    return nil, err
  end
  return parent
end

--- The note on the refs the sync held back (workspace_sync_user.sh's "held" answers),
--- said to the user; nil when none was.
---@param out string
---@return string|nil
function M.held_note(out)
  local refs, commits, files, seen = {}, {}, {}, {}
  local function add(list, item)
    if not seen[list .. item] then
      seen[list .. item] = true
      table.insert(list == "r" and refs or list == "c" and commits or files, item)
    end
  end
  for _, held in ipairs(git_box.answers(out)) do
    if held.answer == "held" and type(held.ref) == "string" and type(held.commit) == "string" then
      add("r", (held.ref:gsub("^refs/remotes/", "")))
      add("c", held.commit:sub(1, 12))
      for _, name in ipairs(type(held.files) == "table" and held.files or {}) do
        add("f", name == "(unreadable-tree)" and "a tree git cannot read" or tostring(name))
      end
    end
  end
  if #refs == 0 then
    return nil
  end
  local note = string.format(
    "%s: %s not updated (commit %s changes or deletes a file hidden from the sandbox by"
      .. " secret_files or a hidden path, or has a tree git cannot read; drop it from the copy's branch)",
    table.concat(files, ", "),
    table.concat(refs, ", "),
    table.concat(commits, ", ")
  )
  notice.say(note, vim.log.levels.WARN)
  return note
end

return M
