--- The copies kept in the chats' folders (backends/workspace_copies.lua makes
--- them) whose work is not applied, for reset, delete and gc
--- (nvim/sandboxes.lua): found without following a link the sandbox made.
local core = require("flemma_sandbox.core")
local process = require("flemma_sandbox.base.process")
local surroundings = require("flemma_sandbox.base.surroundings")
local workspace = require("flemma_sandbox.policy.clone_plan")

local M = {}

--- The chats' folders at dir, as the chats' base folder lays them out
--- (BASE/PROJECT/CHAT): dir itself when it is a chat's, its own folders
--- when it is a project's; never anything below a chat's folder (its tmp,
--- home, copies), which its sandbox writes. Listed without following a
--- link (core.entries_beneath).
---@param dir string
---@return string[]
local function chats_at(dir)
  local base = surroundings.chats_base()
  local parent = dir:match("^(.*)/[^/]+$")
  if not base or not parent then
    return {}
  end
  if parent:match("^(.*)/[^/]+$") == base then
    return { dir }
  end
  local out = {}
  if parent == base then
    for name, kind in pairs(core.entries_beneath(dir, dir) or {}) do
      if kind == "directory" then
        out[#out + 1] = dir .. "/" .. name
      end
    end
  end
  table.sort(out)
  return out
end

--- The copies in a chat's folder: each folder of its workspace folder
--- whose .git holds the mark of a copy made whole; found beneath the
--- chat's folder without following a link.
---@param chat string
---@return string[]
local function copies_in(chat)
  local out = {}
  for name, kind in pairs(core.entries_beneath(chat, chat .. "/workspace") or {}) do
    local clone = chat .. "/workspace/" .. name
    local git = kind == "directory" and core.entries_beneath(chat, clone .. "/.git")
    if git and git[workspace.USER_OBJECTS] == "directory" and git.config == "file" then
      out[#out + 1] = clone
    end
  end
  table.sort(out)
  return out
end

--- The copies kept under a folder (a chat's, or a project's of chats),
--- each with its chat's name and its repository. The repository is the
--- copy's origin, in its own config (which no sandbox can write), and only
--- when the copy is where that repository's copy is kept
--- (policy/clone_plan.lua clone_for) and the repository is still there.
--- Nothing here follows a link a sandbox made (a `ln -s / tmp/x` in a
--- chat's tmp is not walked).
---@param dir string
---@return { name: string, clone: string, top: string }[]
function M.copies_under(dir)
  local out = {}
  for _, chat in ipairs(chats_at(dir)) do
    for _, clone in ipairs(copies_in(chat)) do
      local name = chat:match("([^/]+)$")
      local config = core.read_beneath(chat, clone .. "/.git/config", 1048576)
      local top = config
        and vim.trim((process.run({ "git", "config", "-f", "-", "remote.origin.url" }, { input = config })))
      if top and top:sub(1, 1) == "/" and workspace.clone_for(chat, top) == clone then
        if core.file_type(top .. "/.git") == "directory" then
          out[#out + 1] = { name = name, clone = clone, top = top }
        end
      end
    end
  end
  return out
end

--- The copies kept under a folder whose work is not applied: "CHAT: the
--- copy of TOP" for each whose last synced tree differs from the one it
--- started from or was last applied.
---@param dir string
---@return string[]
function M.unapplied_under(dir)
  local out = {}
  for _, copy in ipairs(M.copies_under(dir)) do
    local remote = "refs/remotes/sandbox-" .. copy.name
    local argv = { "git", "-C", copy.top, "diff", "--quiet", "--no-ext-diff", remote .. "/base", remote .. "/wip" }
    if select(2, process.run(argv)) == 1 then
      out[#out + 1] = copy.name .. ": the copy of " .. copy.top
    end
  end
  return out
end

return M
