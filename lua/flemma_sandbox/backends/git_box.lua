--- A bwrap for git on the host's behalf (checkpoints, workspaces): it
--- shows the system folders read-only and only the folders the caller
--- binds, no network, no other process; so a link a sandboxed command
--- planted or swapped in a tree git walks leads nowhere else.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")

local editor = require("flemma_sandbox.base.editor")
local M = {}

--- The scripts git runs in it: files of their own beside these modules
--- (lua/flemma_sandbox/libexec/, shipped wherever the Lua files go;
--- shellcheck reads them in make lint), called with arguments; they
--- answer in JSON lines (M.answers).
-- never relative to the working directory (the project, which a command
-- may have written): without the plugin's folder nothing is run
M.SCRIPTS = (surroundings.lua_dir() or error("flemma-sandbox: the plugin's folder is unknown")) .. "/libexec"
--- Where the script of a run is shown inside (read-only), off every
--- path a caller binds.
local SCRIPT_AT = "/.flemma-sandbox/"

--- The environment git runs with in it: none of the user's or the
--- system's config, literal pathspecs, a fixed author.
M.GIT_ENV = {
  "GIT_CONFIG_NOSYSTEM=1",
  "GIT_CONFIG_GLOBAL=/dev/null",
  "HOME=/nonexistent",
  "GIT_LITERAL_PATHSPECS=1",
  "GIT_AUTHOR_NAME=flemma-sandbox",
  "GIT_AUTHOR_EMAIL=flemma-sandbox@localhost",
  "GIT_COMMITTER_NAME=flemma-sandbox",
  "GIT_COMMITTER_EMAIL=flemma-sandbox@localhost",
}

--- The system folders, read-only (a merged /usr keeps the old names as
--- links).
---@return string[]
local function system_binds()
  local out = { "--ro-bind", "/usr", "/usr" }
  for _, name in ipairs({ "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32" }) do
    local kind = core.file_type(name)
    if kind == "link" then
      vim.list_extend(out, { "--symlink", core.readlink(name), name })
    elseif kind == "directory" then
      vim.list_extend(out, { "--ro-bind", name, name })
    end
  end
  return out
end

--- secret_files as gitignore lines: an extglob group matches anything
--- there (more is left out, never less).
---@param patterns string[]
---@return string
function M.ignore_lines(patterns)
  local out = {}
  for _, pattern in ipairs(patterns) do
    local line = pattern:gsub("[?*+@!]%b()", "*")
    out[#out + 1] = (line:gsub("^([#!])", "\\%1"))
  end
  return table.concat(out, "\n") .. "\n"
end

--- Binds that hide paths from git as they are hidden from the sandbox: an
--- empty folder, or the empty file `empty`, in place of each.
---@param hidden string[]
---@param empty string
---@return string[]
function M.hidden_covers(hidden, empty)
  local out = {}
  for _, path in ipairs(hidden) do
    local kind = core.file_type(path)
    if kind == "directory" then
      vim.list_extend(out, { "--tmpfs", path })
    elseif kind == "file" then
      vim.list_extend(out, { "--ro-bind", empty, path })
    end
  end
  return out
end

--- The path of a script of M.SCRIPTS on the host.
---@param script string its file's name
---@return string
function M.script_path(script)
  return M.SCRIPTS .. "/" .. script
end

--- The answers of a script: it answers in JSON lines, one object a line
--- whose "answer" names what it says ({"answer":"created"}, {"answer":
--- "held","ref":...}); the lines that are not one (git's stderr, which
--- vim.fn.system mixes in) are left out. Neovim's JSON, else lua-cjson
--- (plain LuaJIT).
---@param out string|nil
---@return table[]
function M.answers(out)
  local decode = editor.json_decode
  local list = {}
  for line in (out or ""):gmatch("[^\n]+") do
    if line:sub(1, 1) == "{" then
      local ok, value = pcall(decode, line)
      if ok and type(value) == "table" and type(value.answer) == "string" then
        list[#list + 1] = value
      end
    end
  end
  return list
end

--- The first answer of a kind in a script's output, or nil.
---@param out string|nil
---@param kind string
---@return table|nil
function M.answer(out, kind)
  for _, value in ipairs(M.answers(out)) do
    if value.answer == kind then
      return value
    end
  end
  return nil
end

--- bwrap's argv up to its command: binds (already bwrap options, in order).
---@param bwrap string
---@param binds string[]
---@return string[]
function M.box(bwrap, binds)
  local out = { bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv" }
  vim.list_extend(out, { "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LC_ALL", "C" })
  for _, pair in ipairs(M.GIT_ENV) do
    local name, value = pair:match("^([^=]+)=(.*)$")
    vim.list_extend(out, { "--setenv", name, value })
  end
  vim.list_extend(out, system_binds())
  vim.list_extend(out, { "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp" })
  return vim.list_extend(out, binds)
end

--- bwrap's argv: binds, then a script of M.SCRIPTS (shown read-only) run
--- by `sh` with args.
---@param bwrap string
---@param binds string[]
---@param script string the script's file name in M.SCRIPTS
---@param args string[]
---@return string[]
function M.script_argv(bwrap, binds, script, args)
  local out = M.box(bwrap, binds)
  local inside = SCRIPT_AT .. script
  vim.list_extend(out, { "--ro-bind", M.script_path(script), inside, "sh", inside })
  return vim.list_extend(out, args)
end

return M
