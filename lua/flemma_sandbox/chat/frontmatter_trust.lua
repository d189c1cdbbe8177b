--- Trust for frontmatter that loosens the sandbox. A .chat file lives where
--- sandboxed commands may write, so its frontmatter may have been written by
--- one: what it tightens always applies; what it loosens (disabling, a
--- backend, more writable paths, network, privileges, fewer hidden or
--- protected paths, approvals, limits) applies only once the user ran
--- :FlemmaSandbox trust on that exact content. Trust is kept by the file's
--- path and the SHA-256 of its frontmatter in flemma-sandbox's state folder,
--- which no sandbox can write; any change to the text drops it. A program
--- path from a buffer (backends.*.path, tools.shell) is never used.
local surroundings = require("flemma_sandbox.base.surroundings")
local loosening = require("flemma_sandbox.base.loosening")
local util = require("flemma_sandbox.base.util")

local M = {}

local APPROVAL_RANK = { deny = 0, ask = 1, allow = 2 }
--- Boolean policy keys and the value that loosens.
local LOOSE_BOOLEAN = { allow_privileged = true, allow_home_rw = true, seccomp = false }
local LOOSER_WHEN_LARGER = { "timeout_ms", "max_timeout_ms", "output_limit", "read_max_bytes", "max_parallel" }

local added = loosening.added

---@class flemma_sandbox.TrustSplit
---@field tight table the layer without what loosens (always applied)
---@field loose string[] what the layer loosens, one line each
---@field never string[] what is never taken from a buffer

--- The additive lists: what the layer adds loosens.
local ADDITIVE = { rw_paths = true, env_allow = true, allow_sockets = true, allow_domains = true }

--- How each policy key splits: fn(key, value, base value, tight policy,
--- lose); keys without an entry (and not in LOOSE_BOOLEAN) are dropped.
---@type table<string, fun(key: string, value: any, b: any, tp: table, lose: fun(text: string))>
local POLICY_KEY = {}

POLICY_KEY.home_allow = function(key, value, _, tp, lose)
  -- additive too, the other way round: an entry shows more, "!entry" less
  local more = {}
  for _, entry in ipairs(value) do
    if entry:sub(1, 1) ~= "!" then
      more[#more + 1] = entry
    end
  end
  if #more > 0 then
    lose("policy.home_allow adds " .. table.concat(more, ", "))
  end
  tp[key] = {}
  for _, entry in ipairs(value) do
    if entry:sub(1, 1) == "!" then
      tp[key][#tp[key] + 1] = entry
    end
  end
end

--- Additive lists: new entries tighten, "!entry" removes a rule.
local function rule_list(key, value, _, tp, lose)
  local keep, removed = {}, {}
  for _, entry in ipairs(value) do
    if entry:sub(1, 1) == "!" then
      removed[#removed + 1] = entry:sub(2)
    else
      keep[#keep + 1] = entry
    end
  end
  if #removed > 0 then
    lose("policy." .. key .. " removes " .. table.concat(removed, ", "))
  end
  tp[key] = keep
end
POLICY_KEY.deny_read, POLICY_KEY.deny_write, POLICY_KEY.secret_files = rule_list, rule_list, rule_list

POLICY_KEY.deny_domains = function(key, value, b, tp, lose)
  -- it replaces the global list: a base entry it lacks is let through
  local gone = added(b or {}, value)
  if #gone > 0 then
    lose("policy.deny_domains drops " .. table.concat(gone, ", "))
  else
    tp[key] = value
  end
end

POLICY_KEY.network = function(key, value, b, tp, lose)
  if loosening.network(b or false, value) then
    lose("policy.network = " .. tostring(value))
  else
    tp[key] = value
  end
end

POLICY_KEY.secret_scan_depth = function(key, value, b, tp, lose)
  if value < (b or 0) then
    lose("policy.secret_scan_depth = " .. value)
  else
    tp[key] = value
  end
end

POLICY_KEY.limits = function(_, value, b, tp, lose)
  local tl = {}
  for name, v in pairs(value) do
    if loosening.limit(name, (b or {})[name], v) then
      lose("policy.limits." .. name .. " = " .. tostring(v))
    else
      tl[name] = v
    end
  end
  tp.limits = tl
end

--- The policy part of a layer: what of it tightens (nil for nothing).
---@return table|nil
local function split_policy(layer, base, lose)
  local policy, base_policy = layer.policy or {}, base.policy or {}
  local tp = {}
  for key, value in pairs(policy) do
    local b = base_policy[key]
    if ADDITIVE[key] then
      local more = added(value, b)
      if #more > 0 then
        lose("policy." .. key .. " adds " .. table.concat(more, ", "))
      else
        tp[key] = value
      end
    elseif POLICY_KEY[key] then
      POLICY_KEY[key](key, value, b, tp, lose)
    elseif LOOSE_BOOLEAN[key] ~= nil then
      if value == LOOSE_BOOLEAN[key] and b ~= value then
        lose("policy." .. key .. " = " .. tostring(value))
      else
        tp[key] = value
      end
    end
  end
  return next(tp) and tp or nil
end

--- enabled, backend and backends.* of a layer.
local function split_switches(layer, base, tight, lose, never)
  if layer.enabled ~= nil then
    if layer.enabled == false and base.enabled ~= false then
      lose("enabled = false")
    else
      tight.enabled = layer.enabled
    end
  end
  if layer.backend ~= nil then
    if layer.backend ~= base.backend then
      lose("backend = " .. tostring(layer.backend))
    else
      tight.backend = layer.backend
    end
  end
  for name, b in pairs(layer.backends or {}) do
    if b.path ~= nil then
      never[#never + 1] = "backends." .. name .. ".path: a program path from a buffer is never run"
    end
    if b.extra_args ~= nil and #b.extra_args > 0 then
      lose("backends." .. name .. ".extra_args")
    end
  end
end

--- approval.* of a layer: what it tightens.
---@return table
local function split_approval(approval, base, lose)
  local ta = {}
  for tool, level in pairs(approval) do
    local b = (base.approval or {})[tool] or "ask"
    if (APPROVAL_RANK[level] or 0) > (APPROVAL_RANK[b] or 1) then
      lose("approval." .. tool .. " = " .. tostring(level))
    else
      ta[tool] = level
    end
  end
  return ta
end

--- tools.* of a layer: what it tightens.
---@return table
local function split_tools(tools, base, lose, never)
  local tt = {}
  for key, value in pairs(tools) do
    if key == "shell" then
      never[#never + 1] = "tools.shell: a program path from a buffer is never run"
    elseif key == "enabled" then
      if value == true and (base.tools or {}).enabled == false then
        lose("tools.enabled = true")
      else
        tt[key] = value
      end
    elseif util.contains(LOOSER_WHEN_LARGER, key) and value > ((base.tools or {})[key] or math.huge) then
      lose("tools." .. key .. " = " .. tostring(value))
    else
      tt[key] = value
    end
  end
  return tt
end

--- sandboxes.* of a layer: a fresh sandbox per call, a shorter idle time,
--- fewer running: tighter; a name shares the folders and processes of the
--- chats of that name.
---@return table
local function split_sandboxes(sandboxes, base, lose)
  local ts, bs = {}, base.sandboxes or {}
  for key, value in pairs(sandboxes) do
    if not loosening.sandboxes(key, bs[key], value) then
      ts[key] = value
    else
      lose("sandboxes." .. key .. " = " .. tostring(value))
    end
  end
  return ts
end

--- Splits a frontmatter layer (already validated) into what tightens or
--- keeps the base config and what loosens it.
---@param layer table flemma.opt.sandbox (+ approval), shorthand expanded
---@param base flemma_sandbox.Config the config without the buffer's layer
---@return flemma_sandbox.TrustSplit
function M.split(layer, base)
  local tight, loose, never = {}, {}, {}
  local function lose(text)
    loose[#loose + 1] = text
  end
  split_switches(layer, base, tight, lose, never)
  tight.policy = split_policy(layer, base, lose)
  if layer.approval ~= nil then
    tight.approval = split_approval(layer.approval, base, lose)
  end
  if layer.tools ~= nil then
    tight.tools = split_tools(layer.tools, base, lose, never)
  end
  if layer.sandboxes ~= nil then
    tight.sandboxes = split_sandboxes(layer.sandboxes, base, lose)
  end
  table.sort(loose)
  return { tight = tight, loose = loose, never = never }
end

--- The layer trusted content gets: everything but what is never taken.
---@param layer table
---@return table
function M.without_never(layer)
  local out = util.deepcopy(layer)
  for _, b in pairs(out.backends or {}) do
    b.path = nil
  end
  if out.tools then
    out.tools.shell = nil
  end
  return out
end

--- Trust of unnamed buffers lasts for the session only.
---@type table<string, string>
local session = {}

--- The key a buffer's trust is kept under: its file's real path.
---@param bufnr integer
---@return string key, boolean persistent
local function key_of(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" then
    return "buffer:" .. bufnr, false
  end
  return vim.fn.resolve(vim.fn.fnamemodify(name, ":p")), true
end

--- The file holding the trusted hash for a key (named by the key's hash).
---@param key string
---@return string|nil path, string|nil err
local function record(key)
  local dir, err = surroundings.state_dir("trust")
  if not dir then
    return nil, err
  end
  return dir .. "/" .. surroundings.sha256(key), nil
end

---@param code string the frontmatter text
---@return string
function M.hash(code)
  return surroundings.sha256(code)
end

--- Whether the user trusts this buffer's frontmatter text as it is.
---@param bufnr integer
---@param code string
---@return boolean
function M.is_trusted(bufnr, code)
  local key, persistent = key_of(bufnr)
  if not persistent then
    return session[key] == M.hash(code)
  end
  local path = record(key)
  local f = path and io.open(path, "r")
  if not f then
    return false
  end
  local stored = f:read("*l")
  f:close()
  return stored == M.hash(code) .. " " .. key
end

--- Trusts (or with `false`, forgets) this buffer's frontmatter text.
---@param bufnr integer
---@param code string|false
---@return boolean ok, string|nil err
function M.set(bufnr, code)
  local key, persistent = key_of(bufnr)
  if not persistent then
    session[key] = code and M.hash(code) or nil
    return true
  end
  local path, err = record(key)
  if not path then
    return false, err
  end
  if not code then
    os.remove(path)
    return true
  end
  local f, open_err = io.open(path, "w")
  if not f then
    return false, open_err
  end
  f:write(M.hash(code) .. " " .. key .. "\n")
  f:close()
  return true
end

return M
