--- A small Lua lexer for the gates (scripts/check_layers.lua,
--- scripts/check_functions.lua): a file's text as a list of tokens, with
--- comments dropped and strings as their values, so a name inside a
--- comment or a string is never taken for code and a call split over
--- lines is still one call.
---
--- usage: local tokens = dofile("scripts/lua_tokens.lua")(text)
---@class gates.Token
---@field kind "name"|"string"|"number"|"op"
---@field value string the name, the string's contents, the number or the operator
---@field line integer where it starts

--- The operators of two and three characters, longest first.
local LONG_OPS = { "...", "==", "~=", "<=", ">=", "..", "::", "//", "<<", ">>" }

--- The end of a long bracket opened at `i` ("[[", "[==["), or nil when `i`
--- opens none; the level's closing bracket is searched from there.
---@return integer|nil content_start, string|nil closing
local function long_bracket(text, i)
  local eqs = text:match("^%[(=*)%[", i)
  if not eqs then
    return nil, nil
  end
  return i + #eqs + 2, "]" .. eqs .. "]"
end

--- Counts the newlines of text[a..b].
local function newlines(text, a, b)
  local n = 0
  for _ in text:sub(a, b):gmatch("\n") do
    n = n + 1
  end
  return n
end

--- The tokens of `text`.
---@param text string
---@return gates.Token[]
return function(text)
  local tokens, i, line, len = {}, 1, 1, #text
  local function add(kind, value, at)
    tokens[#tokens + 1] = { kind = kind, value = value, line = at }
  end
  while i <= len do
    local c = text:sub(i, i)
    if c == "\n" then
      line = line + 1
      i = i + 1
    elseif c:match("%s") then
      i = i + 1
    elseif text:sub(i, i + 1) == "--" then
      local start, closing = long_bracket(text, i + 2)
      local stop = closing and select(2, text:find(closing, start, true)) or (text:find("\n", i, true) or len + 1) - 1
      stop = stop or len
      line = line + newlines(text, i, stop)
      i = stop + 1
    elseif c == "[" and long_bracket(text, i) then
      local start, closing = long_bracket(text, i)
      local a, b = text:find(closing, start, true)
      a, b = a or len + 1, b or len
      add("string", text:sub(start, a - 1):gsub("^\n", ""), line)
      line = line + newlines(text, i, b)
      i = b + 1
    elseif c == '"' or c == "'" then
      local j, at, parts = i + 1, line, {}
      while j <= len do
        local d = text:sub(j, j)
        if d == "\\" then
          local e = text:sub(j + 1, j + 1)
          parts[#parts + 1] = (e == "n" and "\n") or (e == "t" and "\t") or e
          if e == "\n" then
            line = line + 1
          elseif e == "z" then
            local ws = text:match("^%s*", j + 2)
            line = line + newlines(ws, 1, #ws)
            j = j + #ws
          end
          j = j + 2
        elseif d == c or d == "\n" then
          break
        else
          parts[#parts + 1] = d
          j = j + 1
        end
      end
      add("string", table.concat(parts), at)
      i = j + 1
    elseif c:match("[%a_]") then
      local name = text:match("^[%w_]+", i)
      add("name", name, line)
      i = i + #name
    elseif c:match("%d") or (c == "." and text:sub(i + 1, i + 1):match("%d")) then
      local num = text:match("^0[xX][%x%.]+[pP][%+%-]?%d+", i)
        or text:match("^0[xX][%x%.]+", i)
        or text:match("^[%d%.]+[eE][%+%-]?%d+", i)
        or text:match("^[%d%.]+", i)
      num = num .. (text:match("^[uUlLiI]+", i + #num) or "")
      add("number", num, line)
      i = i + #num
    else
      local op = c
      for _, long in ipairs(LONG_OPS) do
        if text:sub(i, i + #long - 1) == long then
          op = long
          break
        end
      end
      add("op", op, line)
      i = i + #op
    end
  end
  return tokens
end
