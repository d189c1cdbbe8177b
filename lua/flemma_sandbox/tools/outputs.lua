--- Files that keep the whole output of a cut tool result, in Neovim's cache
--- folder: a folder per project (the sandbox of that project sees its own
--- only), and one for runs with the sandbox off (no sandbox sees it). All
--- of them together are capped: the oldest files go first.
local uv = require("flemma_sandbox.base.process").uv()
local util = require("flemma_sandbox.base.util")

local M = {}

--- This project's folder (the working directory's).
---@return string
function M.dir()
  return util.outputs_dir(vim.fn.stdpath("cache"), vim.fn.resolve(vim.fn.getcwd()))
end

--- The folder for the outputs of runs with the sandbox off.
---@return string
function M.unsandboxed_dir()
  return util.unsandboxed_outputs_dir(vim.fn.stdpath("cache"))
end

--- The regular files in dir, and in its subfolders one level down.
---@param dir string
---@param files table[]
---@param depth integer
---@return integer bytes
local function collect(dir, files, depth)
  local total = 0
  local handle = uv.fs_scandir(dir)
  while handle do
    local name = uv.fs_scandir_next(handle)
    if not name then
      break
    end
    local path = dir .. "/" .. name
    local st = uv.fs_lstat(path)
    if st and st.type == "file" then
      files[#files + 1] = { path = path, size = st.size, mtime = st.mtime.sec * 1e9 + st.mtime.nsec }
      total = total + st.size
    elseif st and st.type == "directory" and depth > 0 then
      total = total + collect(path, files, depth - 1)
    end
  end
  return total
end

--- Removes the oldest files until all saved outputs hold at most `keep` bytes.
---@param keep integer
function M.prune(keep)
  local cache = vim.fn.stdpath("cache") .. "/flemma-sandbox"
  local files = {}
  local total = collect(cache .. "/outputs", files, 1) + collect(M.unsandboxed_dir(), files, 0)
  table.sort(files, function(a, b)
    return a.mtime < b.mtime
  end)
  for _, f in ipairs(files) do
    if total <= keep then
      break
    end
    os.remove(f.path)
    total = total - f.size
  end
end

--- Whether folder dir is there (made now, or already): false when it
--- cannot be made, where mkdir() raises E739 (a file in its place, no
--- permission).
---@param dir string
---@return boolean
local function made(dir)
  local ok, result = pcall(vim.fn.mkdir, dir, "p")
  return (ok and result == 1) or vim.fn.isdirectory(dir) == 1
end

--- Makes this project's folder; its path, or nil when it cannot be made.
--- (Its coming changes the policy: the sandbox sees it, policy/private.lua.)
---@return string|nil
function M.make_dir()
  local dir = M.dir()
  return made(dir) and dir or nil
end

--- A fresh file path for one call's output, after making room for a full one.
---@param cap integer bytes the folder may hold
---@param file_max integer bytes one file may hold
---@return string|nil
function M.new_file(cap, file_max)
  local dir = M.make_dir()
  if not dir then
    return nil
  end
  M.prune(math.max(0, cap - file_max))
  return string.format("%s/output-%s-%d.txt", dir, os.date("%Y%m%d-%H%M%S"), uv.hrtime() % 1000000)
end

--- Moves the output file of a run made with the sandbox off out of the
--- project's folder, which sandboxes of the project see.
---@param file string
---@return string|nil path where it is now; nil when it could not be moved (then it is removed)
function M.set_aside(file)
  local dir = M.unsandboxed_dir()
  local dest = dir .. "/" .. vim.fn.fnamemodify(file, ":t")
  if made(dir) and os.rename(file, dest) then
    return dest
  end
  os.remove(file) -- never left where a sandbox could read it
  return nil
end

return M
