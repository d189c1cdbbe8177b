--- A chat's tool uses and their results: which uses run (Flemma's
--- placeholders), how a result reads, and where it goes, as Flemma
--- writes it (chat/format.lua knows the format).
local format = require("flemma_sandbox.chat.format")

local M = {}

--- Result folds start at this many lines.
M.fold_min_lines = 30

--- The tool uses of a list of lines, each with what execution would do.
---@param lines string[]
---@return flemma_sandbox.ChatToolUse[] uses, flemma_sandbox.ChatDocument doc
function M.parse(lines)
  local doc = format.parse(lines)
  for _, use in ipairs(doc.uses) do
    use.row = use.line - 1
    use.action, use.why = M.plan(doc, use)
    use.has_result = use.action == nil
  end
  return doc.uses, doc
end

--- What running a use means: "ask" (no result or a pending placeholder:
--- the approval settings decide), "approved" (Flemma's approved
--- placeholder: the user said yes), or nil with the reason it does not run.
---@param doc flemma_sandbox.ChatDocument
---@param use flemma_sandbox.ChatToolUse
---@return "ask"|"approved"|nil action, string|nil why
function M.plan(doc, use)
  local result = doc.results[use.id]
  if not result then
    return "ask"
  end
  local status, filled = result.status, result.content:find("%S") ~= nil
  if status == nil or status == "error" then
    return nil, "it has a result"
  elseif status == "approved" then
    if filled then
      return nil, "its approved placeholder holds text the user wrote"
    end
    return "approved"
  elseif status == "pending" then
    if filled then
      return nil, "the user wrote its result"
    end
    return "ask"
  end
  return nil, "it is " .. status
end

--- The text of a result and whether it reports a failure. Trailing blank
--- lines are dropped, as Flemma drops them.
---@param result table
---@return string body, boolean is_error
function M.render(result)
  local notes = table.concat(result.notes or {}, "\n")
  local function with_notes(text)
    return notes == "" and text or (text .. "\n" .. notes)
  end
  if result.error then
    return with_notes((tostring(result.error):gsub("%s+$", ""))), true
  end
  if result.content then
    return with_notes(result.content), false
  end
  if result.success then
    return with_notes("ok"), false
  end
  local parts = {}
  if result.stdout and result.stdout:find("%S") then
    parts[#parts + 1] = (result.stdout:gsub("%s+$", ""))
  end
  if result.stderr and result.stderr:find("%S") then
    parts[#parts + 1] = "[stderr]\n" .. result.stderr:gsub("%s+$", "")
  end
  local failed = (result.exit_code or 0) ~= 0 or result.timed_out
  if (result.exit_code or 0) ~= 0 then
    parts[#parts + 1] = "[exit code " .. result.exit_code .. "]"
  end
  for _, note in ipairs(result.notes or {}) do
    parts[#parts + 1] = note
  end
  if #parts == 0 then
    return "(no output)", failed
  end
  return table.concat(parts, "\n"), failed
end

--- Folds a long result's fence in the windows that show the buffer with
--- manual folds; the fold ends at the closing fence, before the next line.
---@param bufnr integer
---@param first integer 1-based line of the opening fence
---@param last integer 1-based line of the closing fence
function M.fold(bufnr, first, last)
  if last - first + 1 < M.fold_min_lines then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    if vim.wo[win].foldmethod == "manual" then
      vim.api.nvim_win_call(win, function()
        vim.cmd(string.format("%d,%dfold", first, last))
      end)
    end
  end
end

--- Writes the result of a use into the buffer, where Flemma would.
---@return boolean written
function M.write_result(bufnr, id, result)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local uses, doc = M.parse(lines)
  local use
  for _, u in ipairs(uses) do
    if u.id == id then
      use = u
    end
  end
  if not use then
    vim.notify("flemma-sandbox: the tool use " .. id .. " is gone; its result was dropped", vim.log.levels.WARN)
    return false
  end
  if not use.action then
    -- the user wrote or resolved one meanwhile: never a second result
    vim.notify("flemma-sandbox: " .. id .. " got a result meanwhile; this one was dropped", vim.log.levels.WARN)
    return false
  end
  local body, is_error = M.render(result)
  local block = format.result_block(id, body, is_error)
  local first, last_excl, new = format.placement(doc, lines, use, block)
  local modifiable = vim.bo[bufnr].modifiable
  vim.bo[bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(bufnr, first, last_excl, false, new)
  vim.bo[bufnr].modifiable = modifiable
  local at = 1
  while new[at] ~= block[1] do
    at = at + 1
  end
  -- buffer lines of the opening and the closing fence
  M.fold(bufnr, first + at + 2, first + at + #block - 1)
  return true
end

return M
