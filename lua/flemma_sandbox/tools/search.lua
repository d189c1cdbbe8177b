--- find, grep and ls with Flemma's inputs. They run inside the buffer's
--- sandbox (GNU find and grep), so they see only what a command would: a
--- hidden file is neither listed nor searched.
local bash = require("flemma_sandbox.tools.bash")
local core = require("flemma_sandbox.core")
local command_notes = require("flemma_sandbox.tools.command_notes")
local copy_paths = require("flemma_sandbox.tools.copy_paths")

local M = {}

M.FIND_LIMIT = 500
M.GREP_LIMIT = 100
M.LS_LIMIT = 500
M.LS_MAX_DEPTH = 10

--- The folder a call searches: its path (relative to the working
--- directory), or the working directory.
local function folder(input, ctx)
  if input.path == nil or input.path == "" then
    return ctx.cwd
  end
  return core.resolve(input.path, ctx.cwd) or core.absolute(input.path, ctx.cwd)
end

--- At most `limit` lines of out, sorted when asked, with a last line saying
--- how many were left out.
local function first_lines(out, limit, sort, what)
  local lines = {}
  for line in out:gmatch("[^\n]+") do
    lines[#lines + 1] = line
  end
  if sort then
    table.sort(lines)
  end
  local total = #lines
  if total > limit then
    lines = { unpack(lines, 1, limit) }
    lines[#lines + 1] = string.format("[%d more %s; narrow the search or raise limit]", total - limit, what)
  end
  return lines, total
end

--- Runs argv in the sandbox in `dir`; shape(result, r) sets the text.
local function run_in(argv, dir, ctx, shape, done)
  -- clone mode: the sandbox shows the copy's folder there, not the user's
  if not copy_paths.copy_at(ctx.copies, dir) and vim.fn.isdirectory(dir) == 0 then
    return done({ error = "no such folder: " .. dir })
  end
  bash.run_argv(argv, ctx, { cwd = dir }, function(result, notes, r)
    shape(result, r)
    if result.content and #notes > 0 then
      result.content = result.content .. "\n" .. table.concat(notes, "\n")
    end
  end, done)
end

local function prepare_in(what)
  return function(input, ctx)
    local dir = folder(input, ctx)
    return { lines = { what(input), "folder: " .. dir, "runs in the sandbox" } }
  end
end

M.find = {
  name = "find",
  input_schema = {
    type = "object",
    properties = {
      label = command_notes.LABEL,
      pattern = { type = "string", description = "glob, e.g. '*.lua' or 'src/**/*.tsx'" },
      path = { type = "string", nullable = true, description = "folder to search (default: working directory)" },
      limit = { type = "number", nullable = true, description = "the most results (default 500)" },
    },
    required = { "pattern" },
  },
  describe = function()
    return "Find files whose path matches a glob ('*.lua' matches names at any depth, 'src/**/*.tsx' paths),"
      .. " in the sandbox's view of the project."
  end,
  prepare = prepare_in(function(input)
    return "find " .. input.pattern
  end),
  run = function(input, ctx, done)
    local dir = folder(input, ctx)
    local argv = { "find", ".", "-name", ".git", "-prune", "-o" }
    if input.pattern:find("/", 1, true) then
      local glob = input.pattern:gsub("^%./", ""):gsub("%*%*/?", "*")
      vim.list_extend(argv, { "-path", "./" .. glob, "-printf", "%P\n" })
    else
      vim.list_extend(argv, { "-name", input.pattern, "-printf", "%P\n" })
    end
    run_in(argv, dir, ctx, function(result)
      if result.exit_code == 0 then
        local lines = first_lines(result.stdout, math.max(1, math.floor(input.limit or M.FIND_LIMIT)), true, "files")
        result.content = #lines > 0 and table.concat(lines, "\n") or "No files found matching " .. input.pattern
      end
    end, done)
  end,
}

M.grep = {
  name = "grep",
  input_schema = {
    type = "object",
    properties = {
      label = command_notes.LABEL,
      pattern = { type = "string", description = "extended regular expression" },
      path = { type = "string", nullable = true, description = "folder to search (default: working directory)" },
      glob = { type = "string", nullable = true, description = "only files whose name matches, e.g. '*.lua'" },
      limit = { type = "number", nullable = true, description = "the most matching lines (default 100)" },
    },
    required = { "pattern" },
  },
  describe = function()
    return "Search file contents for an extended regular expression; answers path:line:text."
  end,
  prepare = prepare_in(function(input)
    return "grep /" .. input.pattern .. "/" .. (input.glob and (" in " .. input.glob) or "")
  end),
  run = function(input, ctx, done)
    local argv = { "grep", "-rnIE", "--exclude-dir=.git", "--color=never" }
    if input.glob then
      argv[#argv + 1] = "--include=" .. input.glob
    end
    vim.list_extend(argv, { "-e", input.pattern })
    run_in(argv, folder(input, ctx), ctx, function(result)
      -- 2 when only unreadable files failed (the sandbox hides them): still an answer
      local unreadable = result.exit_code == 2 and result.stderr ~= ""
      for line in result.stderr:gmatch("[^\n]+") do
        unreadable = unreadable and line:find("Permission denied$") ~= nil
      end
      if unreadable and result.stdout == "" then
        result.stdout, result.exit_code = "No matches found\n", 0
      end
      if result.exit_code == 0 or (unreadable and result.stdout ~= "") then
        local lines = first_lines(result.stdout, math.max(1, math.floor(input.limit or M.GREP_LIMIT)), false, "matches")
        if result.stderr ~= "" then
          lines[#lines + 1] = "[stderr]\n" .. result.stderr
        end
        result.content = table.concat(lines, "\n")
      elseif result.exit_code == 1 and not result.timed_out then
        result.content = "No matches found"
        result.exit_code = 0
      end
    end, done)
  end,
}

M.ls = {
  name = "ls",
  input_schema = {
    type = "object",
    properties = {
      label = command_notes.LABEL,
      path = { type = "string", description = "folder to list" },
      max_depth = { type = "number", nullable = true, description = "depth (default 1, at most 10)" },
      limit = { type = "number", nullable = true, description = "the most entries (default 500)" },
    },
    required = { "path" },
  },
  describe = function()
    return "List a folder (folders end in /), max_depth levels deep."
  end,
  prepare = prepare_in(function(input)
    return "ls " .. input.path
  end),
  run = function(input, ctx, done)
    local depth = math.max(1, math.min(M.LS_MAX_DEPTH, math.floor(input.max_depth or 1)))
    local argv = { "find", ".", "-mindepth", "1", "-maxdepth", tostring(depth), "-printf", "%y %P\n" }
    run_in(argv, folder(input, ctx), ctx, function(result)
      if result.exit_code == 0 then
        local entries = {}
        for kind, name in result.stdout:gmatch("(%S) ([^\n]+)") do
          entries[#entries + 1] = name .. (kind == "d" and "/" or "")
        end
        local limit = math.max(1, math.floor(input.limit or M.LS_LIMIT))
        local lines = first_lines(table.concat(entries, "\n"), limit, true, "entries")
        result.content = #lines > 0 and table.concat(lines, "\n") or "(empty folder)"
      end
    end, done)
  end,
}

return M
