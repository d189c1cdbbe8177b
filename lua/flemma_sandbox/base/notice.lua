--- What one action of the user says comes as one line. Two messages in a
--- row (a question's notice and the summary of :FlemmaSandbox
--- tool:execute-all) stop the screen at a hit-enter prompt, even when the
--- second comes from a timer; so do lines longer than the command line.
--- Notices said in the same turn of the event loop are joined with "; ",
--- in the order said, and the line is cut to what the command line shows.
local M = {}

---@type { parts: string[], last: string[], level: integer }|nil
local batch = nil

--- The joined line, cut to `room` display cells.
---@param parts string[]
---@param room integer
---@return string
function M.line(parts, room)
  local text = "flemma-sandbox: " .. table.concat(parts, "; ")
  if vim.fn.strdisplaywidth(text) > room then
    text = vim.fn.strcharpart(text, 0, math.max(1, room - 3)) .. "..."
  end
  return text
end

--- Says message (without the "flemma-sandbox: " prefix) with the others of
--- this turn; the line goes out with the highest level among them.
--- With `last` (a setting's warning, which :FlemmaSandbox status also
--- lists) it goes after the others, so that a cut line keeps what the
--- user's own action says.
---@param message string
---@param level? integer vim.log.levels
---@param last? boolean
function M.say(message, level, last)
  level = level or vim.log.levels.INFO
  if not batch then
    batch = { parts = {}, last = {}, level = level }
    vim.schedule(function()
      local said = batch
      batch = nil
      -- one row: a longer line would stop the screen at a hit-enter prompt
      local room = (vim.v.echospace or (vim.o.columns - 12)) - 1
      vim.notify(M.line(vim.list_extend(said.parts, said.last), room), said.level)
    end)
  end
  local list = last and batch.last or batch.parts
  list[#list + 1] = message
  batch.level = math.max(batch.level, level)
end

return M
