--- The one diff view of :FlemmaSandbox diff: a tab page with the user's
--- file on the left and the copy's version (a scratch buffer made from its
--- blob) on the right, both in diff mode. Each diff reuses it while it
--- is open, and it follows the quickfix list: when a file of the list
--- comes into one of its windows (<CR> in the quickfix window, :cnext,
--- :cprev, :cc), that file's change is shown on both sides. Works on
--- Neovim 0.7 (BufWinEnter, :diffthis).
local notice = require("flemma_sandbox.base.notice")
local review = require("flemma_sandbox.api.review")

local M = {}

--- The view: its tab page and windows, the changes it follows (the last
--- quickfix list of :FlemmaSandbox diff), the one shown. One per editor.
---@class flemma_sandbox.DiffView
---@field tab integer|nil
---@field left integer|nil the user's file
---@field right integer|nil the copy's version
---@field changes flemma_sandbox.Change[]
---@field list integer|nil the quickfix list's id: followed while it is the current list
---@field shown flemma_sandbox.Change|nil
---@field busy boolean while show() changes the windows
local view = { changes = {}, busy = false }

---@param c flemma_sandbox.Change
---@return string
local function path_of(c)
  return vim.fn.fnamemodify(c.top .. "/" .. c.path, ":p")
end

--- The change of the list whose file buffer buf is.
---@param buf integer
---@return flemma_sandbox.Change|nil
local function change_of(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" then
    return nil
  end
  for _, c in ipairs(view.changes) do
    if path_of(c) == name then
      return c
    end
  end
  return nil
end

---@param win integer|nil
---@return boolean
local function in_view(win)
  return win ~= nil and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_tabpage(win) == view.tab
end

--- Goes to the view's tab page and its window of the user's file, made
--- again when the user closed them.
local function layout()
  if view.tab and vim.api.nvim_tabpage_is_valid(view.tab) then
    vim.api.nvim_set_current_tabpage(view.tab)
  else
    vim.cmd("tabnew")
    view.tab, view.left, view.right = vim.api.nvim_get_current_tabpage(), vim.api.nvim_get_current_win(), nil
  end
  if not in_view(view.left) then
    if in_view(view.right) then
      vim.api.nvim_set_current_win(view.right)
      vim.cmd("vertical leftabove new")
    else
      vim.cmd("topleft vertical new")
    end
    view.left = vim.api.nvim_get_current_win()
  end
end

--- The window of the copy's version, right of the user's file (made
--- after the user's file is in its window: the empty buffer of a new
--- window is reused, never left behind).
local function right_window()
  if not in_view(view.right) or view.right == view.left then
    vim.api.nvim_set_current_win(view.left)
    vim.cmd("vertical rightbelow split")
    view.right = vim.api.nvim_get_current_win()
  end
end

--- A scratch buffer with the copy's version of c, wiped once hidden.
---@param c flemma_sandbox.Change
---@param filetype string
---@return integer
local function copy_buffer(c, filetype)
  local lines = vim.split(review.blob(c.top, c.new_oid) or "", "\n", { plain = true })
  if lines[#lines] == "" then
    lines[#lines] = nil
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  return buf
end

--- Puts c's file (left) and the copy's version (right) into the view.
---@param c flemma_sandbox.Change
local function fill(c)
  layout()
  local path = path_of(c)
  if vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(view.left)) ~= path then
    vim.api.nvim_set_current_win(view.left)
    vim.cmd("edit " .. vim.fn.fnameescape(path))
  end
  right_window()
  local buf = copy_buffer(c, vim.bo[vim.api.nvim_win_get_buf(view.left)].filetype)
  vim.api.nvim_win_set_buf(view.right, buf)
  pcall(vim.api.nvim_buf_set_name, buf, "sandbox://" .. c.remote:match("sandbox%-(.*)$") .. "/" .. c.path)
  for _, win in ipairs({ view.left, view.right }) do
    vim.api.nvim_win_call(win, function()
      vim.cmd("diffthis")
    end)
  end
  view.shown = c
  vim.api.nvim_set_current_win(view.left)
end

--- Shows c in the view. The path comes from the copy's objects, which the
--- sandbox can forge: nothing is opened when it leaves the repository,
--- goes through a link or names what is no regular file (review.refused);
--- the copy's version is its blob, never a path.
---@param c flemma_sandbox.Change
function M.show(c)
  local refused = review.refused(c)
  if refused then
    return notice.say("not opened: " .. c.path .. ": " .. refused, vim.log.levels.WARN)
  end
  view.busy = true
  local ok, err = pcall(fill, c)
  view.busy = false
  if not ok then
    notice.say("diff of " .. c.path .. ": " .. tostring(err), vim.log.levels.WARN)
  end
end

--- After a file of the list came into window win of the view: its change
--- on both sides, unless it is shown there already.
---@param buf integer
---@param win integer
local function follow(buf, win)
  if view.busy or not in_view(win) or vim.api.nvim_win_get_buf(win) ~= buf then
    return
  end
  if vim.fn.getqflist({ id = 0 }).id ~= view.list then
    return
  end
  local c = change_of(buf)
  local right_buf = in_view(view.right) and vim.api.nvim_win_get_buf(view.right)
  if c and (win ~= view.left or c ~= view.shown or not right_buf or vim.bo[right_buf].buftype ~= "nofile") then
    M.show(c)
  end
end

local group = nil

--- The list the view follows while the quickfix list list_id is the
--- current one (changes in its order), and the autocommand that follows it.
---@param changes flemma_sandbox.Change[]
---@param list_id integer
function M.follow(changes, list_id)
  view.changes, view.list = changes, list_id
  if group then
    return
  end
  group = vim.api.nvim_create_augroup("flemma_sandbox_diff_view", { clear = true })
  vim.api.nvim_create_autocmd("BufWinEnter", {
    group = group,
    callback = function(ev)
      if view.busy or vim.api.nvim_get_current_tabpage() ~= view.tab then
        return
      end
      local win = vim.api.nvim_get_current_win()
      -- after the jump's own autocommands, out of them
      vim.schedule(function()
        follow(ev.buf, win)
      end)
    end,
  })
end

--- The view's tab page and windows, for the specs.
---@return flemma_sandbox.DiffView
function M.state()
  return view
end

return M
