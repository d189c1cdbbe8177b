--- The layer checker (make lint): reads every require of the Lua tree,
--- inline ones too (and lazy_require and package.loaded reads, which are
--- dependencies as well), and fails on
---   - an arrow against the layer order of ARCHITECTURE.md (upward, or
---     sideways between the standalone UI and the Flemma bridge);
---   - tools, the chat runner and the bridge reaching past the public API
---     (anything below it but the base helpers and the C core);
---   - a module outside the bridge requiring one of Flemma's;
---   - a require cycle.
--- Known violations are listed in scripts/layers.allow, which may only
--- shrink: an entry that is no longer a violation fails too.
---
--- usage: luajit scripts/check_layers.lua [ROOT] [ALLOW_FILE]
local root = arg[1] or "."
local allow_file = arg[2] or (root .. "/scripts/layers.allow")

--- Groups by module name prefix, the longest prefix first; rank is the
--- layer (a higher one may require a lower one).
local GROUPS = {
  { prefix = "flemma_sandbox.nvim.start", group = "entry", rank = 10 },
  { prefix = "flemma_sandbox.health", group = "entry", rank = 10 },
  { prefix = "flemma_sandbox.cli", group = "cli", rank = 10 },
  { prefix = "flemma_sandbox.nvim", group = "ui", rank = 9 },
  { prefix = "flemma_sandbox.flemma", group = "bridge", rank = 9 },
  { prefix = "flemma_sandbox.chat", group = "chat", rank = 8 },
  { prefix = "flemma_sandbox.tools", group = "tools", rank = 7 },
  { prefix = "flemma_sandbox.questions", group = "questions", rank = 6 },
  { prefix = "flemma_sandbox.before_core", group = "api", rank = 5 },
  { prefix = "flemma_sandbox.run", group = "run", rank = 4 },
  { prefix = "flemma_sandbox.backends", group = "backends", rank = 3 },
  { prefix = "flemma_sandbox.policy", group = "policy", rank = 2 },
  { prefix = "flemma_sandbox.config", group = "policy", rank = 2 },
  { prefix = "flemma_sandbox.util", group = "base", rank = 1 },
  { prefix = "flemma_sandbox.surroundings", group = "base", rank = 1 },
  { prefix = "flemma_sandbox.notice", group = "base", rank = 1 },
  { prefix = "flemma_sandbox.hooks", group = "base", rank = 1 },
  { prefix = "flemma_sandbox.installed", group = "base", rank = 1 },
  { prefix = "flemma_sandbox.loosening", group = "base", rank = 1 },
  { prefix = "flemma_sandbox.visible_text", group = "base", rank = 1 },
  { prefix = "flemma_sandbox.frontmatter_fence", group = "base", rank = 1 },
  { prefix = "flemma_sandbox.core", group = "core", rank = 0 },
  { prefix = "flemma_sandbox", group = "api", rank = 5 },
}

--- The public API's layer: tools, the chat runner and the bridge reach
--- nothing below it but the base helpers.
local API_RANK = 5

--- Groups that reach what lies below the public API only through it
--- (and the base helpers).
local THROUGH_API = { tools = true, chat = true, bridge = true }
--- Groups that may require Flemma's own modules.
local FLEMMA_USERS = { bridge = true, entry = true }

---@param name string
---@return { group: string, rank: integer }|nil
local function group_of(name)
  for _, g in ipairs(GROUPS) do
    if name == g.prefix or name:sub(1, #g.prefix + 1) == g.prefix .. "." then
      return g
    end
  end
  return nil
end

--- The module name of a file under lua/.
local function module_of(path)
  return (path:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", "."))
end

local PATTERNS = {
  "require%s*%(?%s*[\"']([%w_%.]+)[\"']",
  "lazy_require%(%s*[\"']([%w_%.]+)[\"']",
  "package%.loaded%[%s*[\"']([%w_%.]+)[\"']%s*%]",
}

--- Every dependency of every module: edges[from][to] = first line.
---@return table<string, table<string, integer>>, string[] modules
local function read_edges()
  local edges, modules = {}, {}
  local list = io.popen("cd '" .. root .. "' && find lua -name '*.lua' | LC_ALL=C sort")
  for path in list:lines() do
    local from = module_of(path)
    modules[#modules + 1] = from
    edges[from] = edges[from] or {}
    local n = 0
    for line in io.lines(root .. "/" .. path) do
      n = n + 1
      -- comments name modules too; strings holding "--" are not in requires
      local code = line:gsub("%-%-.*$", "")
      for _, pattern in ipairs(PATTERNS) do
        for to in code:gmatch(pattern) do
          local ours = to == "flemma_sandbox" or to:find("^flemma_sandbox%.")
          if (ours or to:find("^flemma%.") or to == "flemma") and to ~= from and not edges[from][to] then
            edges[from][to] = n
          end
        end
      end
    end
  end
  list:close()
  return edges, modules
end

--- Why an edge breaks the layers, or nil.
---@return string|nil
local function violation(from, to)
  local a = group_of(from)
  if not a then
    return "module outside the layer map: " .. from
  end
  if not to:find("^flemma_sandbox") then
    if not FLEMMA_USERS[a.group] then
      return "only the bridge requires Flemma's modules"
    end
    return nil
  end
  local b = group_of(to)
  if not b then
    return "module outside the layer map: " .. to
  end
  if b.rank > a.rank then
    return string.format("upward: %s (%d) above %s (%d)", b.group, b.rank, a.group, a.rank)
  end
  if b.rank == a.rank and b.group ~= a.group then
    return string.format("sideways: %s and %s are apart", a.group, b.group)
  end
  -- the C core is a library of pure functions (paths, race-free reads and
  -- writes) every layer may use; ARCHITECTURE.md keeps policy/ and the
  -- backends behind the API
  if THROUGH_API[a.group] and b.rank < API_RANK and b.group ~= "base" and b.group ~= "core" then
    return string.format("%s past the public API into %s", a.group, b.group)
  end
  return nil
end

--- The allowed violations: "from -> to" per line, "#" starts a comment.
local function read_allow()
  local allow, order = {}, {}
  local f = io.open(allow_file, "r")
  if not f then
    return allow, order
  end
  for line in f:lines() do
    local from, to = line:gsub("#.*$", ""):match("^%s*(%S+)%s*%->%s*(%S+)%s*$")
    if from then
      allow[from .. " -> " .. to] = true
      order[#order + 1] = from .. " -> " .. to
    end
  end
  f:close()
  return allow, order
end

--- A cycle in the graph without the allowed edges, as a list of modules.
local function find_cycle(edges, allow)
  local state, stack = {}, {}
  local found
  local function visit(m)
    state[m] = "open"
    stack[#stack + 1] = m
    local targets = {}
    for to in pairs(edges[m] or {}) do
      targets[#targets + 1] = to
    end
    table.sort(targets)
    for _, to in ipairs(targets) do
      if edges[to] and not allow[m .. " -> " .. to] then
        if state[to] == "open" then
          local cycle = {}
          for i = #stack, 1, -1 do
            table.insert(cycle, 1, stack[i])
            if stack[i] == to then
              break
            end
          end
          cycle[#cycle + 1] = to
          found = cycle
          return true
        elseif not state[to] and visit(to) then
          return true
        end
      end
    end
    stack[#stack] = nil
    state[m] = "done"
    return false
  end
  local names = {}
  for m in pairs(edges) do
    names[#names + 1] = m
  end
  table.sort(names)
  for _, m in ipairs(names) do
    if not state[m] and visit(m) then
      return found
    end
  end
  return nil
end

local edges = read_edges()
local allow, order = read_allow()
local failures, used = {}, {}
local froms = {}
for from in pairs(edges) do
  froms[#froms + 1] = from
end
table.sort(froms)
for _, from in ipairs(froms) do
  local tos = {}
  for to in pairs(edges[from]) do
    tos[#tos + 1] = to
  end
  table.sort(tos)
  for _, to in ipairs(tos) do
    local key = from .. " -> " .. to
    local why = violation(from, to)
    if why and allow[key] then
      used[key] = true
    elseif why then
      failures[#failures + 1] = string.format("%s (line %d): %s", key, edges[from][to], why)
    end
  end
end
local cycle = find_cycle(edges, allow)
if cycle then
  failures[#failures + 1] = "require cycle: " .. table.concat(cycle, " -> ")
end
-- cycle breakers in the allowlist are violations too while the cycle lasts
for _, key in ipairs(order) do
  if not used[key] then
    local from, to = key:match("^(%S+) %-> (%S+)$")
    local present = edges[from] and edges[from][to]
    local without = {}
    for k in pairs(allow) do
      without[k] = k ~= key or nil
    end
    if present and find_cycle(edges, without) then
      used[key] = true
    else
      failures[#failures + 1] = key .. ": listed in " .. allow_file .. " but no longer a violation: remove it"
    end
  end
end

local count = 0
for _ in pairs(used) do
  count = count + 1
end
if #failures > 0 then
  for _, line in ipairs(failures) do
    io.stderr:write("layers: " .. line .. "\n")
  end
  io.stderr:write(string.format("layers: %d problem(s); see ARCHITECTURE.md\n", #failures))
  os.exit(1)
end
print(string.format("layers: ok (%d modules, %d allowed violations left)", #froms, count))
