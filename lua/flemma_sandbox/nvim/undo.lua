--- :FlemmaSandbox undo, redo and checkpoints: direct mode's per-call
--- changes (checkpoints.lua, call_undo.lua) from the command line. What an
--- undo or redo will write is shown first, as a question in the window
--- that never takes focus (questions/); `!` skips it. Paths changed since
--- the call are kept and listed in the quickfix list.
local call_undo = require("flemma_sandbox.api.call_undo")
local checkpoints = require("flemma_sandbox.api.checkpoints")
local notice = require("flemma_sandbox.base.notice")

local M = {}

--- The lines :FlemmaSandbox checkpoints shows for a buffer's chat.
---@param bufnr integer
---@return string[]
function M.list_lines(bufnr)
  local lists, scope = checkpoints.list(bufnr)
  local lines = { "Checkpoints of this chat, by call, newest first (:FlemmaSandbox undo [N] takes one back)" }
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
      local state = e.undone and "  (undone)" or (e.after and "" or "  (no end recorded)")
      lines[#lines + 1] = string.format("    %d  %s  %s%s", e.n, os.date("%Y-%m-%d %H:%M:%S", e.time), e.label, state)
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

--- A path of a plan as the preview shows it.
---@param top string
---@param path string
---@return string
local function shown(top, path)
  -- a name's control characters as \xNN: a line break in a name cannot
  -- make a line of its own in the question
  return (
    vim.fn.fnamemodify(top .. "/" .. path, ":~:."):gsub("%c", function(c)
      return string.format("\\x%02x", c:byte())
    end)
  )
end

--- The preview's lines: what will be written, what is kept and why.
---@param prep flemma_sandbox.UndoPrep
---@return string[] lines, integer writes
local function preview_lines(prep)
  local lines, writes = {}, 0
  for _, t in ipairs(prep.targets) do
    for _, c in ipairs(t.plan.apply) do
      writes = writes + 1
      lines[#lines + 1] = c.status .. " " .. shown(t.spec.top, c.path)
    end
  end
  for _, t in ipairs(prep.targets) do
    for _, c in ipairs(t.plan.conflicts) do
      lines[#lines + 1] = "kept (" .. c.why .. "): " .. shown(t.spec.top, c.path)
    end
    for _, c in ipairs(t.plan.skipped) do
      lines[#lines + 1] = "never written (" .. c.why .. "): " .. shown(t.spec.top, c.path)
    end
  end
  return lines, writes
end

--- Reloads the buffers of the files written (none had unsaved changes:
--- those are kept as conflicts).
---@param written { top: string, path: string }[]
local function reload(written)
  local by_name = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if name ~= "" then
      by_name[vim.fn.fnamemodify(name, ":p")] = b
    end
  end
  for _, w in ipairs(written) do
    local b = by_name[w.top .. "/" .. w.path]
    if b and vim.api.nvim_buf_is_loaded(b) and not vim.bo[b].modified then
      vim.api.nvim_buf_call(b, function()
        vim.cmd("silent! edit")
      end)
    end
  end
end

--- Says what an undo or redo did; its conflicts go to the quickfix list.
---@param prep flemma_sandbox.UndoPrep
---@param report flemma_sandbox.UndoReport
local function tell(prep, report)
  reload(report.written)
  local what = (prep.redo and "redo" or "undo") .. " of call " .. prep.n .. " (" .. prep.label .. ")"
  local parts = { what .. ": " .. #report.written .. " file(s) written" }
  if #report.conflicts > 0 then
    local items = {}
    for _, c in ipairs(report.conflicts) do
      items[#items + 1] = { filename = c.top .. "/" .. c.path, lnum = 1, text = "kept as it is: " .. c.why }
    end
    vim.fn.setqflist({}, " ", { title = "flemma-sandbox " .. what .. ": kept", items = items })
    parts[#parts + 1] = #report.conflicts .. " changed since and kept as they are (:copen)"
  end
  if #report.skipped > 0 then
    parts[#parts + 1] = #report.skipped .. " never written (protected, a chat's file)"
  end
  vim.list_extend(parts, report.errors)
  local level = #report.errors > 0 and vim.log.levels.ERROR
    or (#report.conflicts > 0 and vim.log.levels.WARN or vim.log.levels.INFO)
  notice.say(table.concat(parts, "; "), level)
end

--- Takes back the change of the chat's last call, or of call n (redo: puts
--- back what the last undo took back); shows what it will write and asks
--- first, unless bang. Refused while standalone tool calls of the chat run.
---@param bufnr integer
---@param running boolean whether tool calls of this chat are running
---@param opts { n: integer|nil, bang: boolean|nil, redo: boolean|nil }|nil
function M.undo(bufnr, running, opts)
  opts = opts or {}
  if running then
    local cancel = require("flemma_sandbox.base.hooks").bridge and ":Flemma tool:cancel" or ":FlemmaSandbox tool:cancel"
    notice.say("tool calls of this chat are running: wait for them, or " .. cancel, vim.log.levels.WARN)
    return
  end
  call_undo.prepare(bufnr, opts, function(prep, err)
    if not prep then
      return notice.say((opts.redo and "redo: " or "undo: ") .. tostring(err), vim.log.levels.WARN)
    end
    local lines, writes = preview_lines(prep)
    local function go()
      call_undo.carry_out(prep, function(report)
        tell(prep, report)
      end)
    end
    if writes == 0 or opts.bang then
      -- nothing to write is recorded all the same: the next undo goes on
      return go()
    end
    local word = opts.redo and "Redo" or "Undo"
    require("flemma_sandbox.questions").ask({
      title = string.format("%s call %d (%s)? %d file(s):", word, prep.n, prep.label, writes),
      lines = lines,
      bufnr = bufnr,
      tool = opts.redo and "redo" or "undo",
    }, function(answer)
      if answer == "once" or answer == "always" then
        go()
      else
        notice.say(word:lower() .. " of call " .. prep.n .. ": not done", vim.log.levels.INFO)
      end
    end)
  end)
end

return M
