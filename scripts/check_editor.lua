--- The editor gate (make lint): whether the Lua runs inside Neovim is
--- asked of lua/flemma_sandbox/base/editor.lua, the one module that looks
--- at `vim` itself (ARCHITECTURE.md, "Lua layers"). Reads each Lua file
--- of lua/ from its tokens (scripts/lua_tokens.lua: comments and strings
--- never count) and fails where another module tests for `vim`: `vim`
--- bare (or `_G.vim`, `_G["vim"]`, `rawget(_G, "vim")`) other than read from with
--- `.`, `:` or `[`. Each is reported as `FILE:LINE`.
---
--- usage: luajit scripts/check_editor.lua [ROOT]
local root = arg[1] or "."

--- The one module that asks.
local EDITOR = "lua/flemma_sandbox/base/editor.lua"
--- And the loader's guard, which requires nothing: it is loaded before
--- 'runtimepath' is set, when a require would look in the working
--- directory (a planted editor.lua).
local GUARD = "lua/flemma_sandbox/base/installed.lua"

--- The tokens after `vim` that read from it.
local READS = { ["."] = true, [":"] = true, ["["] = true }

local here = (arg[0]:match("^(.*)/[^/]*$") or ".")
local tokenize = dofile(here .. "/lua_tokens.lua")

--- The lines of one file's tokens where `vim` is tested, not read from.
---@param tokens gates.Token[]
---@return integer[]
local function tests_in(tokens)
  local lines = {}
  for i, t in ipairs(tokens) do
    local prev, after = tokens[i - 1], tokens[i + 1]
    local field = prev and (prev.value == "." or prev.value == ":")
    local of_g = field and prev.value == "." and tokens[i - 2] and tokens[i - 2].value == "_G"
    local key = after and after.value == "=" and prev and (prev.value == "{" or prev.value == ",")
    local bare = t.kind == "name" and t.value == "vim" and (not field or of_g) and not key
    -- _G["vim"]: the same global by its name
    local g_index = t.kind == "string" and t.value == "vim" and prev and prev.value == "["
    if g_index and tokens[i - 2] and tokens[i - 2].value == "_G" and after and after.value == "]" then
      bare, after = true, tokens[i + 2]
    end
    local raw = t.kind == "name" and t.value == "rawget" and tokens[i + 4] and tokens[i + 4].kind == "string"
    if (bare and not (after and READS[after.value])) or (raw and tokens[i + 4].value == "vim") then
      lines[#lines + 1] = t.line
    end
  end
  return lines
end

local list = io.popen("cd '" .. root .. "' && find lua -name '*.lua' 2>/dev/null | LC_ALL=C sort")
local files, bad = 0, {}
for path in list:lines() do
  files = files + 1
  if path ~= EDITOR and path ~= GUARD then
    local f = assert(io.open(root .. "/" .. path, "rb"))
    local text = f:read("*a")
    f:close()
    for _, line in ipairs(tests_in(tokenize(text))) do
      bad[#bad + 1] = string.format("%s:%d", path, line)
    end
  end
end
list:close()
if #bad > 0 then
  for _, where in ipairs(bad) do
    io.stderr:write("editor: " .. where .. " tests for vim: ask " .. EDITOR .. "\n")
  end
  os.exit(1)
end
print(string.format("editor: ok (%d files, vim tested only in %s)", files, EDITOR))
