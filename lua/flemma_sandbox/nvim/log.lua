--- :FlemmaSandbox log: the chat's timeline (timeline.lua), one entry per
--- tool call, newest first: when, what it ran, its exit code, the files
--- it changed (direct mode's checkpoints before and after it,
--- checkpoints.call_changes), the hosts the proxy let it reach, what was
--- refused or moved to the quarantine. In a scratch window; <CR> on an
--- entry or one of its files shows the call's diff. The command line's
--- `log` prints the same lines (cli/manage.lua).
local notice = require("flemma_sandbox.base.notice")

local M = {}

--- The newest calls whose files are looked up (one git per repository
--- and call); older ones say <CR> shows them.
M.FILES_FOR = 100
--- Files listed per call at most.
M.MAX_FILES = 50

--- The chat folder of a buffer (as calls.lua finds it), or nil.
---@param bufnr integer|nil
---@return string|nil dir, string|nil name
function M.chat_of(bufnr)
  local ok, policy = pcall(require("flemma_sandbox").get_policy, bufnr)
  if ok and type(policy) == "table" and policy.chat then
    return policy.chat.dir, policy.chat.name
  end
  return nil
end

---@class flemma_sandbox.LogItem
---@field n integer|nil the call on this line
---@field path string|nil the file on this line (relative to its repository)

--- A path of a repository as the user reads it: relative to Neovim's
--- working directory when inside it.
---@param top string
---@param path string
---@return string
local function shown_path(top, path)
  return vim.fn.fnamemodify(top .. "/" .. path, ":.")
end

--- The lines of a call's files, and their items.
---@param bufnr integer|nil
---@param e flemma_sandbox.TimelineEntry
---@param look boolean whether to look them up
---@param add fun(line: string, item: flemma_sandbox.LogItem|nil)
local function file_lines(bufnr, e, look, add)
  local checkpoints = require("flemma_sandbox.api.checkpoints")
  if not checkpoints.WRITING_TOOLS[e.tool] then
    return
  elseif e.clone then
    return add("    files: on the chat's copy (clone mode: :FlemmaSandbox diff)")
  elseif not e.checkpoint or not e.n then
    return add("    files: not recorded (no checkpoint before it)")
  elseif not look then
    return add("    files: <CR> shows its diff", { n = e.n })
  end
  local ok, repos = pcall(checkpoints.call_changes, bufnr, e.n)
  if not ok or type(repos) ~= "table" or #repos == 0 then
    return add("    files: not recorded (its checkpoints are gone, or it did not end)")
  end
  local count = 0
  for _, repo in ipairs(repos) do
    for _, c in ipairs(repo.changes) do
      count = count + 1
      if count <= M.MAX_FILES then
        add("    " .. c.status .. " " .. shown_path(repo.top, c.path), { n = e.n, path = c.path })
      end
    end
  end
  if count == 0 then
    add("    files: none changed")
  elseif count > M.MAX_FILES then
    add(string.format("    ... and %d more files (<CR>: the diff)", count - M.MAX_FILES), { n = e.n })
  end
end

--- What one call's entry says after its files.
---@param e flemma_sandbox.TimelineEntry
---@param add fun(line: string)
local function report_lines(e, add)
  if #e.reached > 0 then
    add("    reached: " .. table.concat(e.reached, ", "))
  end
  for _, what in ipairs(e.refused) do
    add("    refused: " .. what)
  end
  for _, what in ipairs(e.unreachable) do
    add("    unreachable: " .. what)
  end
  for _, path in ipairs(e.moved) do
    add("    moved to the quarantine: " .. path)
  end
  for _, path in ipairs(e.relinked) do
    add("    protected link made again: " .. path)
  end
  for _, why in ipairs(e.stopped) do
    add("    stopped: " .. why)
  end
  if e.error then
    add("    error: " .. e.error)
  end
end

--- The outcome on an entry's first line.
---@param e flemma_sandbox.TimelineEntry
---@return string
local function outcome(e)
  if e.exit then
    return "exit " .. e.exit
  end
  return e.ok and "ok" or "failed"
end

--- The timeline of a buffer's chat as lines, newest call first, and what
--- each line is about; nil and why when there is none.
---@param bufnr integer|nil
---@return string[]|nil lines, flemma_sandbox.LogItem[]|string items
function M.lines(bufnr)
  local dir, name = M.chat_of(bufnr)
  if not dir then
    return nil, "this buffer is not a chat with a file: it has no timeline"
  end
  local entries = require("flemma_sandbox.api.timeline").read(dir)
  if #entries == 0 then
    return nil, "no call of chat " .. tostring(name) .. " is recorded yet"
  end
  local lines, items = {}, {}
  local function add(line, item)
    lines[#lines + 1] = line
    items[#lines] = item or false
  end
  local calls = #entries == 1 and "1 call" or (#entries .. " calls")
  add(string.format("chat %s: %s, newest first (<CR>: a call's diff, q: close)", name, calls))
  for i = #entries, 1, -1 do
    local e = entries[i]
    local label = tostring(e.label):gsub("^" .. vim.pesc(e.tool) .. ": ", "")
    add("")
    add(
      string.format(
        "#%s  %s  %s  %s",
        tostring(e.n or "?"),
        os.date("%Y-%m-%d %H:%M:%S", e.started),
        e.tool,
        outcome(e)
      ),
      { n = e.n }
    )
    add("    " .. label, { n = e.n })
    file_lines(bufnr, e, #entries - i < M.FILES_FOR, add)
    report_lines(e, add)
  end
  return lines, items
end

--- Call n's diff (checkpoints.call_diff), or nil and why there is none.
---@param bufnr integer|nil
---@param n integer
---@return string[]|nil lines, string|nil why
function M.diff_lines(bufnr, n)
  local ok, lines = pcall(require("flemma_sandbox.api.checkpoints").call_diff, bufnr, n)
  if not ok or type(lines) ~= "table" or #lines == 0 then
    return nil, "call " .. n .. " has no recorded change (its checkpoints are gone, or it did not write)"
  end
  for _, line in ipairs(lines) do
    if line:match("^diff ") then
      return lines
    end
  end
  return nil, "call " .. n .. " changed no file"
end

--- A scratch buffer in a new window (below, or in a tab page of its own
--- with how = "tabnew"), q closes it.
---@param lines string[]
---@param name string
---@param filetype string
---@param how? string
---@return integer buf
local function scratch(lines, name, filetype, how)
  vim.cmd(how or "botright new")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  vim.api.nvim_buf_set_keymap(buf, "n", "q", "<cmd>close<cr>", { nowait = true, noremap = true, silent = true })
  return buf
end

--- Shows call n's diff in a tab page, at path's part when given.
---@param bufnr integer|nil the chat's buffer
---@param n integer
---@param path string|nil
function M.show_diff(bufnr, n, path)
  local lines, why = M.diff_lines(bufnr, n)
  if not lines then
    return notice.say(why)
  end
  scratch(lines, "flemma-sandbox://call-" .. n .. ".diff", "diff", "tabnew")
  for i, line in ipairs(path and lines or {}) do
    if line == "diff --git a/" .. path .. " b/" .. path then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
      break
    end
  end
end

--- :FlemmaSandbox log: the timeline of the buffer's chat in a window.
---@param bufnr integer
function M.open(bufnr)
  local lines, items = M.lines(bufnr)
  if not lines then
    return notice.say(items)
  end
  local buf = scratch(lines, "flemma-sandbox://log/" .. bufnr, "flemmasandboxlog")
  vim.wo.wrap = false
  vim.keymap.set("n", "<CR>", function()
    local item = items[vim.api.nvim_win_get_cursor(0)[1]]
    if not item or not item.n then
      return notice.say("no call on this line: <CR> on a call or one of its files")
    end
    M.show_diff(bufnr, item.n, item.path)
  end, { buffer = buf, nowait = true, desc = "flemma-sandbox: the diff of this call" })
end

return M
