--- The spec coverage report (make lint, a report, never a failure): each
--- module under lua/flemma_sandbox/ and whether a spec file (spec/**/*_spec.lua)
--- requires it. A require counts in any form the layer checker reads:
--- require "x", require("x"), pcall(require, "x"), xpcall(require, h, "x"),
--- and also inside a string a spec hands to a child Neovim or luajit
--- (exec_lua('require("x")...'), "-c", "lua require'x'"). A module required
--- only through another module is not counted: its own spec is what this
--- report asks for.
---
--- usage: luajit scripts/spec_coverage.lua [ROOT] [--all]
---   prints "uncovered: MODULE (PATH)" for each module no spec requires and a
---   totals line; --all prints the covered ones too, with the specs' count.
local root, all = ".", false
for _, a in ipairs(arg) do
  if a == "--all" then
    all = true
  else
    root = a
  end
end

local here = (arg[0]:match("^(.*)/[^/]*$") or ".")
local tokenize = dofile(here .. "/lua_tokens.lua")

--- The files `find` lists under `dir` (relative to root), sorted.
---@param cmd string
---@return string[]
local function listed(cmd)
  local out = {}
  local p = assert(io.popen("cd '" .. root .. "' && " .. cmd .. " 2>/dev/null | LC_ALL=C sort"))
  for line in p:lines() do
    out[#out + 1] = line
  end
  p:close()
  return out
end

--- The module name of a file under lua/.
---@param path string
---@return string
local function module_of(path)
  return (path:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", "."))
end

--- The module names required inside a piece of Lua held in a string.
---@param text string
---@param into table<string, true>
local function required_in_text(text, into)
  for name in text:gmatch("require%s*%(?%s*[\"']([%w_%.]+)[\"']") do
    into[name] = true
  end
  for name in text:gmatch("require%s*%[%[([%w_%.]+)%]%]") do
    into[name] = true
  end
  for name in text:gmatch("pcall%s*%(%s*require%s*,[^\"']-[\"']([%w_%.]+)[\"']") do
    into[name] = true
  end
end

--- The module names a spec file requires: from its tokens (comments never
--- count) and from the Lua code its strings carry.
---@param text string
---@return table<string, true>
local function required_by(text)
  local names, tokens = {}, tokenize(text)
  local function v(i)
    return tokens[i] and tokens[i].value
  end
  local function str(i)
    return tokens[i] and tokens[i].kind == "string" and tokens[i].value or nil
  end
  for i, t in ipairs(tokens) do
    if t.kind == "name" and t.value == "require" and v(i - 1) ~= "function" then
      local name = (v(i + 1) == "(" and str(i + 2))
        or str(i + 1)
        or (v(i + 1) == "," and str(i + 2))
        or (v(i + 1) == "," and v(i - 2) == "xpcall" and str(i + 4))
      if name then
        names[name] = true
      end
    elseif t.kind == "string" then
      required_in_text(t.value, names)
    end
  end
  return names
end

local modules = {}
for _, path in ipairs(listed("find lua/flemma_sandbox -name '*.lua'")) do
  modules[#modules + 1] = { name = module_of(path), path = path, specs = 0 }
end
local by_spec = {}
for _, path in ipairs(listed("find spec -name '*_spec.lua'")) do
  local f = io.open(root .. "/" .. path, "r")
  if f then
    by_spec[path] = required_by(f:read("*a"))
    f:close()
  end
end

local uncovered = 0
for _, m in ipairs(modules) do
  for _, names in pairs(by_spec) do
    if names[m.name] then
      m.specs = m.specs + 1
    end
  end
  if m.specs == 0 then
    uncovered = uncovered + 1
    print(string.format("uncovered: %s (%s)", m.name, m.path))
  elseif all then
    print(string.format("covered:   %s (%d spec%s)", m.name, m.specs, m.specs == 1 and "" or "s"))
  end
end
print(
  string.format(
    "spec coverage: %d of %d modules required by a spec, %d by none",
    #modules - uncovered,
    #modules,
    uncovered
  )
)
