--- The `[sandbox]` note of a chat's live sandbox started again or ended
--- under a call (its "restarted" and "stopped"/sandbox_ended records,
--- csrc/exec/live_why.c), the cause first: the settings with their old
--- and new values, so a narrow command line still shows it. A setting the
--- chat's frontmatter sets now says so: the new value is the frontmatter's.
local M = {}

--- A function that says whether the chat's frontmatter sets a setting
--- (named as a restart names it: "policy.network", "policy.limits.memory_mb",
--- "sandboxes.workspace", "policy.rw_paths" for a list's entries).
---@alias flemma_sandbox.SetByFrontmatter fun(setting: string): boolean|nil

M.BY_FRONTMATTER = " (set by this chat's frontmatter)"

--- why with each "NAME: OLD -> NEW" (or "NAME: added ENTRY") item whose
--- setting the frontmatter sets marked so; the rest as it is.
---@param why string
---@param set_by_frontmatter? flemma_sandbox.SetByFrontmatter
---@return string
function M.mark_frontmatter(why, set_by_frontmatter)
  if not set_by_frontmatter then
    return why
  end
  local items = {}
  for item in (why .. "; "):gmatch("(.-); ") do
    local name = item:match("^([%w_]+%.[%w_.]+): ")
    local ok, set = pcall(set_by_frontmatter, name or "")
    items[#items + 1] = (name and ok and set) and (item .. M.BY_FRONTMATTER) or item
  end
  return table.concat(items, "; ")
end

--- The note's text of record s (without "[sandbox] "), also one notice
--- for the user when say is true.
---@param s flemma_sandbox.Record a "restarted" record, or a "stopped" one with reason sandbox_ended
---@param say? boolean
---@param set_by_frontmatter? flemma_sandbox.SetByFrontmatter for a "restarted" record: its call's chat
---@return string
function M.text(s, say, set_by_frontmatter)
  local text
  if s.type == "restarted" then
    text = M.mark_frontmatter(tostring(s.why), set_by_frontmatter)
      .. ": this chat's sandbox was started again, what ran in it was stopped"
  else
    text = "the chat's sandbox ended while the command ran: " .. tostring(s.why)
  end
  if say then
    require("flemma_sandbox.base.notice").say(text, vim.log.levels.WARN)
  end
  return text
end

return M
