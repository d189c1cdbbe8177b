--- :FlemmaSandbox undo and :FlemmaSandbox checkpoints: direct mode's
--- checkpoints (checkpoints.lua) from the command line.
local checkpoints = require("flemma_sandbox.checkpoints")
local notice = require("flemma_sandbox.notice")

local M = {}

--- The lines :FlemmaSandbox checkpoints shows for a buffer's chat.
---@param bufnr integer
---@return string[]
function M.list_lines(bufnr)
  local lists, scope = checkpoints.list(bufnr)
  local lines = { "Checkpoints of this chat (newest first; :FlemmaSandbox undo goes back one changing call)" }
  if scope.off then
    lines[#lines + 1] = "  none: " .. scope.off
  end
  for _, root in ipairs(scope.outside) do
    lines[#lines + 1] = "  " .. root .. ": not a git repository (no checkpoints)"
  end
  for _, list in ipairs(lists) do
    local where = list.rel == "." and list.top or (list.top .. "/" .. list.rel)
    lines[#lines + 1] = "  " .. where .. ": " .. #list.entries .. " checkpoint(s)"
    for _, e in ipairs(list.entries) do
      lines[#lines + 1] = string.format("    %d  %s  before %s", e.n, os.date("%Y-%m-%d %H:%M:%S", e.time), e.label)
    end
  end
  return lines
end

--- One line for :FlemmaSandbox status: how many checkpoints, or why none.
---@param bufnr integer
---@return string
function M.summary(bufnr)
  local ok, lists, scope = pcall(checkpoints.list, bufnr)
  if not ok then
    return "no checkpoints: " .. tostring(lists)
  end
  if scope.off then
    return "no checkpoints: " .. scope.off
  end
  local parts = {}
  for _, list in ipairs(lists) do
    parts[#parts + 1] = string.format("%s: %d", vim.fn.fnamemodify(list.top, ":~"), #list.entries)
  end
  for _, root in ipairs(scope.outside) do
    parts[#parts + 1] = vim.fn.fnamemodify(root, ":~") .. ": not git, none"
  end
  if #parts == 0 then
    return "no checkpoints: no writable project"
  end
  return "checkpoints " .. table.concat(parts, ", ") .. " (:FlemmaSandbox undo, checkpoints)"
end

--- Puts the chat's tree back as it was before its last call that changed
--- it; refused while standalone tool calls of the chat run.
---@param bufnr integer
---@param running boolean whether tool calls of this chat are running
function M.undo(bufnr, running)
  if running then
    notice.say("tool calls of this chat are running: :FlemmaSandbox tool:cancel first", vim.log.levels.WARN)
    return
  end
  checkpoints.undo(bufnr, function(lines, ok)
    notice.say("undo: " .. table.concat(lines, "; "), ok and vim.log.levels.INFO or vim.log.levels.WARN)
  end)
end

return M
