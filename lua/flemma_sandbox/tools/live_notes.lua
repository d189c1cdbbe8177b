--- The `[sandbox]` note of a chat's live sandbox started again or ended
--- under a call (its "restarted" and "stopped"/sandbox_ended records,
--- csrc/exec/live_why.c), the cause first: the settings with their old
--- and new values, so a narrow command line still shows it.
local M = {}

--- The note's text of record s (without "[sandbox] "), also one notice
--- for the user when say is true.
---@param s flemma_sandbox.Record a "restarted" record, or a "stopped" one with reason sandbox_ended
---@param say? boolean
---@return string
function M.text(s, say)
  local text = s.type == "restarted"
      and tostring(s.why) .. ": this chat's sandbox was started again, what ran in it was stopped"
    or "the chat's sandbox ended while the command ran: " .. tostring(s.why)
  if say then
    require("flemma_sandbox.notice").say(text, vim.log.levels.WARN)
  end
  return text
end

return M
