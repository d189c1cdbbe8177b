--- The command line's commands besides run: list, status, and the
--- review (diff, apply, discard) and removal (reset, delete, gc) of
--- sandboxes, the same as :FlemmaSandbox's, as text in a terminal.
local cli = require("flemma_sandbox.cli.failure")
local sandbox = require("flemma_sandbox.cli.sandbox")
local terminal_text = require("flemma_sandbox.cli.terminal_text")

local M = {}

--- Prints lines on stdout (a path from a copy may hold any byte: shown
--- escaped in a terminal).
---@param lines string[]
local function say(lines)
  io.stdout:write(terminal_text.for_fd(1, table.concat(lines, "\n") .. "\n"))
end

--- The flags among args (each one of allowed) and the one plain word.
---@param command string
---@param args string[]
---@param allowed string[]
---@param wants_name boolean|"optional"
---@return table<string, boolean> flags, string|nil name
local function parse(command, args, allowed, wants_name)
  local flags, name = {}, nil
  for _, a in ipairs(args) do
    if a:sub(1, 1) == "-" then
      if not vim.tbl_contains(allowed, a) then
        cli.fail(command .. ": unknown option '" .. a .. "' (flemma-sandbox help)")
      end
      flags[a] = true
    elseif wants_name and name == nil then
      name = a
    else
      cli.fail(command .. ": unexpected argument '" .. a .. "' (flemma-sandbox help)")
    end
  end
  if wants_name == true and name == nil then
    cli.fail(command .. ": which sandbox? flemma-sandbox " .. command .. " NAME (flemma-sandbox list)")
  end
  return flags, name
end

--- The sandbox NAME of this project, which must exist.
---@param command string
---@param name string
---@return integer bufnr, { project: string, in_git: boolean, dir: string }
local function existing(command, name)
  local bufnr, info = sandbox.open(name, false)
  if vim.fn.isdirectory(info.dir) == 0 then
    cli.fail(command .. ": no sandbox " .. name .. " in " .. info.project .. " (flemma-sandbox list)")
  end
  return bufnr, info
end

--- Removes dirs (their live sandboxes stopped first) unless a copy in
--- them has work not applied and force is not given.
---@param dirs string[]
---@param what string
---@param force boolean|nil
---@return integer
local function remove(dirs, what, force)
  local sandboxes = require("flemma_sandbox.nvim.sandboxes")
  local unapplied = sandboxes.unapplied(force and {} or dirs)
  if #unapplied > 0 then
    cli.fail(
      "not removed: work in a copy is not applied (apply or discard it, or add --force): "
        .. table.concat(unapplied, "; ")
    )
  end
  if #dirs == 0 then
    say({ "nothing to remove: " .. what })
    return 0
  end
  local errors, kept = sandbox.wait(function(done)
    sandboxes.remove(dirs, done)
  end)
  local how = require("flemma_sandbox.backends.workspace_keep").how_to(kept or {})
  if #errors > 0 then
    say(how)
    cli.fail("not all removed: " .. table.concat(errors, "; "))
  end
  say(vim.list_extend({ string.format("removed %d folder(s): %s", #dirs, what) }, how))
  return 0
end

function M.list(args)
  local flags = parse("list", args, { "--all" }, false)
  sandbox.load_config()
  sandbox.enter_project()
  say(require("flemma_sandbox.nvim.sandboxes").list_lines(flags["--all"]))
  return 0
end

--- The command line's subcommands that :FlemmaSandbox shares.
local SHARED = { diff = true, apply = true, discard = true, reset = true, delete = true, log = true }

--- status's lines for sandbox NAME as the command line names it: the
--- sandbox, not the buffer that stands for it, and its own subcommands
--- (`flemma-sandbox reset NAME`), not :FlemmaSandbox's.
---@param lines string[]
---@param name string
---@param project string
---@return string[]
function M.command_line_status(lines, name, project)
  local out = {}
  for i, line in ipairs(lines) do
    if i == 1 then
      line = line:gsub("^flemma%-sandbox, buffer %d+: .*$", "flemma-sandbox, sandbox " .. name .. " of " .. project)
    end
    line = line:gsub(":FlemmaSandbox diff, apply, discard", "flemma-sandbox diff|apply|discard " .. name)
    line = line:gsub(":FlemmaSandbox (%l+)", function(sub)
      return SHARED[sub] and ("flemma-sandbox " .. sub .. " " .. name) or nil
    end)
    line = line:gsub("of chat " .. vim.pesc(name) .. "%f[^%w._-]", "of sandbox " .. name)
    -- its terminal folds nothing
    line = line:gsub("^(%s*details) %(zo shows them%):$", "%1:")
    -- the command line takes no checkpoints: nothing of it is undone
    if not line:find("(:FlemmaSandbox undo, checkpoints)", 1, true) then
      out[#out + 1] = (line:gsub("this chat", "this sandbox"))
    end
  end
  return out
end

function M.status(args)
  local _, name = parse("status", args, {}, "optional")
  local saved = require("flemma_sandbox.config.saved")
  local path = saved.path()
  local lines = {
    "config: " .. tostring(path) .. (vim.fn.filereadable(path or "") == 1 and "" or " (none yet: the defaults)"),
  }
  if name then
    local bufnr, info = sandbox.open(name, false)
    vim.list_extend(
      lines,
      M.command_line_status(require("flemma_sandbox.nvim.status").lines(bufnr), name, info.project)
    )
  else
    sandbox.load_config()
    sandbox.enter_project()
    vim.list_extend(lines, require("flemma_sandbox.nvim.sandboxes").list_lines(false))
  end
  say(lines)
  return 0
end

--- The clone-mode sandbox named in args (flags among allowed), or a
--- failure when it works on the real tree.
---@param command string
---@param args string[]
---@param allowed? string[]
---@return integer bufnr, string name, table<string, boolean> flags
local function clone_sandbox(command, args, allowed)
  local flags, name = parse(command, args, allowed or {}, true)
  local bufnr = existing(command, name)
  if not require("flemma_sandbox.api.clone_mode").is_clone(bufnr) then
    cli.fail(command .. ": " .. name .. " works on the real tree (not a git repository, or run --direct)")
  end
  return bufnr, name, flags
end

--- Runs workspaces[method] on the clone-mode sandbox named in args and
--- waits for it; its name and what the method's callback got.
---@param command "diff"|"apply"
---@param args string[]
---@param method "changes"|"apply"
---@return string name, any, any
local function on_copy(command, args, method)
  local bufnr, name = clone_sandbox(command, args)
  return name, sandbox.wait(function(done)
    require("flemma_sandbox.api.clone_mode")[method](bufnr, done)
  end)
end

function M.diff(args)
  local name, changes, errors = on_copy("diff", args, "changes")
  for _, err in ipairs(errors or {}) do
    io.stderr:write(terminal_text.for_fd(2, "flemma-sandbox: " .. err .. "\n"))
  end
  local review = require("flemma_sandbox.api.review")
  local seen = {}
  for _, c in ipairs(changes or {}) do
    if not seen[c.top] then
      seen[c.top] = true
      -- the copy's bytes: to a terminal with their controls shown, not run
      io.stdout:write(terminal_text.for_fd(1, review.patch(c.top, name)))
    end
  end
  if #(changes or {}) == 0 then
    io.stderr:write("flemma-sandbox: " .. name .. "'s copy has no changes that are not applied\n")
  end
  return 0
end

function M.apply(args)
  local _, result, errors = on_copy("apply", args, "apply")
  local lines = {}
  for _, path in ipairs(result.applied) do
    lines[#lines + 1] = "applied    " .. path
  end
  for _, e in ipairs(result.conflicts) do
    lines[#lines + 1] = "conflict   " .. e.path .. ": " .. e.text
  end
  for _, e in ipairs(result.skipped) do
    lines[#lines + 1] = "not in     " .. e.path .. ": " .. e.text
  end
  lines[#lines + 1] = string.format(
    "applied %d file(s); %d conflict(s), %d not brought in",
    #result.applied,
    #result.conflicts,
    #result.skipped
  )
  for _, err in ipairs(errors or {}) do
    lines[#lines + 1] = "error: " .. err
  end
  say(lines)
  return (#result.conflicts > 0 or #result.skipped > 0 or #(errors or {}) > 0) and 1 or 0
end

--- Asks on the terminal (/dev/tty) whether to go on; nil when there is
--- none to ask on.
---@param question string
---@return boolean|nil
local function ask_terminal(question)
  local tty = io.open("/dev/tty", "r+")
  if not tty then
    return nil
  end
  tty:write(question .. " [y/N] ")
  tty:flush()
  local answer = tty:read("*l") or ""
  tty:close()
  return answer:match("^%s*[yY]") ~= nil
end

function M.discard(args)
  local bufnr, name, flags = clone_sandbox("discard", args, { "--force", "-f" })
  local workspaces = require("flemma_sandbox.api.clone_mode")
  if not (flags["--force"] or flags["-f"]) then
    sandbox.wait(function(done)
      workspaces.sync(bufnr, done)
    end)
    local unapplied = workspaces.unapplied(bufnr)
    if #unapplied > 0 then
      local lines = { "work not applied: " .. table.concat(unapplied, "; ") }
      local yes = ask_terminal(
        terminal_text.escape(lines[1])
          .. "\nthrow "
          .. name
          .. "'s copy away? (its work is kept 14 days under refs/flemma-sandbox/discarded/)"
      )
      if yes == nil then
        cli.fail("discard: not discarded: " .. lines[1] .. " (no terminal to ask on: add --force to discard it)")
      elseif not yes then
        say({ "not discarded: " .. name .. "'s copy is kept" })
        return 1
      end
    end
  end
  local errors, kept = sandbox.wait(function(done)
    workspaces.discard(bufnr, done)
  end)
  if #errors > 0 then
    cli.fail("not discarded: " .. table.concat(errors, "; "))
  end
  local lines = { "discarded " .. name .. "'s copy; its next run starts from your tree as it is then" }
  say(vim.list_extend(lines, require("flemma_sandbox.backends.workspace_keep").how_to(kept or {})))
  return 0
end

function M.reset(args)
  local _, name = parse("reset", args, {}, true)
  local _, info = existing("reset", name)
  local targets = require("flemma_sandbox.nvim.sandboxes").reset_targets({ dir = info.dir })
  return remove(targets, name .. "'s /tmp and home folders", true)
end

function M.delete(args)
  local flags, name = parse("delete", args, { "--force" }, true)
  local _, info = existing("delete", name)
  return remove({ info.dir }, "sandbox " .. name, flags["--force"])
end

function M.gc(args)
  local flags = parse("gc", args, { "--force" }, false)
  sandbox.load_config()
  sandbox.enter_project()
  local sandboxes = require("flemma_sandbox.nvim.sandboxes")
  local pruned, errors = sandboxes.prune_kept()
  say(pruned)
  for _, err in ipairs(errors) do
    io.stderr:write(terminal_text.for_fd(2, "flemma-sandbox: " .. err .. "\n"))
  end
  local targets = sandboxes.gc_targets()
  return remove(targets, "sandboxes whose project or chat is gone", flags["--force"])
end

return M
