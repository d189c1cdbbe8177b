--- Standalone mode: sets 'filetype' chat for *.chat files, keeps each .chat
--- buffer's frontmatter layer current and warns once when backend =
--- "required" finds nothing. Both modes: stops
--- running jobs on exit, and builds the current folder's scan index in the
--- background.
local util = require("flemma_sandbox.base.util")
-- set up at start-up; the modules the callbacks use load on the first .chat
local frontmatter = util.lazy_require("flemma_sandbox.chat.frontmatter")
local sandbox = util.lazy_require("flemma_sandbox")

local M = {}

local warned_required = false
---@type table<integer, string>
local reported = {}

--- Re-reads the frontmatter (cheap when unchanged) and reports a new error.
--- Never raises: an autocmd must not break editing.
---@param bufnr integer
---@param quiet boolean do not report (the user is typing)
function M.refresh(bufnr, quiet)
  local ok, err = pcall(frontmatter.refresh, bufnr)
  if not ok then
    err = "internal error: " .. tostring(err)
  end
  if err and not quiet and reported[bufnr] ~= err then
    reported[bufnr] = err
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":t")
    vim.notify(
      string.format("flemma-sandbox: frontmatter of %s: %s (using the global config)", name, err),
      vim.log.levels.WARN
    )
  elseif not err then
    reported[bufnr] = nil
  end
end

--- With backend = "required", the first .chat buffer entered without a
--- working backend gets a visible warning, once per session. The test
--- sandbox of bwrap starts in the background (never on the editor's
--- thread); the warning comes when it failed.
---@param bufnr integer
function M.check_required(bufnr)
  if warned_required then
    return
  end
  local cfg = sandbox.resolve_config(bufnr)
  if not cfg.enabled or cfg.backend ~= "required" then
    return
  end
  local function warn_unless_available()
    local backend = sandbox.backend_status(bufnr)
    if not backend.available and not warned_required then
      warned_required = true
      vim.notify(
        'flemma-sandbox: backend = "required" but no sandbox backend works; tool commands are refused: '
          .. tostring(backend.error),
        vim.log.levels.WARN
      )
    end
  end
  require("flemma_sandbox.backends.bwrap").check_in_background(cfg.backends.bwrap, function()
    -- bwrap's test has run (or bwrap is missing): this is quick now
    if vim.api.nvim_buf_is_valid(bufnr) then
      warn_unless_available()
    end
  end)
end

--- For specs: forget that the warning was given.
function M.reset()
  warned_required = false
  reported = {}
end

function M.setup()
  local group = vim.api.nvim_create_augroup("flemma_sandbox", { clear = true })
  -- Flemma sets 'filetype' to chat for *.chat; without it we do (setfiletype
  -- leaves a filetype something else chose)
  vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
    group = group,
    pattern = "*.chat",
    command = "setfiletype chat",
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf):match("%.chat$") and vim.bo[buf].filetype == "" then
      vim.bo[buf].filetype = "chat"
    end
  end
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufEnter", "TextChanged", "BufWritePost" }, {
    group = group,
    pattern = "*.chat",
    callback = function(args)
      M.refresh(args.buf, false)
      if args.event == "BufEnter" then
        pcall(M.check_required, args.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd("TextChangedI", {
    group = group,
    pattern = "*.chat",
    callback = function(args)
      M.refresh(args.buf, true)
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    pattern = "*.chat",
    callback = function(args)
      frontmatter.forget(args.buf)
      reported[args.buf] = nil
    end,
  })
end

--- Builds the ".git" scan index of the current folder in the background
--- (flemma-sandbox-tool --index-repos, csrc/shared/scan.h): the first policy
--- resolution in a big project then looks at each folder once (fstat)
--- instead of reading the whole tree on the editor's thread. on_built
--- runs in the main loop once it is done.
---@param on_built? fun()
---@return boolean started
function M.warm_index(on_built)
  local core = require("flemma_sandbox.core")
  local helper = require("flemma_sandbox.backends.helper").helper()
  local index = require("flemma_sandbox.base.surroundings").state_dir("index")
  local root = core.resolve(vim.fn.getcwd(), "/")
  if not helper or not index or not root or root == "/" then
    return false
  end
  local argv = { helper, "--index-repos", index, root }
  -- a call made meanwhile waits for it in the main loop (backends/background.lua)
  local background = require("flemma_sandbox.backends.background")
  local handle = require("flemma_sandbox.base.process").spawn(argv, { stdout = false, stderr = false }, function()
    vim.schedule(function()
      if on_built then
        pcall(on_built)
      end
      background.ended()
    end)
  end)
  if handle then
    background.began()
  end
  return handle ~= nil
end

--- The chat's policy, resolved once the index is built, so the first tool
--- call finds it in the cache (policy/cache.lua) instead of resolving it
--- then. Standalone only: under Flemma each call's policy is Flemma's.
---@param bufnr integer
local function resolve_ahead(bufnr)
  local bridge = require("flemma_sandbox.base.hooks").bridge
  if (bridge and bridge.is_attached()) or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  pcall(function()
    if sandbox.resolve_config(bufnr).enabled then
      -- the bash tool's outputs folder first: its coming changes the policy
      require("flemma_sandbox.tools.outputs").make_dir()
      sandbox.get_policy(bufnr)
    end
  end)
end

---@type table<string, boolean> folders whose index was started
local warmed = {}
---@type table<string, boolean> folders whose index was built
local indexed = {}
---@type table<string, integer[]> chats opened in a folder, waiting for its index to prestart
local prestart_waiting = {}

local backend_checked = false

--- At the first chat buffer (standalone or Flemma's), not at start-up:
--- starts the scan index of the current folder (once per folder) and the
--- backend's test sandbox, both in the background, so the first tool call
--- finds them done. At each of Flemma's chats: Flemma's config for the
--- command line.
---@param args table the autocmd's
local function warm_once(args)
  local cwd = vim.fn.getcwd()
  -- the chat's sandbox, once its policy resolves from the index (a chat
  -- opened, not a folder changed under it): a chat opened while the
  -- index is built waits for it too
  if not args.moved then
    prestart_waiting[cwd] = prestart_waiting[cwd] or {}
    table.insert(prestart_waiting[cwd], args.buf)
  end
  local function prestart()
    for _, buf in ipairs(prestart_waiting[cwd] or {}) do
      pcall(require("flemma_sandbox.nvim.prestart").maybe, buf)
    end
    prestart_waiting[cwd] = nil
  end
  if not warmed[cwd] then
    warmed[cwd] = true
    local bufnr = args.buf
    local function built()
      resolve_ahead(bufnr)
      indexed[cwd] = true
      -- in a turn of the main loop of its own (a timer), not in the
      -- resolution's stretch of the editor's thread
      vim.defer_fn(prestart, 0)
    end
    local ok, started = pcall(M.warm_index, built)
    if not (ok and started) then
      built()
    end
  elseif indexed[cwd] then
    prestart()
  end
  local bridge = require("flemma_sandbox.base.hooks").bridge
  if bridge and bridge.is_attached() then
    -- Flemma's config as it is now, for the command line
    pcall(bridge.save_for_command_line)
  end
  if backend_checked then
    return
  end
  backend_checked = true
  if bridge and bridge.is_attached() then
    pcall(bridge.check_in_background, args.buf)
  else
    pcall(function()
      local cfg = sandbox.resolve_config(args.buf)
      require("flemma_sandbox.backends.bwrap").check_in_background(cfg.backends.bwrap, function() end)
    end)
  end
end

--- A chat buffer is written in place ('backupcopy' "yes", buffer-local):
--- a chat's live sandbox has its chat file bound read-only, and a write
--- that renames a new file over it (the default "auto") would leave the
--- sandbox's view without that bind, which stops the sandbox (fail
--- closed, csrc/exec/run_watch.c). Flemma's own writes (`:write!` of the
--- buffer) inherit it.
---@param bufnr integer
function M.write_in_place(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) then
    pcall(vim.api.nvim_buf_set_option, bufnr, "backupcopy", "yes")
  end
end

--- In both modes: no job of ours outlives Neovim, chat buffers are
--- written in place, and the first chat in a folder starts its scan index
--- in the background.
function M.setup_common()
  local group = vim.api.nvim_create_augroup("flemma_sandbox_jobs", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "chat",
    callback = function(args)
      M.write_in_place(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = "*.chat",
    callback = function(args)
      M.write_in_place(args.buf)
    end,
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf):match("%.chat$") or vim.bo[buf].filetype == "chat" then
      M.write_in_place(buf)
    end
  end
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "chat",
    callback = warm_once,
  })
  vim.api.nvim_create_autocmd("BufEnter", {
    group = group,
    pattern = "*.chat",
    callback = function(args)
      -- entering a chat again: its sandbox when it stopped meanwhile (nvim/prestart.lua)
      if indexed[vim.fn.getcwd()] then
        pcall(require("flemma_sandbox.nvim.prestart").maybe, args.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd("DirChanged", {
    group = group,
    callback = function()
      if vim.bo.filetype == "chat" then
        warm_once({ buf = vim.api.nvim_get_current_buf(), moved = true })
      end
    end,
  })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    callback = function()
      local job = package.loaded["flemma_sandbox.run.job"]
      if job then
        job.kill_all() -- no job ran when it was never loaded
      end
      local ask = package.loaded["flemma_sandbox.questions.network"]
      if ask then
        ask.stop() -- its socket goes with it
      end
    end,
  })
end

return M
