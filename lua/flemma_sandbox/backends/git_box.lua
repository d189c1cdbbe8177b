--- A bwrap for git on the host's behalf (checkpoints, workspaces): it
--- shows the system folders read-only and only the folders the caller
--- binds, no network, no other process; so a link a sandboxed command
--- planted or swapped in a tree git walks leads nowhere else.
local core = require("flemma_sandbox.core")

local M = {}

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

--- bwrap's argv: binds (already bwrap options, in order), then
--- `sh -c script sh args...`.
---@param bwrap string
---@param binds string[]
---@param script string
---@param args string[]
---@return string[]
function M.argv(bwrap, binds, script, args)
  local out = { bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv" }
  vim.list_extend(out, { "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LC_ALL", "C" })
  for _, pair in ipairs(M.GIT_ENV) do
    local name, value = pair:match("^([^=]+)=(.*)$")
    vim.list_extend(out, { "--setenv", name, value })
  end
  vim.list_extend(out, system_binds())
  vim.list_extend(out, { "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp" })
  vim.list_extend(out, binds)
  vim.list_extend(out, { "sh", "-c", script, "sh" })
  return vim.list_extend(out, args)
end

return M
