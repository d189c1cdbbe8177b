--- The layer checker (make lint): reads every require of the Lua tree from
--- its tokens (scripts/lua_tokens.lua: comments and strings never count, a
--- call over several lines does), inline ones too, pcall(require, "x") and
--- xpcall(require, handler, "x") as well (and lazy_require and
--- package.loaded reads, which are dependencies too), and fails on
---   - an arrow against the layer order of ARCHITECTURE.md (upward, or
---     sideways between the standalone UI and the Flemma bridge);
---   - tools, the chat runner and the bridge reaching past the public API
---     (anything below it but the base helpers and the C core);
---   - a module outside the bridge requiring one of Flemma's;
---   - a require cycle;
---   - a require, lazy_require or package.loaded read whose module is not a
---     literal string, and dofile or loadfile (outside the two modules of
---     DYNAMIC);
---   - a hooks.NAME use that ARCHITECTURE.md's Hooks table does not
---     declare, or declares otherwise (check_hooks below).
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
  { prefix = "flemma_sandbox.api", group = "api", rank = 5 },
  { prefix = "flemma_sandbox.run", group = "run", rank = 4 },
  { prefix = "flemma_sandbox.backends", group = "backends", rank = 3 },
  { prefix = "flemma_sandbox.policy", group = "policy", rank = 2 },
  { prefix = "flemma_sandbox.config", group = "policy", rank = 2 },
  { prefix = "flemma_sandbox.base", group = "base", rank = 1 },
  { prefix = "flemma_sandbox.core", group = "core", rank = 0 },
  -- the public API is init.lua alone: a stray top-level module is in no
  -- layer (only the entries above and health.lua sit beside it)
  { prefix = "flemma_sandbox", group = "api", rank = 5, exact = true },
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
    if name == g.prefix or (not g.exact and name:sub(1, #g.prefix + 1) == g.prefix .. ".") then
      return g
    end
  end
  return nil
end

--- The module name of a file under lua/.
local function module_of(path)
  return (path:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", "."))
end

local here = (arg[0]:match("^(.*)/[^/]*$") or ".")
local tokenize = dofile(here .. "/lua_tokens.lua")

--- The modules that name modules at run time, and why the checker lets
--- them (every other require, pcall(require, ...), lazy_require or
--- package.loaded read must name its module with a literal string).
local DYNAMIC = {
  ["flemma_sandbox.base.util"] = "lazy_require: the checker reads the names its callers give it",
  ["flemma_sandbox.base.installed"] = "the loader's guard: it looks names up for require itself",
}

--- Whether a module name is one the layers cover (ours or Flemma's).
local function counted(name)
  return name == "flemma_sandbox" or name:find("^flemma_sandbox%.") or name == "flemma" or name:find("^flemma%.")
end

--- The module names a file depends on, read from its tokens: require
--- "x", require("x"), pcall(require, "x") (any call passing require and
--- then the name), xpcall(require, handler, "x"), lazy_require("x") and
--- package.loaded["x"] / package.loaded.x. A require, lazy_require or
--- package.loaded whose module is not a literal string is reported.
---@param tokens gates.Token[]
---@return { name: string, line: integer }[] deps, { line: integer, what: string }[] dynamic
local function deps_of(tokens)
  local deps, dynamic = {}, {}
  local function v(i)
    return tokens[i] and tokens[i].value
  end
  local function str(i)
    return tokens[i] and tokens[i].kind == "string" and tokens[i].value or nil
  end
  local function add(name, line)
    deps[#deps + 1] = { name = name, line = line }
  end
  for i, t in ipairs(tokens) do
    -- _G.require is require too
    local field = (v(i - 1) == "." or v(i - 1) == ":") and not (v(i - 1) == "." and v(i - 2) == "_G")
    if t.kind == "name" and t.value == "require" and not field and v(i - 1) ~= "function" then
      local name = (v(i + 1) == "(" and v(i + 3) == ")" and str(i + 2))
        or str(i + 1)
        or (v(i + 1) == "," and (v(i + 3) == ")" or v(i + 3) == ",") and str(i + 2))
      if not name and v(i + 1) == "," and v(i - 1) == "(" and v(i - 2) == "xpcall" then
        -- xpcall(require, handler, "x"): the name after the handler
        local depth, j = 0, i + 2
        while tokens[j] and not (depth == 0 and (v(j) == "," or v(j) == ")")) do
          depth = depth + ((v(j) == "(" or v(j) == "{" or v(j) == "[") and 1 or 0)
          depth = depth - ((v(j) == ")" or v(j) == "}" or v(j) == "]") and 1 or 0)
          j = j + 1
        end
        name = v(j) == "," and str(j + 1)
      end
      if name then
        add(name, t.line)
      else
        dynamic[#dynamic + 1] = { line = t.line, what = "require without a literal module name" }
      end
    elseif t.kind == "name" and t.value == "lazy_require" and v(i - 1) ~= "function" and v(i - 3) ~= "function" then
      local name = v(i + 1) == "(" and str(i + 2)
      if name then
        add(name, t.line)
      else
        dynamic[#dynamic + 1] = { line = t.line, what = "lazy_require without a literal module name" }
      end
    elseif t.kind == "name" and t.value == "package" and v(i + 1) == "." and v(i + 2) == "loaded" then
      local name = (v(i + 3) == "[" and v(i + 5) == "]" and str(i + 4))
        or (v(i + 3) == "." and tokens[i + 4] and tokens[i + 4].kind == "name" and v(i + 4))
      if name then
        add(name, t.line)
      else
        dynamic[#dynamic + 1] = { line = t.line, what = "package.loaded without a literal module name" }
      end
    elseif t.kind == "name" and (t.value == "dofile" or t.value == "loadfile") and not field then
      dynamic[#dynamic + 1] = { line = t.line, what = t.value .. ", which loads a file past require" }
    end
  end
  return deps, dynamic
end

--- Every dependency of every module: edges[from][to] = first line; the
--- tokens of each module; the dynamic names found where DYNAMIC does not
--- allow them.
---@return table<string, table<string, integer>>, table<string, gates.Token[]>, string[]
local function read_edges()
  local edges, tokens_of, problems = {}, {}, {}
  local list = io.popen("cd '" .. root .. "' && find lua -name '*.lua' | LC_ALL=C sort")
  for path in list:lines() do
    local from = module_of(path)
    edges[from] = edges[from] or {}
    local f = assert(io.open(root .. "/" .. path, "r"))
    local tokens = tokenize(f:read("*a"))
    f:close()
    tokens_of[from] = tokens
    local deps, dynamic = deps_of(tokens)
    for _, d in ipairs(deps) do
      if counted(d.name) and d.name ~= from and not edges[from][d.name] then
        edges[from][d.name] = d.line
      end
    end
    if not DYNAMIC[from] then
      for _, d in ipairs(dynamic) do
        problems[#problems + 1] = string.format("%s (line %d): %s: the checker cannot read it", from, d.line, d.what)
      end
    end
  end
  list:close()
  return edges, tokens_of, problems
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

--- The hooks (base's hooks.lua): what an upper part gives a lower one it
--- must not require. Each is declared in ARCHITECTURE.md's "Hooks" table
--- with the groups that set it, those that call it and the direction of
--- the call (up, sideways); the checker fails on a hook used and not
--- declared, set or called by a group the table does not name, a table row
--- that is no longer true, and the hooks table used other than as
--- hooks.NAME (handed on, indexed by a variable).
local HOOKS = "flemma_sandbox.base.hooks"

local RANK = {}
for _, g in ipairs(GROUPS) do
  RANK[g.group] = g.rank
end

--- The words of a table cell that are in `set`, outside `code` and
--- (parentheses).
---@return table<string, boolean>
local function words_in(cell, set)
  local out = {}
  for w in cell:gsub("`[^`]*`", ""):gsub("%b()", ""):gmatch("[%w_]+") do
    if set[w] then
      out[w] = true
    end
  end
  return out
end

---@class gates.Hook a row of the Hooks table
---@field set_by table<string, boolean> groups
---@field called_by table<string, boolean> groups
---@field directions table<string, boolean> up, sideways, down

--- ARCHITECTURE.md's Hooks table: rows "| `name` | set by | called by |
--- direction |".
---@return table<string, gates.Hook>
local function read_hook_table()
  local declared, in_section = {}, false
  local f = io.open(root .. "/ARCHITECTURE.md", "r")
  if not f then
    return declared
  end
  for line in f:lines() do
    if line:match("^#+ ") then
      in_section = line:match("^#+ Hooks") ~= nil
    elseif in_section then
      local name, set_by, called_by, dir = line:match("^|%s*`([%w_]+)`%s*|([^|]*)|([^|]*)|([^|]*)|")
      if name then
        declared[name] = {
          set_by = words_in(set_by, RANK),
          called_by = words_in(called_by, RANK),
          directions = words_in(dir, { up = true, sideways = true, down = true }),
        }
      end
    end
  end
  f:close()
  return declared
end

--- Every use of the hooks table in a module's tokens: through
--- require("flemma_sandbox.base.hooks") directly or a name it was assigned to.
---@param tokens gates.Token[]
---@return { field: string|nil, line: integer, set: boolean, bad: string|nil }[]
local function hook_uses(tokens)
  local uses, aliases = {}, {}
  local function v(i)
    return tokens[i] and tokens[i].value
  end
  for i, t in ipairs(tokens) do
    local base_end
    if t.kind == "name" and t.value == "require" and v(i + 1) == "(" and v(i + 2) == HOOKS and v(i + 3) == ")" then
      local named = tokens[i - 2] and tokens[i - 2].kind == "name" and v(i - 3) ~= "." and v(i - 3) ~= ":"
      if v(i - 1) == "=" and named and v(i + 4) ~= "." then
        aliases[v(i - 2)] = true
      else
        base_end = i + 3
      end
    elseif t.kind == "name" and aliases[t.value] and v(i - 1) ~= "." and v(i - 1) ~= ":" and v(i - 1) ~= "local" then
      base_end = i
    end
    if base_end then
      if v(base_end + 1) == "." and tokens[base_end + 2] and tokens[base_end + 2].kind == "name" then
        uses[#uses + 1] = { field = v(base_end + 2), line = t.line, set = v(base_end + 3) == "=" }
      else
        uses[#uses + 1] = { line = t.line, set = false, bad = "the hooks table used other than as hooks.NAME" }
      end
    end
  end
  return uses
end

--- The problems of the hooks: the code against ARCHITECTURE.md's table.
---@param tokens_of table<string, gates.Token[]>
---@return string[]
local function check_hooks(tokens_of)
  local problems, declared = {}, read_hook_table()
  local fields = {}
  local own = tokens_of[HOOKS] or {}
  for i, t in ipairs(own) do
    if t.value == "M" and own[i + 1] and own[i + 1].value == "." and own[i + 3] and own[i + 3].value == "=" then
      fields[own[i + 2].value] = true
    end
  end
  local seen = {}
  local names = {}
  for m in pairs(tokens_of) do
    names[#names + 1] = m
  end
  table.sort(names)
  for _, m in ipairs(names) do
    local g = group_of(m)
    for _, use in ipairs(m ~= HOOKS and hook_uses(tokens_of[m]) or {}) do
      local d = use.field and declared[use.field]
      local where = string.format("%s (line %d): ", m, use.line)
      if use.bad then
        problems[#problems + 1] = where .. use.bad
      elseif not d then
        problems[#problems + 1] = where .. "hooks." .. use.field .. " is not declared in ARCHITECTURE.md's Hooks table"
      elseif g then
        local side = use.set and "set_by" or "called_by"
        seen[use.field] = seen[use.field] or { set_by = {}, called_by = {} }
        seen[use.field][side][g.group] = true
        if not d[side][g.group] then
          problems[#problems + 1] = where
            .. string.format(
              "%s hooks.%s, which ARCHITECTURE.md's Hooks table does not let %s do",
              use.set and "sets" or "calls",
              use.field,
              g.group
            )
        end
      end
    end
  end
  local hook_names = {}
  for name in pairs(declared) do
    hook_names[#hook_names + 1] = name
  end
  for name in pairs(fields) do
    if not declared[name] then
      hook_names[#hook_names + 1] = name
    end
  end
  table.sort(hook_names)
  for _, name in ipairs(hook_names) do
    local d, s = declared[name], seen[name] or { set_by = {}, called_by = {} }
    local where = "hook " .. name .. ": "
    if not d then
      problems[#problems + 1] = where .. "in hooks.lua but not declared in ARCHITECTURE.md's Hooks table"
    else
      if not fields[name] then
        problems[#problems + 1] = where .. "declared in ARCHITECTURE.md but not a field of hooks.lua"
      end
      local computed = {}
      for _, side in ipairs({ "set_by", "called_by" }) do
        for group in pairs(d[side]) do
          if not s[side][group] then
            problems[#problems + 1] = where
              .. string.format(
                "ARCHITECTURE.md says %s %s it; none does",
                group,
                side == "set_by" and "sets" or "calls"
              )
          end
        end
      end
      for setter in pairs(d.set_by) do
        for caller in pairs(d.called_by) do
          if RANK[setter] > RANK[caller] then
            computed.up = true
          elseif RANK[setter] < RANK[caller] then
            computed.down = true
          elseif setter ~= caller then
            computed.sideways = true
          end
        end
      end
      for _, dir in ipairs({ "up", "sideways", "down" }) do
        if computed[dir] ~= d.directions[dir] then
          problems[#problems + 1] = where
            .. string.format("the direction column %s %q", computed[dir] and "lacks" or "says", dir)
        end
      end
    end
  end
  return problems
end

local edges, tokens_of, failures = read_edges()
for _, problem in ipairs(check_hooks(tokens_of)) do
  failures[#failures + 1] = problem
end
local allow, order = read_allow()
local used = {}
local froms = {}
for from in pairs(edges) do
  froms[#froms + 1] = from
end
table.sort(froms)
-- every module of ours is in a layer, whether it requires anything or not
local ours = {}
for m in pairs(tokens_of) do
  if m:find("^flemma_sandbox") and not group_of(m) then
    ours[#ours + 1] = m
  end
end
table.sort(ours)
for _, m in ipairs(ours) do
  failures[#failures + 1] = m .. ": module outside the layer map (ARCHITECTURE.md's Lua layers)"
end
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
