--- A child Neovim started the way a user's is (an init.lua, plugin files,
--- a real start-up), with `bwrap` on PATH a script that logs every run and
--- then runs the real one. It writes what start-up loaded and ran, opens
--- a chat, waits for the background checks, and writes that too.
local h = require("support.helpers")

local M = {}

--- Starts it; returns the result file's text, the bwrap log's lines
--- before and after the chat was opened, and the index folder.
---@param t string a scratch folder
---@param init_lines string[] what the init.lua does before VimEnter
---@param env? table<string, string>
---@return { result: string, at_start: string, after_chat: string, index: string }
function M.run(t, init_lines, env)
  h.sh("mkdir -p " .. t .. "/bin " .. t .. "/home " .. t .. "/project " .. t .. "/state")
  local real_bwrap = vim.fn.exepath("bwrap")
  h.write(
    t .. "/bin/bwrap",
    '#!/bin/sh\necho "$*" >> '
      .. h.shell_quote(t .. "/bwrap.log")
      -- BWRAP_FAIL=1: a bwrap that cannot start a sandbox here
      .. '\n[ "$BWRAP_FAIL" = 1 ] && { echo "bwrap: No permissions to create new namespace" >&2; exit 1; }'
      .. "\nexec "
      .. h.shell_quote(real_bwrap)
      .. ' "$@"\n'
  )
  h.sh("chmod +x " .. t .. "/bin/bwrap")
  local lines = vim.list_extend({ "local T = os.getenv('T')" }, init_lines)
  vim.list_extend(lines, {
    -- scheduled: autocommands do not run nested in a VimEnter callback
    "vim.api.nvim_create_autocmd('VimEnter', { callback = function() vim.schedule(function()",
    "  local function log()",
    "    local f = io.open(T .. '/bwrap.log')",
    "    local s = f and f:read('*a') or ''",
    "    if f then f:close() end",
    "    return s",
    "  end",
    "  local index = os.getenv('XDG_STATE_HOME') .. '/flemma-sandbox/index/*'",
    "  local function indexes() return #vim.fn.glob(index, false, true) end",
    "  local loaded = {}",
    "  for name in pairs(package.loaded) do",
    "    if name:find('^flemma_sandbox') then loaded[#loaded + 1] = name end",
    "  end",
    "  table.sort(loaded)",
    "  local out = { 'loaded=' .. table.concat(loaded, ' '), 'indexes_at_start=' .. indexes() }",
    "  local f = io.open(T .. '/at_start', 'w') f:write(log()) f:close()",
    "  vim.cmd('edit ' .. T .. '/project/talk.chat')",
    "  out[#out + 1] = 'filetype=' .. vim.bo.filetype",
    "  vim.wait(20000, function() return log():find('-- true', 1, true) ~= nil and indexes() > 0 end, 20)",
    "  vim.wait(200)",
    "  out[#out + 1] = 'indexes_after_chat=' .. indexes()",
    "  if EXTRA then out[#out + 1] = EXTRA() end",
    "  f = io.open(T .. '/after_chat', 'w') f:write(log()) f:close()",
    "  f = io.open(T .. '/result', 'w') f:write(table.concat(out, '\\n') .. '\\n') f:close()",
    "  vim.cmd('qa!')",
    "end) end })",
  })
  h.write(t .. "/init.lua", table.concat(lines, "\n") .. "\n")
  local all_env = {
    HOME = t .. "/home",
    T = t,
    XDG_STATE_HOME = t .. "/state",
    PATH = t .. "/bin:" .. os.getenv("PATH"),
  }
  for k, v in pairs(env or {}) do
    all_env[k] = v
  end
  local argv = { "timeout", "120", "nvim", "--headless", "-i", "NONE", "-u", t .. "/init.lua" }
  local r = h.run(argv, all_env, t .. "/project")
  return {
    result = h.read(t .. "/result") or ("no result:\n" .. r.stderr .. r.stdout),
    at_start = h.read(t .. "/at_start") or "",
    after_chat = h.read(t .. "/after_chat") or "",
  }
end

return M
