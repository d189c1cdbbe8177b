--- Reads the ```lua block at the top of a .chat buffer and evaluates it in
--- an environment where only `flemma.opt` can be written. The result
--- becomes the buffer's layer of the config (flemma.opt.sandbox).
local fence = require("flemma_sandbox.base.frontmatter_fence")
local sandbox = require("flemma_sandbox")
local trust = require("flemma_sandbox.chat.frontmatter_trust")

local M = {}

--- Instructions a frontmatter may run before it is stopped (no freezes).
M.max_instructions = 1000000

---@class flemma_sandbox.FrontmatterState
---@field text string|nil the frontmatter evaluated last, nil when none
---@field error string|nil why it was rejected
---@field opts table|nil the flemma.opt table it produced
---@field evaluations integer how often it was evaluated
---@field code string|nil the frontmatter text
---@field loose string[]|nil what it loosens (applied only when trusted)
---@field never string[]|nil what is never taken from a buffer
---@field trusted boolean|nil whether the user trusts this exact text
---@field applied table|nil the buffer's layer it gave (what loosens only when trusted)

---@type table<integer, flemma_sandbox.FrontmatterState>
local states = {}

--- Builtins a frontmatter may use: pure functions only.
local SAFE = {
  "assert",
  "error",
  "ipairs",
  "next",
  "pairs",
  "pcall",
  "select",
  "tonumber",
  "tostring",
  "type",
  "unpack",
}
local SAFE_LIBS = { "string", "table", "math" }

--- A table that grows sub-tables on demand, so that both
--- `flemma.opt.sandbox.policy.network = false` and Flemma options this plugin
--- does not read (`flemma.opt.tools.x = ...`) evaluate.
local AUTO = {}
AUTO.__index = function(t, k)
  local sub = setmetatable({}, AUTO)
  rawset(t, k, sub)
  return sub
end

--- Plain data without the grown tables that were only read, never filled
--- (an explicit empty list such as `rw_paths = {}` stays).
local function plain(value)
  if type(value) ~= "table" then
    return value
  end
  local out = {}
  for k, v in pairs(value) do
    local p = plain(v)
    if not (getmetatable(v) == AUTO and next(p) == nil) then
      out[k] = p
    end
  end
  return out
end

local function make_env(opt)
  local env = {}
  for _, name in ipairs(SAFE) do
    env[name] = _G[name]
  end
  for _, name in ipairs(SAFE_LIBS) do
    local copy = {}
    for k, v in pairs(_G[name]) do
      copy[k] = v
    end
    env[name] = copy
  end
  env.flemma = setmetatable({}, {
    __index = { opt = opt },
    __newindex = function()
      error("only flemma.opt.* can be set", 2)
    end,
  })
  return setmetatable(env, {
    __newindex = function(_, name)
      error(string.format("frontmatter may only set flemma.opt.*, not the global '%s'", tostring(name)), 2)
    end,
  })
end

--- "frontmatter:3: msg" -> "line 4: msg" (line 1 of the buffer is the fence).
local function with_buffer_line(message)
  message = tostring(message)
  local n, rest = message:match("^frontmatter:(%d+): (.*)$")
  if n then
    return string.format("line %d: %s", tonumber(n) + 1, rest)
  end
  return message
end

--- Evaluates frontmatter code.
---@param code string
---@return table|nil opts the flemma.opt table, string|nil err with the buffer line
function M.evaluate(code)
  local chunk, err = loadstring(code, "=frontmatter")
  if not chunk then
    return nil, with_buffer_line(err)
  end
  local opt = setmetatable({}, AUTO)
  setfenv(chunk, make_env(opt))
  -- a count hook only fires in the interpreter: keep this chunk out of the JIT
  if jit then
    jit.off(chunk, true)
  end
  local budget = M.max_instructions
  debug.sethook(function()
    debug.sethook()
    error("frontmatter ran too long (more than " .. budget .. " instructions)", 2)
  end, "", budget)
  local ok, run_err = pcall(chunk)
  debug.sethook()
  if not ok then
    return nil, with_buffer_line(run_err)
  end
  return plain(opt), nil
end

--- The Lua frontmatter text of a block (frontmatter_fence.lua, the one
--- reader trust and the chat parser share too), or nil when there is none;
--- a ```lua first line without a closing fence is said, since the whole
--- buffer is chat text then (as Flemma reads it).
---@param block flemma_sandbox.FrontmatterBlock|nil
---@param first_line string|nil
---@return string|nil code, string|nil err
function M.extract(block, first_line)
  if block then
    return block.language == "lua" and block.text or nil, nil
  end
  if first_line and first_line:match("^```lua%s*$") then
    return nil, "line 1: the ```lua block is never closed (a line with only ```), so it is read as chat text"
  end
  return nil, nil
end

---@param bufnr integer
---@return flemma_sandbox.FrontmatterState
function M.state(bufnr)
  local s = states[bufnr]
  if not s then
    s = { evaluations = 0 }
    states[bufnr] = s
  end
  return s
end

--- Re-reads a buffer's frontmatter; evaluates only when its text changed.
--- Never raises. Returns the error, if any, and whether it was new.
---@param bufnr integer
---@return string|nil err, boolean changed
function M.refresh(bufnr)
  local s = M.state(bufnr)
  local code, extract_err = M.extract(fence.of_buffer(bufnr), vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1])
  local key = code or extract_err or ""
  if s.key == key then
    return s.error, false
  end
  s.key = key
  s.error, s.opts, s.code = extract_err, nil, code
  s.loose, s.never, s.trusted = nil, nil, nil
  if code then
    s.evaluations = s.evaluations + 1
    s.opts, s.error = M.evaluate(code)
  end
  local layer = s.opts and s.opts.sandbox
  if layer ~= nil and type(layer) ~= "boolean" and type(layer) ~= "table" then
    s.error = "flemma.opt.sandbox: expected boolean or table, got " .. type(layer)
    layer = nil
  end
  if s.opts and s.opts.approval ~= nil and not s.error then
    -- flemma.opt.approval sits beside flemma.opt.sandbox; one layer holds both
    layer = sandbox.expand_shorthand(layer) or {}
    layer.approval = s.opts.approval
  end
  layer = sandbox.expand_shorthand(layer)
  if layer ~= nil and not s.error then
    local valid, invalid = sandbox.validate_config(layer, "flemma.opt.sandbox")
    if valid then
      -- what loosens applies only to content the user trusts
      local split = trust.split(layer, sandbox.resolve_config(nil))
      s.trusted = trust.is_trusted(bufnr, code)
      s.loose, s.never = split.loose, split.never
      layer = s.trusted and trust.without_never(layer) or split.tight
    else
      s.error = invalid
    end
  end
  local ok, err = sandbox.set_buffer_config(bufnr, layer)
  s.applied = layer
  if not ok then
    s.error = err
    sandbox.set_buffer_config(bufnr, nil)
  elseif s.error then
    sandbox.set_buffer_config(bufnr, nil)
  end
  if s.error then
    s.applied = nil
  end
  return s.error, true
end

--- Whether the buffer's frontmatter, as applied, sets setting (a dotted
--- name as a restart names it: "policy.network", "sandboxes.workspace").
---@param bufnr integer
---@param setting string
---@return boolean
function M.sets(bufnr, setting)
  local at = states[bufnr] and states[bufnr].applied
  for key in setting:gmatch("[^.]+") do
    if type(at) ~= "table" then
      return false
    end
    at = at[key]
  end
  return at ~= nil
end

--- Brings a .chat buffer's layer up to date before its policy is used;
--- other buffers have no frontmatter. Never raises.
---@param bufnr integer|nil
function M.sync(bufnr)
  if type(bufnr) ~= "number" or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  if vim.api.nvim_buf_get_name(bufnr):match("%.chat$") then
    pcall(M.refresh, bufnr)
  end
end

--- Trusts (or with trusted = false forgets) the buffer's frontmatter as it
--- is now, and applies the result.
---@param bufnr integer
---@param trusted boolean
---@return boolean ok, string message
function M.set_trust(bufnr, trusted)
  local s = M.state(bufnr)
  s.key = nil
  M.refresh(bufnr)
  if not s.code then
    return false, "this buffer has no frontmatter"
  end
  if s.error then
    return false, "the frontmatter has an error: " .. s.error
  end
  local ok, err = trust.set(bufnr, trusted and s.code)
  if not ok then
    return false, "cannot keep the trust: " .. tostring(err)
  end
  s.key = nil
  M.refresh(bufnr)
  if not trusted then
    return true, "no longer trusted: what the frontmatter loosens is ignored"
  end
  if #(s.loose or {}) == 0 then
    return true, "trusted (it loosens nothing)"
  end
  return true, "trusted; now applied: " .. table.concat(s.loose, "; ")
end

--- Forgets a buffer (BufWipeout).
---@param bufnr integer
function M.forget(bufnr)
  states[bufnr] = nil
  sandbox.set_buffer_config(bufnr, nil)
end

return M
