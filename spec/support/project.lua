--- A git project for the specs of checkpoints and clone mode: made in a
--- folder of its own with the chats' cache folder beside it, Neovim's
--- working directory while a spec runs; and what its tree and repository
--- look like, to compare before and after.
local h = require("support.helpers")

local M = {}

---@class spec.Project
---@field dir string the spec's folder
---@field proj string the project in it
---@field old_cwd string
---@field old_cache string|nil

--- Makes dir/proj, runs script (sh) in it, and makes it the working
--- directory; the chats' folders go to dir/cache.
---@param script string
---@return spec.Project
function M.enter(script)
  local p = { dir = h.tmpdir(), old_cwd = vim.fn.getcwd(), old_cache = vim.env.XDG_CACHE_HOME }
  p.proj = p.dir .. "/proj"
  vim.env.XDG_CACHE_HOME = p.dir .. "/cache"
  h.sh("mkdir -p " .. h.shell_quote(p.proj) .. " && cd " .. h.shell_quote(p.proj) .. " && " .. script)
  vim.cmd("cd " .. vim.fn.fnameescape(p.proj))
  return p
end

--- Stops the chats' sandboxes, and puts back what enter() changed.
---@param p spec.Project
function M.leave(p)
  require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
  vim.cmd("cd " .. vim.fn.fnameescape(p.old_cwd))
  vim.env.XDG_CACHE_HOME = p.old_cache
  require("flemma_sandbox").setup()
  h.rmdir(p.dir)
end

--- Waits up to ms (15 s by default) for clone mode's syncs to end;
--- whether they did.
---@param ms? integer
---@return boolean
function M.synced(ms)
  return vim.wait(ms or 15000, function()
    return require("flemma_sandbox.api.clone_mode").syncing == 0
  end, 20)
end

--- A fresh project for each test of the describe block it is called in:
--- enter(script) and given to set before; after, clone mode's syncs
--- waited for (M.synced) and leave().
---@param script string
---@param set fun(p: spec.Project)
function M.each(script, set)
  local busted = require("busted")
  local p
  busted.before_each(function()
    p = M.enter(script)
    set(p)
  end)
  busted.after_each(function()
    M.synced()
    M.leave(p)
  end)
end

--- Every file and link under dir but .git (every folder too with
--- folders), with its mode and kind; each file's content hash; each
--- link's target. Sorted.
---@param dir string
---@param folders? boolean
---@return string
function M.manifest(dir, folders)
  local which = folders and "" or "\\( -type f -o -type l \\) "
  return h.run({
    "sh",
    "-c",
    'cd "$1" && find . -path ./.git -prune -o '
      .. which
      .. "-printf '%p %m %y\\n' | LC_ALL=C sort"
      .. " && find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum"
      .. " && find . -path ./.git -prune -o -type l -printf '%p -> %l\\n' | LC_ALL=C sort",
    "sh",
    dir,
  }).stdout
end

--- What the repository says of itself: index, status, refs (those under
--- refs, default all), stash, HEAD, what its git folder holds.
---@param dir string
---@param refs? string e.g. "refs/heads refs/tags"
---@return string
function M.repo_state(dir, refs)
  local out = h.run({
    "sh",
    "-c",
    'cd "$1" && git ls-files --stage && GIT_OPTIONAL_LOCKS=0 git status --porcelain=v1 --ignored'
      .. " && git for-each-ref $2 && git stash list && cat .git/HEAD && git rev-parse HEAD"
      .. " && ls -a .git .git/refs/heads .git/refs/tags .git/objects/info",
    "sh",
    dir,
    refs or "",
  })
  assert(out.code == 0, out.stderr)
  return out.stdout
end

return M
