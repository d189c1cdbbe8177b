--- read_file, write_file and edit. They run in Neovim, not in the sandbox,
--- so they check the policy themselves: a write goes only to a path that
--- is_path_writable() accepts once every symlink is followed, and it is done
--- below the writable root without following any symlink (core.write_atomic),
--- so a link planted after the check cannot redirect it.
local core = require("flemma_sandbox.core")
local policy = require("flemma_sandbox.policy")
local sandbox = require("flemma_sandbox")
local shell = require("flemma_sandbox.tools.shell")

local M = {}

--- edit reads the whole file to change it; past this it refuses.
M.EDIT_MAX_BYTES = 64 * 1024 * 1024

---@param path string
---@param ctx table
---@return string|nil real, string|nil err
local function locate(path, ctx)
  return policy.real_path(path, ctx.cwd)
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
  local ok, why = sandbox.is_path_writable(real, ctx.bufnr, ctx.config_opts)
  if not ok then
    return nil, "write to " .. real .. " blocked: " .. shell.rule_of(why)
  end
  return real
end

--- Writes content to real atomically, keeping an existing file's mode.
---@return boolean|nil ok, string|nil err
local function write(real, content, ctx)
  local root
  if sandbox.is_enabled(ctx.config_opts) then
    root = policy.root_of(real, (sandbox.get_policy(ctx.bufnr, ctx.config_opts)))
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
  if real then
    local visible, why = sandbox.is_path_readable(real, ctx.bufnr, ctx.config_opts)
    if not visible then
      return nil, "read of " .. real .. " blocked: " .. shell.rule_of(why)
    end
  end
  if not data then
    return nil, real and err or ("cannot read " .. path .. ": " .. err)
  end
  return data, real
end

M.read_file = {
  name = "read_file",
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "file to read, relative to the working directory" },
      offset = { type = "integer", description = "first line to return (1-based)" },
      limit = { type = "integer", description = "number of lines to return" },
      line_numbers = { type = "boolean", description = "prefix each line with its number" },
    },
    required = { "path" },
  },
  describe = function(info)
    return "Read a text file. Returns its lines (offset and limit select a part; line_numbers adds numbers). "
      .. "Binary files and files over "
      .. info.read_max_bytes
      .. " bytes are refused; read such a file in parts with bash (head, sed -n)."
  end,
  prepare = function(input, ctx)
    local real, err = locate(input.path, ctx)
    if not real then
      return nil, err
    end
    return { lines = { "read " .. real } }
  end,
  run = function(input, ctx, done)
    local data, err = M.read_checked(input.path, ctx, ctx.config.tools.read_max_bytes)
    if not data then
      return done({ error = err })
    end
    local real = err
    if data:sub(1, 8192):find("\0", 1, true) then
      return done({ error = real .. " looks binary (it has NUL bytes); not shown" })
    end
    local first, limit = math.max(input.offset or 1, 1), input.limit or math.huge
    local out, n = {}, 0
    for line in (data .. (data:sub(-1) == "\n" and "" or "\n")):gmatch("(.-)\n") do
      n = n + 1
      if n >= first and n < first + limit then
        out[#out + 1] = input.line_numbers and string.format("%6d\t%s", n, line) or line
      end
    end
    done({ content = table.concat(out, "\n") })
  end,
}

M.write_file = {
  name = "write_file",
  input_schema = {
    type = "object",
    properties = {
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
    return real and { lines = { "write " .. #input.content .. " bytes to " .. real } }, err
  end,
  run = function(input, ctx, done)
    local real, err = write_target(input.path, ctx)
    local ok
    if real then
      ok, err = write(real, input.content, ctx)
    end
    done(ok and { success = true } or { error = err })
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

--- The edit rule: old_string must be found, and be unique unless replace_all.
---@return string|nil new_text, string|nil err
function M.apply_edit(text, input)
  if input.old_string == "" then
    return nil, "old_string is empty"
  end
  local n = count(text, input.old_string)
  if n == 0 then
    return nil, "old_string was not found in the file"
  end
  if n > 1 and not input.replace_all then
    return nil, string.format("old_string occurs %d times; add context to make it unique, or set replace_all", n)
  end
  return replace(text, input.old_string, input.new_string, input.replace_all)
end

M.edit = {
  name = "edit",
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "file to change" },
      old_string = { type = "string", description = "exact text to replace; must be unique unless replace_all" },
      new_string = { type = "string", description = "replacement text" },
      replace_all = { type = "boolean", description = "replace every occurrence" },
    },
    required = { "path", "old_string", "new_string" },
  },
  describe = function(info)
    return "Replace exact text in a file. old_string must occur exactly once unless replace_all is true. "
      .. "Only these paths are writable: "
      .. info.writable
      .. "."
  end,
  prepare = function(input, ctx)
    local real, err = write_target(input.path, ctx)
    local shown = real
      and { "edit " .. real, "- " .. input.old_string:sub(1, 200), "+ " .. input.new_string:sub(1, 200) }
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
    done(ok and { success = true } or { error = err })
  end,
}

return M
