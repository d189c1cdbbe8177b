--- The size gate (make lint): no Lua module over 400 lines and no C file
--- over 500 (ARCHITECTURE.md: a file that grows past them does more than
--- one job; split it by job).
---
--- usage: luajit scripts/check_sizes.lua [ROOT]
local root = arg[1] or "."

local LIMITS = {
  { find = "find lua -name '*.lua'", max = 400 },
  { find = "find csrc -name '*.c'", max = 500 },
}

local over = {}
for _, limit in ipairs(LIMITS) do
  local list = io.popen("cd '" .. root .. "' && " .. limit.find .. " 2>/dev/null | LC_ALL=C sort")
  for path in list:lines() do
    local n = 0
    for _ in io.lines(root .. "/" .. path) do
      n = n + 1
    end
    if n > limit.max then
      over[#over + 1] = string.format("%s: %d lines (at most %d)", path, n, limit.max)
    end
  end
  list:close()
end
if #over > 0 then
  for _, line in ipairs(over) do
    io.stderr:write("sizes: " .. line .. "\n")
  end
  os.exit(1)
end
print("sizes: ok")
