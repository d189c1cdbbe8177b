--- The process gate (make lint): every process the plugin starts goes
--- through lua/flemma_sandbox/base/process.lua (ARCHITECTURE.md, "The process
--- runner"). Reads each Lua file of lua/ from its tokens
--- (scripts/lua_tokens.lua: comments and strings never count) and fails on
--- a use, called or not, of a way to start a process anywhere else:
--- uv.spawn (and vim.loop.spawn, vim.uv.spawn), vim.fn.system,
--- vim.fn.systemlist, vim.fn.jobstart, vim.fn.termopen, io.popen,
--- os.execute, vim.system, and vim.call or vim.api.nvim_call_function
--- given one of those functions' names; field access by ["name"] counts
--- as by .name. Aliases count too: what holds those functions (vim,
--- vim.fn, vim.loop, vim.uv, os, io; by any holder, _G.os included) may
--- only be read from, never taken as a value (`local f = vim.fn` then
--- `f.system`); `.spawn` is read only from the runner module; vim.call,
--- nvim_call_function and vim.fn.call only with a literal name, vim.fn
--- only by a literal field; require("luv") not at all. Each is reported
--- as `FILE:LINE WHAT`.
---
--- usage: luajit scripts/check_spawns.lua [ROOT]
local root = arg[1] or "."

--- The one module that may start processes.
local RUNNER = "lua/flemma_sandbox/base/process.lua"
local RUNNER_MODULE = "flemma_sandbox.base.process"

--- Fields that start a process, by the name of what holds them; "*":
--- names no other library uses, whatever holds them.
local FORBIDDEN = {
  uv = { spawn = true },
  loop = { spawn = true },
  luv = { spawn = true },
  fn = { system = true, systemlist = true, jobstart = true, termopen = true },
  vim = { system = true },
  io = { popen = true },
  os = { execute = true },
  ["*"] = { systemlist = true, jobstart = true, termopen = true, popen = true },
}

--- Vimscript functions that start one, when called by their name.
local VIMSCRIPT = { system = true, systemlist = true, jobstart = true, termopen = true }
local CALLERS = { call = true, nvim_call_function = true }

--- What holds those functions: the globals (bare or from _G) and vim's
--- fields; read from only, or tested, never taken as a value.
local GLOBAL_HOLDERS = { vim = true, os = true, io = true }
local VIM_HOLDERS = { fn = true, loop = true, uv = true }
--- The tokens after a holder that read from it or only test it.
local READS =
  { ["."] = true, [":"] = true, ["["] = true, ["and"] = true, ["then"] = true, ["=="] = true, ["~="] = true }

local here = (arg[0]:match("^(.*)/[^/]*$") or ".")
local tokenize = dofile(here .. "/lua_tokens.lua")

--- The field read at tokens[i] (`.NAME`, `:NAME` or `["NAME"]`), and the
--- index of its last token; nil when none is read there.
---@return string|nil field, integer|nil last
local function field_at(tokens, i)
  local t, n = tokens[i], tokens[i + 1]
  if not t or t.kind ~= "op" or not n then
    return nil, nil
  end
  if (t.value == "." or t.value == ":") and n.kind == "name" then
    return n.value, i + 1
  end
  local close = tokens[i + 2]
  if t.value == "[" and n.kind == "string" and close and close.value == "]" then
    return n.value, i + 2
  end
  return nil, nil
end

--- Whether tokens[i] is a holder: vim, os or io (bare, or read from
--- _G), or fn, loop or uv read from the bare vim; not type()'s argument.
local function holder_at(tokens, i)
  local t, prev, before = tokens[i], tokens[i - 1], tokens[i - 2]
  local field = prev and (prev.value == "." or prev.value == ":")
  local key = tokens[i + 1] and tokens[i + 1].value == "=" and prev and (prev.value == "{" or prev.value == ",")
  if t.kind ~= "name" or key then
    return false
  end
  if GLOBAL_HOLDERS[t.value] then
    local typed = prev and prev.value == "(" and before and before.value == "type"
    return not typed and (not field or (before and before.value == "_G"))
  end
  -- vim read bare or from _G, not a field named vim of something else
  local vim_bare = before and before.value == "vim" and not (tokens[i - 3] and tokens[i - 3].value == ".")
  local vim_of_g = before and before.value == "vim" and tokens[i - 4] and tokens[i - 4].value == "_G"
  local typed = tokens[i - 3] and tokens[i - 3].value == "(" and tokens[i - 4] and tokens[i - 4].value == "type"
  return VIM_HOLDERS[t.value] and field and prev.value == "." and (vim_bare or vim_of_g) and not typed or false
end

--- The alias findings at tokens[i]: a holder taken as a value, a spawn
--- read from what is not the runner, a Vimscript function called by a
--- name the code does not spell, require("luv").
---@return string|nil what
local function alias_at(tokens, i)
  local t, prev, next = tokens[i], tokens[i - 1], tokens[i + 1]
  local field = prev and (prev.value == "." or prev.value == ":")
  if t.kind ~= "name" then
    return nil
  end
  if holder_at(tokens, i) and not (next and READS[next.value]) then
    return t.value .. " taken as a value"
  end
  if t.value == "spawn" and field then
    local holder = tokens[i - 2]
    local runner = holder and holder.value == ")" and tokens[i - 3] and tokens[i - 3].value == RUNNER_MODULE
    if not (holder and holder.value == "process") and not runner then
      return "spawn read from what is not " .. RUNNER_MODULE
    end
  end
  if
    CALLERS[t.value]
    and field
    and not (next and next.value == "(" and tokens[i + 2] and tokens[i + 2].kind == "string")
  then
    return t.value .. " with a name the code does not spell"
  end
  if t.value == "fn" and next and next.value == "[" and not (tokens[i + 2] and tokens[i + 2].kind == "string") then
    return "fn[...] with a name the code does not spell"
  end
  if t.value == "require" and tokens[i + 1] and tokens[i + 2] then
    local name = tokens[i + 1].kind == "string" and tokens[i + 1] or tokens[i + 2]
    if name.kind == "string" and (name.value == "luv" or name.value == "ffi") then
      return 'require("' .. name.value .. '")'
    end
  end
  return nil
end

--- The tokens with each index by a literal name (`x["spawn"]`, `_G["vim"]`)
--- as the field it is (`x.spawn`), so one rule reads both; a table
--- constructor's `["key"] =` stays as it is.
---@param tokens gates.Token[]
---@return gates.Token[]
local function normalized(tokens)
  local out, i = {}, 1
  while tokens[i] do
    local t, n, close, prev = tokens[i], tokens[i + 1], tokens[i + 2], out[#out]
    local indexes = prev and (prev.kind == "name" or prev.value == ")" or prev.value == "]")
    if
      t.value == "["
      and indexes
      and n
      and n.kind == "string"
      and n.value:match("^[%a_][%w_]*$")
      and close
      and close.value == "]"
    then
      out[#out + 1] = { kind = "op", value = ".", line = t.line }
      out[#out + 1] = { kind = "name", value = n.value, line = n.line }
      i = i + 3
    else
      out[#out + 1] = t
      i = i + 1
    end
  end
  return out
end

--- Ex commands that start a process (:terminal, :make, :grep, :shell),
--- after the modifiers a command may have in front.
local EX_STARTS = { term = true, terminal = true, make = true, lmake = true, grep = true, lgrep = true }
EX_STARTS.grepadd, EX_STARTS.lgrepadd, EX_STARTS.sh, EX_STARTS.shell = true, true, true, true
local EX_MODIFIERS = { silent = true, keepalt = true, keepjumps = true, noautocmd = true, lockmarks = true }

--- Whether an Ex command line's text runs a shell or starts a process: a
--- "!" that is no command's bang (after a letter) nor an operator (!=,
--- !~), a command of EX_STARTS, or a call of a function that starts one.
---@param text string
---@return boolean
local function ex_starts_process(text)
  if ("\n" .. text .. "\n"):find("[^%w]![^=~]") then
    return true
  end
  for command in (text .. "|"):gmatch("([^|\n]*)[|\n]") do
    local word = command:match("^[%s:]*([%a]+)")
    local rest = command
    while word and EX_MODIFIERS[word] do
      rest = rest:gsub("^[%s:]*[%a]+!?", "", 1)
      word = rest:match("^[%s:]*([%a]+)")
    end
    if word and EX_STARTS[word] then
      return true
    end
  end
  for name in pairs(VIMSCRIPT) do
    if text:find("%f[%w_]" .. name .. "%s*%(") then
      return true
    end
  end
  return false
end

--- Functions that run an Ex command line or a Vimscript expression given
--- as text, by the name of what holds them ("*": any holder).
local EX_RUNNERS = { cmd = "vim", execute = "fn", eval = "fn" }
EX_RUNNERS.nvim_command, EX_RUNNERS.nvim_exec, EX_RUNNERS.nvim_exec2, EX_RUNNERS.nvim_eval = "*", "*", "*", "*"

--- An Ex command or expression at tokens[i] whose literal text starts a
--- process, or nil. (Text the code computes is not read.)
---@return string|nil what
local function ex_at(tokens, i)
  local t, prev, holder = tokens[i], tokens[i - 1], tokens[i - 2]
  local runner = t.kind == "name" and EX_RUNNERS[t.value]
  if not runner or not (prev and prev.value == ".") or not holder then
    return nil
  end
  if runner ~= "*" and holder.value ~= runner then
    return nil
  end
  local open, text = tokens[i + 1], tokens[i + 2]
  if open and open.value == "(" and text and text.kind == "string" and ex_starts_process(text.value) then
    return t.value .. '("' .. text.value:sub(1, 20) .. '")'
  end
  return nil
end

--- The findings of one file's tokens: { line, what }.
---@param tokens gates.Token[]
---@return { line: integer, what: string }[]
local function findings_in(tokens)
  tokens = normalized(tokens)
  local found = {}
  for i, t in ipairs(tokens) do
    local alias = alias_at(tokens, i) or ex_at(tokens, i)
    if alias then
      found[#found + 1] = { line = t.line, what = alias }
    end
    local field = field_at(tokens, i + 1)
    local holder = t.kind == "name" and t.value or nil
    if field and holder then
      local bad = (FORBIDDEN[holder] or {})[field] or FORBIDDEN["*"][field]
      if bad then
        found[#found + 1] = { line = t.line, what = holder .. "." .. field }
      end
    end
    if holder and CALLERS[holder] then
      local open, name = tokens[i + 1], tokens[i + 2]
      if open and open.value == "(" and name and name.kind == "string" and VIMSCRIPT[name.value] then
        found[#found + 1] = { line = t.line, what = holder .. '("' .. name.value .. '")' }
      end
    end
  end
  return found
end

local list = io.popen("cd '" .. root .. "' && find lua -name '*.lua' 2>/dev/null | LC_ALL=C sort")
local files, bad = 0, {}
for path in list:lines() do
  files = files + 1
  if path ~= RUNNER then
    local f = assert(io.open(root .. "/" .. path, "rb"))
    local text = f:read("*a")
    f:close()
    for _, hit in ipairs(findings_in(tokenize(text))) do
      bad[#bad + 1] = string.format("%s:%d %s", path, hit.line, hit.what)
    end
  end
end
list:close()
if #bad > 0 then
  for _, line in ipairs(bad) do
    io.stderr:write("spawns: " .. line .. " starts a process outside " .. RUNNER .. "\n")
  end
  os.exit(1)
end
print(string.format("spawns: ok (%d files, processes only through %s)", files, RUNNER))
