--- The process gate (make lint): every process the plugin starts goes
--- through lua/flemma_sandbox/base/process.lua (ARCHITECTURE.md, "The process
--- runner"). Reads each Lua file of lua/ from its tokens
--- (scripts/lua_tokens.lua: comments and strings never count) and fails on
--- a use, called or not, of a way to start a process anywhere else:
--- uv.spawn (and vim.loop.spawn, vim.uv.spawn), vim.fn.system,
--- vim.fn.systemlist, vim.fn.jobstart, vim.fn.termopen, io.popen,
--- os.execute, vim.system, and vim.call or vim.api.nvim_call_function
--- given one of those functions' names; field access by ["name"] counts
--- as by .name. Each is reported as `FILE:LINE WHAT`.
---
--- usage: luajit scripts/check_spawns.lua [ROOT]
local root = arg[1] or "."

--- The one module that may start processes.
local RUNNER = "lua/flemma_sandbox/base/process.lua"

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

--- The findings of one file's tokens: { line, what }.
---@param tokens gates.Token[]
---@return { line: integer, what: string }[]
local function findings_in(tokens)
  local found = {}
  for i, t in ipairs(tokens) do
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
