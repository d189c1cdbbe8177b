--- Files that keep the whole output of a cut tool result, in Neovim's cache
--- folder. The folder is capped: the oldest files go first.
-- vim.uv from Neovim 0.10; vim.loop before (deprecated on 0.12)
local uv = vim.uv or vim.loop

local M = {}

---@return string
function M.dir()
  return vim.fn.stdpath("cache") .. "/flemma-sandbox/outputs"
end

--- Removes the oldest files until the folder holds at most `keep` bytes.
---@param keep integer
function M.prune(keep)
  local dir = M.dir()
  local files, total = {}, 0
  local handle = uv.fs_scandir(dir)
  while handle do
    local name = uv.fs_scandir_next(handle)
    if not name then
      break
    end
    local st = uv.fs_stat(dir .. "/" .. name)
    if st and st.type == "file" then
      files[#files + 1] = { path = dir .. "/" .. name, size = st.size, mtime = st.mtime.sec * 1e9 + st.mtime.nsec }
      total = total + st.size
    end
  end
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

--- A fresh file path for one call's output, after making room for a full one.
---@param cap integer bytes the folder may hold
---@param file_max integer bytes one file may hold
---@return string|nil
function M.new_file(cap, file_max)
  local dir = M.dir()
  if vim.fn.mkdir(dir, "p") == 0 and vim.fn.isdirectory(dir) == 0 then
    return nil
  end
  M.prune(math.max(0, cap - file_max))
  return string.format("%s/output-%s-%d.txt", dir, os.date("%Y%m%d-%H%M%S"), uv.hrtime() % 1000000)
end

return M
