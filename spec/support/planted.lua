--- A project in which a sandboxed command planted a file for every module
--- name the plugin ever looks up (issue 38, item 1): Lua files at
--- ./NAME.lua (package.path's "./?.lua"), a C library at
--- ./flemma_sandbox/core.so (package.cpath's "./?.so") and a helper
--- program beside it. Each writes a mark into marks/ when it runs.
local h = require("support.helpers")

local M = {}

--- Every module name the plugin looks up: ours, Flemma's, and the
--- libraries it asks for (cjson under plain LuaJIT, health on 0.7).
---@param root string this tree
---@return string[]
function M.names(root)
  local names = {
    "flemma",
    "flemma.sandbox",
    "flemma.config",
    "flemma.schema",
    "flemma.tools",
    "flemma.tools.registry",
    "flemma.tools.approval",
    "cjson",
    "health",
  }
  local files = h.capture("cd " .. h.shell_quote(root .. "/lua") .. " && find flemma_sandbox -name '*.lua'")
  for file in files:gmatch("[^\n]+") do
    names[#names + 1] = (file:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", "."))
  end
  return names
end

local CORE_C = [[
#include <stdio.h>
int luaopen_flemma_sandbox_core(void *L)
{
    FILE *f = fopen("%s/core.so", "w");
    (void)L;
    if (f)
        fclose(f);
    return 0;
}
]]

--- Plants every name in proj; marks go to marks (made here).
---@param root string this tree
---@param proj string
---@param marks string
function M.plant(root, proj, marks)
  h.sh("mkdir -p " .. h.shell_quote(marks) .. " " .. h.shell_quote(proj .. "/flemma_sandbox"))
  for _, name in ipairs(M.names(root)) do
    local path = proj .. "/" .. name:gsub("%.", "/") .. ".lua"
    h.sh("mkdir -p " .. h.shell_quote(path:match("^(.*)/")))
    h.write(path, string.format("io.open(%q, 'w'):close()\nreturn {}\n", marks .. "/" .. name))
  end
  local c_file = proj .. "/core.c"
  h.write(c_file, string.format(CORE_C, marks))
  h.sh("cc -shared -fPIC -o " .. h.shell_quote(proj .. "/flemma_sandbox/core.so") .. " " .. h.shell_quote(c_file))
  os.remove(c_file)
  for _, role in ipairs({ "init", "host", "attach", "tool" }) do
    local program = proj .. "/flemma_sandbox/flemma-sandbox-" .. role
    h.write(program, "#!/bin/sh\n: > " .. h.shell_quote(marks .. "/flemma-sandbox-" .. role) .. "\nexit 1\n")
    h.sh("chmod +x " .. h.shell_quote(program))
  end
end

--- The marks written so far, sorted, one per line ("" when none).
---@param marks string
---@return string
function M.marks(marks)
  return (h.capture("ls " .. h.shell_quote(marks) .. " 2>/dev/null | LC_ALL=C sort"):gsub("%s+$", ""))
end

--- An init.lua's line that switches the protection off for a control: the
--- guard does nothing and package.path's relative entries are kept, as
--- before the guard existed.
---@param root string
---@return string
function M.unguarded(root)
  return string.format(
    "local m = dofile(%q); m.guard = function() end; m.absolute_entries = function(s) return s end; "
      .. "package.loaded['flemma_sandbox.base.installed'] = m",
    root .. "/lua/flemma_sandbox/base/installed.lua"
  )
end

return M
