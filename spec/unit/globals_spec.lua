--- A misspelt or out-of-order local becomes a global read or write; LuaJIT's
--- bytecode listing shows every one (GGET / GSET).
local h = require("support.helpers")

local ALLOWED = {}
for name in
  (
    "vim require type pairs ipairs tostring tonumber string table math error setmetatable "
    .. "getmetatable next pcall xpcall select unpack os io jit debug loadstring loadfile setfenv rawset rawget "
    .. "assert _G package"
  ):gmatch("%S+")
do
  ALLOWED[name] = true
end

describe("Lua modules", function()
  local files = h.run({ "sh", "-c", "ls lua/flemma_sandbox/*.lua lua/flemma_sandbox/*/*.lua plugin/*.lua" })
  for file in files.stdout:gmatch("%S+") do
    it(file .. " touches no unexpected global", function()
      local listing = h.run({ "luajit", "-bl", file })
      assert.are.equal(0, listing.code, listing.stderr)
      for op, name in listing.stdout:gmatch('(G[GS]ET)%s+%d+%s+%d+%s+; "([^"]+)"') do
        assert.is_true(op == "GGET" and ALLOWED[name] == true, file .. ": " .. op .. " " .. name)
      end
    end)
  end
end)
