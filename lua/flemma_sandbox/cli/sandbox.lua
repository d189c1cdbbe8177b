--- A command line sandbox as the library sees it: the chat of a scratch
--- buffer named after the sandbox, in the project's folder of chats, with
--- the user's saved config and sandboxes.name = NAME. Chats and the
--- command line share a sandbox by that name (a chat's frontmatter name).
local chat_dirs = require("flemma_sandbox.policy.chat_dirs")
local cli = require("flemma_sandbox.cli.failure")
local core = require("flemma_sandbox.core")
local saved = require("flemma_sandbox.config.saved")

local M = {}

--- Shown read-only in every command line sandbox, so the user's own
--- shell starts as it does outside (they are read-only: a write to them
--- fails inside and never reaches the host).
M.SHELL_CONFIG = {
  "~/.bashrc",
  "~/.bash_profile",
  "~/.bash_aliases",
  "~/.profile",
  "~/.inputrc",
  "~/.zshrc",
  "~/.zshenv",
  "~/.zprofile",
  -- fish's own files, not its folder: that is the sandbox's (below)
  "~/.config/fish/config.fish",
  "~/.config/fish/functions",
  "~/.config/fish/conf.d",
  "~/.config/fish/completions",
  "~/.config/fish/themes",
}
--- Writable and kept with the sandbox: fish's history, and its config
--- folder, where fish writes its universal variables (fish_variables)
--- and makes its folders at the first start (read-only, fish prints an
--- error for each and at every prompt); the user's files above are
--- shown read-only in it.
M.SHELL_STATE = { "~/.local/share/fish", "~/.config/fish" }

--- Refuses a name that is not a plain folder name.
---@param name string|nil
---@return string
function M.check_name(name)
  if type(name) ~= "string" or not name:match("^[%w][%w._-]*$") or #name > 60 then
    cli.fail(
      "NAME: expected a sandbox name of letters, digits, '.', '_' and '-' (at most 60), got "
        .. (name and ("'" .. name .. "'") or "none")
    )
  end
  return name
end

--- The project of the working directory: the git repository it is in,
--- or else the folder itself (found by name, no git run). Neovim's
--- working directory becomes it, as a chat's project is Neovim's.
---@return string project, boolean in_git
function M.enter_project()
  local cwd = core.resolve(vim.fn.getcwd(), "/") or vim.fn.getcwd()
  local at = cwd
  while at and at ~= "" do
    if core.file_type(at .. "/.git") ~= nil then
      vim.cmd("cd " .. vim.fn.fnameescape(at))
      return at, true
    end
    at = at:match("^(.*)/[^/]+$")
  end
  return cwd, false
end

--- Applies the saved config (setup(), then Flemma's layer as the
--- buffer's base). Raises naming the file and the key when it is bad.
---@return table flemma_layer
function M.load_config()
  saved.frozen = true
  local config, err = saved.read()
  if err then
    cli.fail(err)
  end
  local ok, setup_err = pcall(require("flemma_sandbox").setup, config.setup or {})
  if not ok then
    cli.fail(tostring(saved.path()) .. " (setup): " .. tostring(setup_err):gsub("^.-flemma%-sandbox: ", ""))
  end
  return type(config.flemma) == "table" and config.flemma or {}
end

--- The buffer of sandbox NAME of the working directory's project, with
--- its config layer; in a git repository clone mode unless direct.
---@param name string
---@param direct? boolean
---@return integer bufnr, { project: string, in_git: boolean, dir: string }
function M.open(name, direct)
  M.check_name(name)
  local flemma_layer = M.load_config()
  local project, in_git = M.enter_project()
  local dir = chat_dirs.project_dir(project)
  if not dir then
    cli.fail("no folder for the sandboxes: set $HOME or $XDG_CACHE_HOME")
  end
  local fs = require("flemma_sandbox")
  local cfg = fs.resolve_config()
  local writable = vim.deepcopy(flemma_layer.policy and flemma_layer.policy.home_writable or cfg.policy.home_writable)
  vim.list_extend(writable, M.SHELL_STATE)
  local layer = vim.deepcopy(flemma_layer)
  layer.policy = layer.policy or {}
  layer.policy.home_allow = vim.list_extend(vim.deepcopy(layer.policy.home_allow or {}), M.SHELL_CONFIG)
  layer.policy.home_writable = writable
  -- no chat file here: its folder (the sandbox's own, where its copies
  -- are made) is nothing a command may write
  local rw = {}
  for _, entry in ipairs(layer.policy.rw_paths or cfg.policy.rw_paths) do
    if not entry:find("FLEMMA_BUFFER_PATH", 1, true) then
      rw[#rw + 1] = entry
    end
  end
  layer.policy.rw_paths = rw
  layer.sandboxes = layer.sandboxes or {}
  layer.sandboxes.name = name
  if direct then
    layer.sandboxes.workspace = "direct"
  elseif in_git then
    layer.sandboxes.workspace = "clone"
  end
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(bufnr, dir .. "/" .. name .. "/" .. chat_dirs.CLI_CHAT)
  vim.bo[bufnr].filetype = "chat"
  local ok, err = fs.set_buffer_config(bufnr, layer)
  if not ok then
    cli.fail(tostring(saved.path()) .. ": " .. tostring(err))
  end
  return bufnr, { project = project, in_git = in_git, dir = dir .. "/" .. name }
end

--- Runs fn(done) and waits (the editor's loop turns meanwhile) until
--- done(...) is called; what it was called with.
---@param fn fun(done: fun(...))
---@return ...
function M.wait(fn)
  local result
  fn(function(...)
    result = { ... }
  end)
  vim.wait(24 * 3600 * 1000, function()
    return result ~= nil
  end, 20)
  return unpack(result or {})
end

return M
