--- :FlemmaSandbox diff, apply and discard: the review of clone mode's
--- copies (api/clone_mode.lua, review.lua) in the quickfix list and a
--- side-by-side diff that follows the list (nvim/diff_view.lua).
local notice = require("flemma_sandbox.base.notice")
local review = require("flemma_sandbox.api.review")
local workspaces = require("flemma_sandbox.api.clone_mode")

local M = {}

local WORDS = { A = "made in the copy", M = "changed in the copy", D = "deleted in the copy", T = "type changed" }

--- One line for :FlemmaSandbox status in clone mode.
---@param bufnr integer
---@return string
function M.summary(bufnr)
  if not require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr) then
    return "clone (sandboxes.workspace): each chat works on its own copy; this buffer is no chat"
  end
  local parts = {}
  for _, spec in ipairs(workspaces.specs(bufnr)) do
    local made = require("flemma_sandbox.backends.workspace_copies").exists(spec.clone)
    parts[#parts + 1] = vim.fn.fnamemodify(spec.top, ":~") .. (made and "" or " (made at the next call)")
  end
  if #parts == 0 then
    return "clone (sandboxes.workspace), but no git repository among the writable projects: calls work on the real tree"
  end
  return "clone: this chat works on its own copy of "
    .. table.concat(parts, ", ")
    .. " (:FlemmaSandbox diff, apply, discard)"
end

--- Shows c in the one diff view (nvim/diff_view.lua): the user's file
--- beside the copy's version, in a tab page reused by each diff.
---@param c flemma_sandbox.Change
function M.open_diff(c)
  require("flemma_sandbox.nvim.diff_view").show(c)
end

--- The chat whose copy was reviewed last (the quickfix list's), for the
--- commands run from the diff's or the list's windows.
local last_chat = nil
--- The changes behind the last quickfix list of :FlemmaSandbox diff, in
--- its order (Neovim 0.7's quickfix items carry no data of their own).
local listed = {}
local LIST_TITLE = "flemma-sandbox: the chat's copy, not applied"

--- The chat buffer the review acts on: this one when it is a chat, else
--- the one reviewed last.
---@param bufnr integer
---@return integer|nil
local function chat_buffer(bufnr)
  if require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr) then
    return bufnr
  end
  if last_chat and vim.api.nvim_buf_is_valid(last_chat) then
    return last_chat
  end
  notice.say("run it in the chat's buffer", vim.log.levels.WARN)
  return nil
end

--- The chat apply or discard acts on, or nil once it said why not: none
--- of its calls may run, and it must work on copies.
---@param bufnr integer
---@param running boolean
---@param nothing string what to say in direct mode
---@return integer|nil
local function clone_chat(bufnr, running, nothing)
  bufnr = chat_buffer(bufnr)
  if not bufnr then
    return nil
  end
  if running then
    notice.say("tool calls of this chat are running: :FlemmaSandbox tool:cancel first", vim.log.levels.WARN)
    return nil
  end
  if not workspaces.is_clone(bufnr) then
    notice.say(nothing .. ': this chat works on the real tree (sandboxes.workspace = "direct")')
    return nil
  end
  return bufnr
end

--- The change under the cursor in the quickfix window, when it is ours.
---@return flemma_sandbox.Change|nil
local function entry_under_cursor()
  if vim.bo.buftype ~= "quickfix" or vim.fn.getqflist({ title = 0 }).title ~= LIST_TITLE then
    return nil
  end
  return listed[vim.fn.line(".")]
end

--- :FlemmaSandbox diff: the changed files in the quickfix list, and the
--- diff of the entry under the cursor (in the quickfix window) or of the
--- first one that opens, in the one diff view, which then follows the
--- list.
---@param bufnr integer
function M.diff(bufnr)
  local picked = entry_under_cursor()
  if picked then
    return M.open_diff(picked)
  end
  bufnr = chat_buffer(bufnr)
  if not bufnr then
    return
  end
  if not workspaces.is_clone(bufnr) then
    return notice.say('no copy to review: this chat works on the real tree (sandboxes.workspace = "direct")')
  end
  workspaces.changes(bufnr, function(changes, errors)
    local items, first = {}, nil
    for _, c in ipairs(changes) do
      local refused = review.refused(c)
      first = first or (not refused and c or nil)
      -- a path refused has no file name: the list opens nothing there
      items[#items + 1] = refused and { text = c.path .. ": not opened: " .. refused }
        or {
          filename = c.top .. "/" .. c.path,
          lnum = 1,
          text = c.status .. "  " .. (WORDS[c.status] or c.status),
        }
    end
    last_chat, listed = bufnr, changes
    vim.fn.setqflist({}, " ", { title = LIST_TITLE, items = items })
    require("flemma_sandbox.nvim.diff_view").follow(changes, vim.fn.getqflist({ id = 0 }).id)
    if #errors > 0 then
      notice.say(errors[1], vim.log.levels.WARN)
    end
    if #items == 0 then
      return notice.say("the chat's copy has no changes that are not applied")
    end
    M.open_diff(first or changes[1])
    vim.cmd("botright copen")
  end)
end

--- :FlemmaSandbox apply: the copies' changes into the working tree; what
--- needs the user (conflicts, what was not brought in) in the quickfix list.
---@param bufnr integer
---@param running boolean whether tool calls of this chat are running
function M.apply(bufnr, running)
  bufnr = clone_chat(bufnr, running, "nothing to apply")
  if not bufnr then
    return
  end
  workspaces.apply(bufnr, function(result, errors)
    local items = {}
    for _, list in ipairs({ result.conflicts, result.skipped }) do
      for _, e in ipairs(list) do
        items[#items + 1] = { filename = e.path, lnum = 1, text = e.text }
      end
    end
    vim.fn.setqflist({}, " ", { title = "flemma-sandbox: apply", items = items })
    -- buffers of what changed on disk, unless the user changed them: read
    -- again (a checktime would ask about each file made meanwhile)
    local written = vim.deepcopy(result.applied)
    for _, e in ipairs(result.conflicts) do
      written[#written + 1] = e.written and e.path or nil -- with markers
    end
    for _, path in ipairs(written) do
      local b = vim.fn.bufnr(path)
      if b > 0 and vim.api.nvim_buf_is_loaded(b) and not vim.bo[b].modified then
        vim.api.nvim_buf_call(b, function()
          vim.cmd("silent! edit!")
        end)
      end
    end
    local said = string.format(
      "applied %d file(s); %d conflict(s), %d not brought in%s",
      #result.applied,
      #result.conflicts,
      #result.skipped,
      #items > 0 and " (quickfix list)" or ""
    )
    notice.say(said .. (errors[1] and ("; " .. errors[1]) or ""), #items > 0 and vim.log.levels.WARN or nil)
    if #items > 0 then
      vim.cmd("botright copen")
    end
  end)
end

--- Throws the copies away once their work is kept (workspaces.discard),
--- and says how to get it back.
---@param bufnr integer
local function discard_now(bufnr)
  workspaces.discard(bufnr, function(errors, kept)
    if errors[1] then
      return notice.say("not discarded: " .. table.concat(errors, "; "), vim.log.levels.WARN)
    end
    local how = require("flemma_sandbox.backends.workspace_keep").how_to(kept)
    notice.say(
      "discarded the chat's copy; its next call starts from your tree as it is then"
        .. (kept[1] and ("; its work is kept as " .. kept[1].ref) or "")
    )
    if #how == 0 then
      return
    elseif #vim.api.nvim_list_uis() == 0 then
      vim.api.nvim_echo({ { table.concat(how, "\n") } }, true, {})
    else
      local buf = require("flemma_sandbox.nvim.float").open(how)
      for _, key in ipairs({ "q", "<Esc>" }) do
        vim.api.nvim_buf_set_keymap(buf, "n", key, "<cmd>close<cr>", { nowait = true, noremap = true, silent = true })
      end
    end
  end)
end

--- :FlemmaSandbox discard: the copies thrown away, their work kept 14
--- days; asked first when they hold work not applied, unless bang.
---@param bufnr integer
---@param running boolean
---@param bang boolean|nil
function M.discard(bufnr, running, bang)
  bufnr = clone_chat(bufnr, running, "no copy to discard")
  if not bufnr then
    return
  end
  if bang then
    return discard_now(bufnr)
  end
  workspaces.sync(bufnr, function()
    local unapplied = workspaces.unapplied(bufnr)
    if #unapplied == 0 then
      return discard_now(bufnr)
    end
    local lines = {}
    for _, line in ipairs(unapplied) do
      lines[#lines + 1] = "Work not applied: " .. line
    end
    vim.list_extend(lines, {
      "yes: throw the copy away; its work is kept 14 days under refs/flemma-sandbox/discarded/",
      "no: keep it (:FlemmaSandbox diff, apply)",
    })
    require("flemma_sandbox.questions").ask({
      title = "Discard this chat's copy?",
      lines = lines,
      tool = "discard",
      bufnr = bufnr,
    }, function(answer)
      if answer == "once" or answer == "always" then
        return discard_now(bufnr)
      end
      notice.say("not discarded: the chat's copy is kept")
    end)
  end)
end

return M
