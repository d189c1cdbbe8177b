--- :FlemmaSandbox diff's one view (nvim/diff_view.lua): a second diff
--- reuses the tab page of the first (control: the tab pages before); the
--- view follows the quickfix list: <CR> on an entry in the quickfix
--- window, :cprev from the user's side and :cnext from the copy's side
--- each show that entry's file on both sides, the user's file on the left
--- and the copy's version on the right, both in diff mode; a closed window
--- or tab page of the view is made again; another quickfix list is not
--- followed.
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")

describe(":FlemmaSandbox diff's view", function()
  local dir, proj

  project.each(
    "git init -q . && printf 'a, the user\\n' > a.txt && printf 'b, the user\\n' > b.txt"
      .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init",
    function(world)
      dir, proj = world.dir, world.proj
      sandbox.setup({
        backend = "bwrap",
        policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
        sandboxes = { workspace = "clone" },
      })
    end
  )

  after_each(function()
    pcall(vim.cmd, "silent! tabonly!")
    pcall(vim.cmd, "silent! only!")
    pcall(vim.cmd, "cclose")
  end)

  --- The view's two windows: the names and lines of their buffers, and
  --- whether both are in diff mode.
  local function sides()
    local view = require("flemma_sandbox.nvim.diff_view").state()
    local out = { tab = view.tab }
    for _, side in ipairs({ "left", "right" }) do
      local win = view[side]
      if win and vim.api.nvim_win_is_valid(win) then
        local buf = vim.api.nvim_win_get_buf(win)
        out[side] = {
          name = vim.api.nvim_buf_get_name(buf),
          lines = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"),
          diff = vim.wo[win].diff,
          tab = vim.api.nvim_win_get_tabpage(win),
        }
      end
    end
    return out
  end

  --- Waits until the view shows file (a.txt or b.txt) on both sides; the
  --- sides then.
  local function wait_for(file)
    local s
    vim.wait(5000, function()
      s = sides()
      return s.left ~= nil
        and s.right ~= nil
        and s.left.name == proj .. "/" .. file
        and s.right.name:match("^sandbox://.*/" .. vim.pesc(file) .. "$") ~= nil
    end, 20)
    return s
  end

  local function assert_shows(file, mine, theirs)
    local s = wait_for(file)
    assert.are.equal(proj .. "/" .. file, s.left and s.left.name, vim.inspect(s))
    assert.matches("^sandbox://.*/" .. vim.pesc(file) .. "$", s.right and s.right.name or "", vim.inspect(s))
    assert.are.equal(mine, s.left.lines)
    assert.are.equal(theirs, s.right.lines)
    assert.is_true(s.left.diff and s.right.diff, vim.inspect(s))
    assert.are.equal(s.tab, s.left.tab)
    assert.are.equal(s.tab, s.right.tab)
  end

  --- :FlemmaSandbox diff from the chat's buffer, waited for (a new list).
  local function diff(bufnr)
    local commands = require("flemma_sandbox.nvim.commands")
    local before = vim.fn.getqflist({ id = 0 }).id
    vim.cmd("tabfirst")
    vim.api.nvim_set_current_buf(bufnr)
    commands.actions.diff(bufnr)
    assert(
      vim.wait(15000, function()
        local list = vim.fn.getqflist({ id = 0, size = 0 })
        return list.id ~= before and list.size == 2
      end, 20),
      "the quickfix list: " .. vim.inspect(vim.fn.getqflist())
    )
  end

  it("is one tab page, reused by the next diff, and follows the quickfix entry on both sides", function()
    local bufnr = n.open_chat(dir .. "/a.chat", { "@You:", "hi" })
    local r = n.run_tool("bash", {
      command = "printf 'a, the model\\n' > a.txt && printf 'b, the model\\n' > b.txt",
    }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, (r.stdout or "") .. (r.stderr or ""))
    assert(project.synced(), "the copy was not synced")
    local tabs = #vim.api.nvim_list_tabpages()
    diff(bufnr)
    -- the list's order: which entry is which file
    local order = {}
    for i, item in ipairs(vim.fn.getqflist()) do
      order[vim.fn.fnamemodify(vim.fn.bufname(item.bufnr), ":t")] = i
    end
    assert.truthy(order["a.txt"] and order["b.txt"], vim.inspect(order))
    local first = order["a.txt"] == 1 and "a.txt" or "b.txt"
    local second = first == "a.txt" and "b.txt" or "a.txt"
    local function mine(file)
      return file:sub(1, 1) .. ", the user"
    end
    local function theirs(file)
      return file:sub(1, 1) .. ", the model"
    end
    assert_shows(first, mine(first), theirs(first))
    assert.are.equal(tabs + 1, #vim.api.nvim_list_tabpages(), "control: the first diff has a tab page of its own")
    local view_tab = sides().tab
    -- a second diff from the chat's tab page: the same view, no new tab page
    diff(bufnr)
    assert.are.equal(tabs + 1, #vim.api.nvim_list_tabpages())
    assert.are.equal(view_tab, vim.api.nvim_get_current_tabpage())
    assert_shows(first, mine(first), theirs(first))
    -- <CR> on the second entry in the quickfix window
    vim.cmd("copen")
    assert.are.equal("quickfix", vim.bo.buftype)
    assert.are.equal(view_tab, vim.api.nvim_get_current_tabpage())
    vim.api.nvim_win_set_cursor(0, { order[second], 0 })
    vim.cmd('execute "normal! \\<CR>"')
    assert_shows(second, mine(second), theirs(second))
    -- :cprev from the user's side
    vim.api.nvim_set_current_win(require("flemma_sandbox.nvim.diff_view").state().left)
    vim.cmd("cprev")
    assert_shows(first, mine(first), theirs(first))
    -- :cnext from the copy's side: the user's file goes to the left again
    vim.api.nvim_set_current_win(require("flemma_sandbox.nvim.diff_view").state().right)
    vim.cmd("cnext")
    assert_shows(second, mine(second), theirs(second))
    assert.are.equal(tabs + 1, #vim.api.nvim_list_tabpages())
    -- the copy's window closed: the next entry makes it again
    local view = require("flemma_sandbox.nvim.diff_view").state()
    vim.api.nvim_win_close(view.right, true)
    vim.api.nvim_set_current_win(view.left)
    vim.cmd("cprev")
    assert_shows(first, mine(first), theirs(first))
    -- another quickfix list (say a :grep) is not followed: the copy's side
    -- stays (control: the same jump in the view's list above)
    vim.fn.setqflist({}, " ", { title = "grep", items = { { filename = proj .. "/" .. second, lnum = 1 } } })
    vim.cmd("cc 1")
    vim.wait(200)
    local s = sides()
    assert.are.equal(proj .. "/" .. second, s.left.name)
    assert.matches("^sandbox://.*/" .. vim.pesc(first) .. "$", s.right.name)
    -- the view's tab page closed: the next diff makes one again, one only
    vim.cmd("tabclose")
    assert.are.equal(tabs, #vim.api.nvim_list_tabpages())
    diff(bufnr)
    assert.are.equal(tabs + 1, #vim.api.nvim_list_tabpages())
    assert_shows(first, mine(first), theirs(first))
    -- the user's files are as they were
    assert.are.equal("a, the user\n", h.read(proj .. "/a.txt"))
    assert.are.equal("b, the user\n", h.read(proj .. "/b.txt"))
  end)
end)
