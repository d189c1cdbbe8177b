--- read, write and edit, with Flemma's inputs. They run in Neovim, not in the sandbox,
--- so they check the policy themselves: a write goes only to a path that
--- is_path_writable() accepts once every symlink is followed, and it is done
--- below the writable root without following any symlink (core.write_atomic),
--- so a link planted after the check cannot redirect it.
local core = require("flemma_sandbox.core")
local sandbox = require("flemma_sandbox")
local command_notes = require("flemma_sandbox.tools.command_notes")
local copy_paths = require("flemma_sandbox.tools.copy_paths")

local M = {}

--- Whether the rules let a command write (or read) path: the buffer's own
--- policy, or (under Flemma, ctx.resolved) the one our backend resolved
--- from Flemma's.
---@param path string as the sandbox sees it
---@param ctx table
---@param write boolean
---@return boolean, string|nil why
local function allowed(path, ctx, write)
  if ctx.resolved then
    return (write and sandbox.writable_in or sandbox.readable_in)(path, ctx.resolved)
  end
  local check = write and sandbox.is_path_writable or sandbox.is_path_readable
  return check(path, ctx.bufnr, ctx.config_opts)
end

--- edit reads the whole file to change it; past this it refuses.
M.EDIT_MAX_BYTES = 64 * 1024 * 1024

---@param path string
---@param ctx table
---@return string|nil real, string|nil err
local function locate(path, ctx)
  -- clone mode: the chat's copy of the repository, not the user's tree
  local absolute = ctx.copies and core.absolute(path, ctx.cwd)
  local c = absolute and copy_paths.copy_at(ctx.copies, absolute)
  if c then
    return copy_paths.resolve(c, absolute)
  end
  return sandbox.real_path(path, ctx.cwd)
end

--- A real path as the rules and the model see it (clone mode: at the
--- repository's path, not in the chat's folder).
---@param real string
---@param ctx table
---@return string
local function seen(real, ctx)
  return copy_paths.as_seen(ctx.copies, real)
end

--- The real path a write to `path` would reach, or why it may not happen
--- (naming the rule). Asked before approval and again right before writing.
---@param path string
---@param ctx table
---@return string|nil real, string|nil err
local function write_target(path, ctx)
  local real, err = locate(path, ctx)
  if not real then
    return nil, err
  end
  local ok, why = allowed(seen(real, ctx), ctx, true)
  if not ok then
    return nil, "write to " .. seen(real, ctx) .. " blocked: " .. command_notes.rule_of(why)
  end
  return real
end

--- Writes content to real atomically, keeping an existing file's mode.
---@return boolean|nil ok, string|nil err
local function write(real, content, ctx)
  local c = copy_paths.copy_holding(ctx.copies, real)
  local root = c and c.clone
  if not root and ctx.resolved then
    root = sandbox.root_of(real, ctx.resolved)
  elseif not root and sandbox.is_enabled(ctx.config_opts) then
    root = sandbox.root_of(real, (sandbox.get_policy(ctx.bufnr, ctx.config_opts)))
  end
  root = root or real:match("^(.*)/[^/]+$")
  if root == "" then
    root = "/"
  end
  local rel = real:sub(#root + (root == "/" and 1 or 2))
  return core.write_atomic(root, rel, content, tonumber("644", 8))
end

--- Reads a file for a tool on the host: opened first, then the rules are
--- checked against what was opened (its real path as the kernel names it),
--- so a folder swapped for a symlink between a check and the open cannot
--- redirect the read to a hidden file.
---@param path string as the model gave it
---@param ctx table
---@param max_bytes integer larger files are refused
---@return string|nil data, string real_or_err the real path, or why not
function M.read_checked(path, ctx, max_bytes)
  local asked = locate(path, ctx)
  if not asked then
    return nil, "cannot read " .. path .. ": no such file"
  end
  local data, second, third = core.read_opened(asked, max_bytes)
  local real, err = data and second or third, not data and second or nil
  if
    real
    and ctx.copies
    and copy_paths.copy_holding(ctx.copies, asked)
    and not copy_paths.copy_holding(ctx.copies, real)
  then
    return nil, "read of " .. path .. " blocked: it leads out of the chat's copy"
  end
  if real then
    local visible, why = allowed(seen(real, ctx), ctx, false)
    if not visible then
      return nil, "read of " .. seen(real, ctx) .. " blocked: " .. command_notes.rule_of(why)
    end
  end
  if not data then
    return nil, real and err or ("cannot read " .. path .. ": " .. err)
  end
  return data, real
end

--- What follows the lines a read returns, as Flemma words it.
local function read_footer(first, info, limit_hit, max_bytes)
  local last = info.last
  if info.cut then
    if last < first then
      return string.format(
        "\n\n[Line %d is over the %d byte limit; read part of it with bash: sed -n '%dp' FILE | head -c %d]",
        first,
        max_bytes,
        first,
        max_bytes
      )
    end
    return string.format(
      "\n\n[Showing lines %d-%d of %d (%d byte limit). Use offset=%d to continue.]",
      first,
      last,
      info.total_lines,
      max_bytes,
      last + 1
    )
  elseif limit_hit and last < info.total_lines then
    return string.format("\n\n[%d more lines in file. Use offset=%d to continue.]", info.total_lines - last, last + 1)
  end
  return ""
end

M.read = {
  name = "read",
  input_schema = {
    type = "object",
    properties = {
      label = command_notes.LABEL,
      path = { type = "string", description = "file to read, relative to the working directory" },
      offset = { type = "number", nullable = true, description = "first line to return (1-based)" },
      limit = { type = "number", nullable = true, description = "the most lines to return" },
    },
    required = { "path" },
  },
  describe = function(info)
    return "Read a text file's lines; offset (1-based) and limit choose a part, so a file of any size "
      .. "can be read in parts. One call returns at most "
      .. info.read_max_bytes
      .. " bytes and says where to continue. Binary files are refused."
  end,
  prepare = function(input, ctx)
    local real, err = locate(input.path, ctx)
    if not real then
      return nil, err
    end
    return { lines = { "read " .. seen(real, ctx) } }
  end,
  run = function(input, ctx, done)
    local asked = locate(input.path, ctx)
    if not asked then
      return done({ error = "cannot read " .. input.path .. ": no such file" })
    end
    local first = math.max(1, math.floor(input.offset or 1))
    local count = input.limit and math.max(1, math.floor(input.limit)) or 1e12
    local max_bytes = ctx.config.tools.read_max_bytes
    local data, real, info = core.read_lines(asked, math.min(first, 1e12), math.min(count, 1e12), max_bytes)
    if not data then
      real, data = info, real -- nil, err, real
      if not real then
        return done({ error = "cannot read " .. input.path .. ": " .. tostring(data) })
      end
    end
    if ctx.copies and copy_paths.copy_holding(ctx.copies, asked) and not copy_paths.copy_holding(ctx.copies, real) then
      return done({ error = "read of " .. input.path .. " blocked: it leads out of the chat's copy" })
    end
    local visible, why = allowed(seen(real, ctx), ctx, false)
    if not visible then
      return done({ error = "read of " .. seen(real, ctx) .. " blocked: " .. command_notes.rule_of(why) })
    end
    real = seen(real, ctx)
    if type(info) ~= "table" then
      return done({ error = tostring(data) })
    end
    if data:sub(1, 8192):find("\0", 1, true) then
      return done({ error = real .. " looks binary (it has NUL bytes); not shown" })
    end
    if info.total_lines > 0 and first > info.total_lines then
      local msg = "Offset %d is beyond end of file (%d lines total)"
      return done({ error = string.format(msg, first, info.total_lines) })
    end
    if info.cut and info.last >= first then
      data = data:match("^(.*\n)") or data -- whole lines only, when there is one
    end
    local text = data:gsub("\n$", "")
    done({ content = text .. read_footer(first, info, input.limit ~= nil, max_bytes) })
  end,
}

--- Lines of content the write question shows before it says how many more.
M.QUESTION_CONTENT_LINES = 12

--- What the write question shows: the target, the size, and the start of
--- the content (each line marked "| ", so no line of it passes for a
--- choice or for the question's own text).
---@param real string
---@param content string
---@return string[]
function M.write_question(real, content)
  local all = {}
  -- the newline that ends the last line starts no line of its own
  local ended = (content == "" or content:sub(-1) == "\n") and content or content .. "\n"
  for line in ended:gmatch("([^\n]*)\n") do
    all[#all + 1] = line
  end
  local out = {
    string.format("write %d bytes (%d lines) to %s", #content, #all, real),
    "",
  }
  for i = 1, math.min(#all, M.QUESTION_CONTENT_LINES) do
    out[#out + 1] = "| " .. all[i]
  end
  if #all > M.QUESTION_CONTENT_LINES then
    out[#out + 1] = string.format("(%d more lines)", #all - M.QUESTION_CONTENT_LINES)
  end
  return out
end

M.write = {
  name = "write",
  input_schema = {
    type = "object",
    properties = {
      label = command_notes.LABEL,
      path = { type = "string", description = "file to write, relative to the working directory" },
      content = { type = "string", description = "the whole new content" },
    },
    required = { "path", "content" },
  },
  describe = function(info)
    return "Write a whole file (created with its folders if missing, replaced atomically if present). "
      .. "Only these paths are writable: "
      .. info.writable
      .. "."
  end,
  prepare = function(input, ctx)
    local real, err = write_target(input.path, ctx)
    return real and { lines = M.write_question(seen(real, ctx), input.content) }, err
  end,
  run = function(input, ctx, done)
    local real, err = write_target(input.path, ctx)
    local ok
    if real then
      ok, err = write(real, input.content, ctx)
    end
    done(ok and { content = string.format("Wrote %d bytes to %s", #input.content, input.path) } or { error = err })
  end,
}

--- Plain (not pattern) occurrences of needle in text.
local function count(text, needle)
  local n, at = 0, 1
  while true do
    local i = text:find(needle, at, true)
    if not i then
      return n
    end
    n, at = n + 1, i + #needle
  end
end

--- Replaces plain occurrences (the first, or all).
local function replace(text, old, new, all)
  local out, at = {}, 1
  while true do
    local i = text:find(old, at, true)
    if not i then
      break
    end
    out[#out + 1] = text:sub(at, i - 1) .. new
    at = i + #old
    if not all then
      break
    end
  end
  out[#out + 1] = text:sub(at)
  return table.concat(out)
end

--- The edit rule: oldText must be found, and be unique.
---@return string|nil new_text, string|nil err
function M.apply_edit(text, input)
  if input.oldText == "" then
    return nil, "oldText is empty"
  end
  local n = count(text, input.oldText)
  if n == 0 then
    return nil, "oldText was not found in the file"
  end
  if n > 1 then
    return nil, string.format("oldText occurs %d times; add context to make it unique", n)
  end
  return replace(text, input.oldText, input.newText, false)
end

M.edit = {
  name = "edit",
  input_schema = {
    type = "object",
    properties = {
      label = command_notes.LABEL,
      path = { type = "string", description = "file to change" },
      oldText = { type = "string", description = "exact text to replace; must occur exactly once" },
      newText = { type = "string", description = "replacement text" },
    },
    required = { "path", "oldText", "newText" },
  },
  describe = function(info)
    return "Replace exact text in a file. oldText must occur exactly once. "
      .. "Only these paths are writable: "
      .. info.writable
      .. "."
  end,
  prepare = function(input, ctx)
    local real, err = write_target(input.path, ctx)
    local shown = real and { "edit " .. seen(real, ctx), "- " .. input.oldText, "+ " .. input.newText }
    return shown and { lines = shown }, err
  end,
  run = function(input, ctx, done)
    local real, err = write_target(input.path, ctx)
    local text
    if real then
      text, err = M.read_checked(real, ctx, M.EDIT_MAX_BYTES)
    end
    local new_text
    if text then
      new_text, err = M.apply_edit(text, input)
    end
    local ok
    if new_text then
      ok, err = write(real, new_text, ctx)
    end
    done(ok and { content = "Edited " .. input.path } or { error = err })
  end,
}

return M
