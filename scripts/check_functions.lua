--- The function-length gate (make lint): no Lua or C function over 100
--- lines, counted from the line of its header (Lua: the `function`
--- keyword; C: the first line of the declarator) to the line of its end,
--- both included (ARCHITECTURE.md: a function that grows past it does more
--- than one job; split it into named parts). Each offender is reported as
--- FILE:LINE NAME LENGTH.
---
--- usage: luajit scripts/check_functions.lua [--c-report-only] [ROOT]
---   --c-report-only: C offenders are listed but do not fail the gate
local MAX = 100

local root, c_report_only = ".", false
for _, a in ipairs(arg) do
  if a == "--c-report-only" then
    c_report_only = true
  else
    root = a
  end
end

--- Lua's keywords: never part of a function's name.
local KEYWORDS = {}
local WORDS =
  "and break do else elseif end false for function goto if in local nil not or repeat return then true until while"
for w in WORDS:gmatch("%a+") do
  KEYWORDS[w] = true
end

local here = (arg[0]:match("^(.*)/[^/]*$") or ".")
local tokenize = dofile(here .. "/lua_tokens.lua")

---@class gates.Function
---@field path string
---@field line integer
---@field name string
---@field length integer

--- The name a `function` keyword at tokens[i] defines: the one after it
--- (`function M.f`, `local function f`), or the one assigned
--- (`M.f = function`, `f = function` in a table), or "(anonymous)".
---@param tokens gates.Token[]
---@param i integer
---@return string
local function lua_name(tokens, i)
  local parts, j = {}, i + 1
  while tokens[j] and (tokens[j].kind == "name" or tokens[j].value == "." or tokens[j].value == ":") do
    parts[#parts + 1] = tokens[j].value
    j = j + 1
  end
  if #parts > 0 then
    return table.concat(parts)
  end
  if tokens[i - 1] and tokens[i - 1].value == "=" then
    local k, back = i - 2, {}
    while tokens[k] and ((tokens[k].kind == "name" and not KEYWORDS[tokens[k].value]) or tokens[k].value == ".") do
      table.insert(back, 1, tokens[k].value)
      k = k - 1
    end
    if #back > 0 then
      return table.concat(back)
    end
  end
  return "(anonymous)"
end

--- Every function of a Lua file with its length. A block opens at
--- `function`, `if`, `do` (a `while` or `for` opens with its `do`) and
--- `repeat`, and closes at `end` or `until`.
---@param path string
---@param text string
---@return gates.Function[]
local function lua_functions(path, text)
  local found, stack = {}, {}
  local tokens = tokenize(text)
  for i, t in ipairs(tokens) do
    if t.kind == "name" then
      local v = t.value
      if v == "function" then
        stack[#stack + 1] = { line = t.line, name = lua_name(tokens, i) }
      elseif v == "if" or v == "do" or v == "repeat" then
        stack[#stack + 1] = false
      elseif v == "end" or v == "until" then
        local open = table.remove(stack)
        if open then
          found[#found + 1] = { path = path, line = open.line, name = open.name, length = t.line - open.line + 1 }
        end
      end
    end
  end
  return found
end

--- Every function of a C file with its length: a body opens with "{"
--- alone at the start of a line (the project's style), or at the end of a
--- header line that starts at the line's start, and ends at the next "}"
--- at the start of a line; the header is the lines above the "{" back to
--- the one that starts at the line's start.
---@param path string
---@param text string
---@return gates.Function[]
local function c_functions(path, text)
  local found, lines = {}, {}
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = l
  end
  local n = 1
  while n <= #lines do
    local own_line = lines[n]:match("^{%s*$")
    local same_line = not own_line
      and lines[n]:match("^[%a_][^=;]*%)%s*{%s*$")
      and not lines[n]:match("^typedef")
      and not lines[n]:match("^struct")
      and not lines[n]:match("^union")
      and not lines[n]:match("^enum")
    if own_line or same_line then
      local head = own_line and n - 1 or n
      while head > 1 and lines[head]:match("^%s") do
        head = head - 1
      end
      local header = table.concat(lines, " ", head, own_line and n - 1 or n)
      local name = header:match("([%w_]+)%s*%(") or "(unknown)"
      local stop = n + 1
      while stop <= #lines and not lines[stop]:match("^}") do
        stop = stop + 1
      end
      found[#found + 1] = { path = path, line = head, name = name, length = stop - head + 1 }
      n = stop
    end
    n = n + 1
  end
  return found
end

--- The functions over MAX lines of the files `find` lists under root.
---@return string[]
local function offenders(find, reader)
  local over = {}
  local list = io.popen("cd '" .. root .. "' && " .. find .. " 2>/dev/null | LC_ALL=C sort")
  for path in list:lines() do
    local f = assert(io.open(root .. "/" .. path, "r"))
    local text = f:read("*a")
    f:close()
    for _, fn in ipairs(reader(path, text)) do
      if fn.length > MAX then
        over[#over + 1] = string.format("%s:%d %s %d lines (at most %d)", fn.path, fn.line, fn.name, fn.length, MAX)
      end
    end
  end
  list:close()
  return over
end

local lua_over = offenders("find lua scripts plugin -name '*.lua'", lua_functions)
local c_over = offenders("find csrc -name '*.c' -o -name '*.h'", c_functions)
for _, line in ipairs(lua_over) do
  io.stderr:write("functions: " .. line .. "\n")
end
for _, line in ipairs(c_over) do
  io.stderr:write("functions: " .. line .. (c_report_only and " [C: reported only]" or "") .. "\n")
end
if #lua_over > 0 or (#c_over > 0 and not c_report_only) then
  io.stderr:write(string.format("functions: %d over %d lines; split them into named parts\n", #lua_over + #c_over, MAX))
  os.exit(1)
end
print(
  #c_over > 0 and string.format("functions: ok (%d C function(s) over %d lines reported only)", #c_over, MAX)
    or "functions: ok"
)
