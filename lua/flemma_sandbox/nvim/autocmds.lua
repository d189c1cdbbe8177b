--- Standalone mode: sets 'filetype' chat for *.chat files, keeps each .chat
--- buffer's frontmatter layer current and warns once when backend =
--- "required" finds nothing. Both modes: stops
--- running jobs on exit, and builds the current folder's scan index in the
--- background.
local frontmatter = require("flemma_sandbox.chat.frontmatter")
local sandbox = require("flemma_sandbox")

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
--- working backend gets a visible warning, once per session.
---@param bufnr integer
function M.check_required(bufnr)
  if warned_required then
    return
  end
  local cfg = sandbox.resolve_config(bufnr)
  if not cfg.enabled or cfg.backend ~= "required" then
    return
  end
  local backend = sandbox.backend_status(bufnr)
  if not backend.available then
    warned_required = true
    vim.notify(
      'flemma-sandbox: backend = "required" but no sandbox backend works; tool commands are refused: '
        .. tostring(backend.error),
      vim.log.levels.WARN
    )
  end
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
--- (flemma-sandbox-exec --index-repos, csrc/scan.h): the first policy
--- resolution in a big project then looks at each folder once (fstat)
--- instead of reading the whole tree on the editor's thread.
---@return boolean started
function M.warm_index()
  local uv = vim.uv or vim.loop
  local core = require("flemma_sandbox.core")
  local helper = require("flemma_sandbox.backends.bwrap").helper()
  local index = require("flemma_sandbox.host").state_dir("index")
  local root = core.resolve(vim.fn.getcwd(), "/")
  if not helper or not index or not root or root == "/" then
    return false
  end
  local handle
  handle = uv.spawn(helper, { args = { "--index-repos", index, root } }, function()
    if handle and not handle:is_closing() then
      handle:close()
    end
  end)
  return handle ~= nil
end

--- In both modes: no job of ours outlives Neovim.
function M.setup_common()
  local group = vim.api.nvim_create_augroup("flemma_sandbox_jobs", { clear = true })
  vim.api.nvim_create_autocmd({ "VimEnter", "DirChanged" }, {
    group = group,
    callback = function()
      pcall(M.warm_index)
    end,
  })
  if vim.v.vim_did_enter == 1 then
    pcall(M.warm_index)
  end
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    callback = function()
      require("flemma_sandbox.run.job").kill_all()
      local ask = package.loaded["flemma_sandbox.nvim.net_ask"]
      if ask then
        ask.stop() -- its socket goes with it
      end
    end,
  })
end

return M
