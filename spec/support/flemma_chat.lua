--- A Flemma chat holding one tool use, run with :Flemma tool:execute (the
--- real Flemma, FLEMMA_DIR), for the bridge's specs.
local h = require("support.helpers")

local uv = vim.uv or vim.loop

local M = {}

--- A chat's lines: a user turn, then the assistant's one tool use.
---@param tool string
---@param id string
---@param input table
---@return string[]
function M.lines(tool, id, input)
  return {
    "@You:",
    "go",
    "",
    "@Assistant:",
    "On it.",
    "",
    "**Tool Use:** `" .. tool .. "` (`" .. id .. "`)",
    "```json",
    vim.json.encode(input),
    "```",
  }
end

--- Opens a chat holding one tool use, runs :Flemma tool:execute on it and
--- waits for the result; returns the buffer's text.
---@param path string the chat's file
---@param tool string
---@param input table
---@param frontmatter? string Lua frontmatter
---@param before_execute? fun() called once the chat is open, right before :Flemma tool:execute
---@return string text, integer bufnr
function M.execute(path, tool, input, frontmatter, before_execute)
  local lines = M.lines(tool, "toolu_" .. tostring(uv.hrtime()), input)
  if frontmatter then
    lines = vim.list_extend({ "```lua", frontmatter, "```" }, lines)
  end
  h.write(path, table.concat(lines, "\n") .. "\n")
  vim.cmd("edit! " .. vim.fn.fnameescape(path))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.api.nvim_win_set_cursor(0, { #lines - 3, 0 })
  if before_execute then
    before_execute()
  end
  vim.cmd("Flemma tool:execute")
  local text
  local done = vim.wait(30000, function()
    text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
    local result = text:match("%*%*Tool Result:%*%*[^\n]*\n(.*)$")
    local pending = require("flemma.tools.executor").get_pending(bufnr)[1]
    return result ~= nil and result:find("```", 1, true) ~= nil and not pending
  end, 20)
  assert(done, "no result: " .. tostring(text))
  return text, bufnr
end

--- The buffer's text once an error result is in it (a refused call's
--- result is written after execute() returns).
---@param bufnr integer
---@return string
function M.error_result(bufnr)
  local text
  assert(
    vim.wait(10000, function()
      text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
      return text:find("(error)", 1, true) ~= nil
    end, 20),
    "no error result"
  )
  return text
end

--- The tool result's text (what follows the result's header).
---@param text string the buffer's text
---@return string
function M.result_of(text)
  return text:match("%*%*Tool Result:%*%*[^\n]*\n(.*)$") or ""
end

--- Sets Flemma up for the specs (no LSP) and loads its tools; with
--- workspace, our backend's sandboxes.workspace set to it.
---@param workspace? "direct"|"clone"
function M.setup_flemma(workspace)
  local opts = { lsp = { enabled = false } }
  if workspace then
    opts.sandbox = { backends = { flemma_sandbox = { sandboxes = { workspace = workspace } } } }
  end
  require("flemma").setup(opts)
  require("flemma.tools").get_all()
end

--- A fresh project for each test of the describe block it is called in:
--- before, support.project.enter(script) with HOME at dir/home (its
--- .cache and .local/share made: Flemma's default rw_paths name them, and
--- its own bwrap backend needs them), dir/chats made, Flemma's sandbox
--- enabled again and, with opts.flemma, M.setup_flemma(); after,
--- opts.settle() if given, every buffer wiped, HOME back, project.leave.
---@param script string sh run in the new project
---@param set fun(p: spec.Project)
---@param opts? { flemma?: boolean, settle?: fun() }
function M.each_project(script, set, opts)
  opts = opts or {}
  local busted = require("busted")
  local project = require("support.project")
  local p, old_home
  busted.before_each(function()
    old_home = vim.env.HOME
    p = project.enter(script)
    vim.env.HOME = p.dir .. "/home"
    vim.fn.mkdir(p.dir .. "/home/.cache", "p")
    vim.fn.mkdir(p.dir .. "/home/.local/share", "p")
    vim.fn.mkdir(p.dir .. "/chats", "p")
    require("flemma.sandbox").reset_enabled()
    if opts.flemma then
      M.setup_flemma()
    end
    set(p)
  end)
  busted.after_each(function()
    if opts.settle then
      opts.settle()
    end
    vim.cmd("silent! %bwipeout!")
    vim.env.HOME = old_home
    project.leave(p)
  end)
end

return M
