--- Under Flemma a buffer's frontmatter may loosen the sandbox: turn it off,
--- add rw_paths, turn the network on, auto-approve tools, name another
--- backend, a backend's program or arguments, load tool modules. A file in
--- the project is one the sandbox can write, so none of that counts until
--- the user trusts that exact frontmatter text (:FlemmaSandbox trust, kept
--- by content hash where the sandbox cannot write, as in standalone mode).
--- Until then flemma-sandbox's approval resolver denies the buffer's tool
--- calls. Tightening is always fine.
local fence = require("flemma_sandbox.base.frontmatter_fence")
local loosening = require("flemma_sandbox.base.loosening")
local trust = require("flemma_sandbox.chat.frontmatter_trust")

local M = {}

-- vim.islist from Neovim 0.10; tbl_islist is deprecated there
local islist = vim.islist or vim.tbl_islist

--- Changes that only tighten or do not touch what a command may do.
local NEUTRAL = {
  ["tools.max_concurrent"] = true,
  ["tools.default_timeout"] = true,
  ["tools.show_spinner"] = true,
  ["tools.cursor_after_result"] = true,
  ["tools.autopilot.enabled"] = true,
  ["tools.autopilot.max_turns"] = true,
}

--- Leaves of a config table by dotted path; a list is one leaf, an empty
--- table none.
---@param t any
---@param prefix string
---@param out table<string, any>
local function flatten(t, prefix, out)
  if type(t) == "table" and next(t) == nil then
    return out -- an empty list or object says nothing
  end
  if type(t) ~= "table" or islist(t) then
    out[prefix] = t
    return out
  end
  for k, v in pairs(t) do
    flatten(v, prefix == "" and tostring(k) or (prefix .. "." .. tostring(k)), out)
  end
  return out
end

local BACKEND = "sandbox.backends.flemma_sandbox."

--- What flemma-sandbox uses for one of its backend keys when Flemma's
--- config does not name it (a limit, seccomp), or nil.
---@param key string below sandbox.backends.flemma_sandbox
---@return any
local function backend_default(key)
  local ok, cfg = pcall(function()
    return require("flemma_sandbox.flemma.backend").effective_config({})
  end)
  if not ok or type(cfg) ~= "table" then
    return nil
  end
  local limit = key:match("^limits%.(.+)$")
  if limit then
    return cfg.policy.limits[limit]
  end
  if key == "seccomp" then
    return cfg.policy.seccomp
  end
  local sandboxes_key = key:match("^sandboxes%.(.+)$")
  if sandboxes_key then
    return cfg.sandboxes[sandboxes_key]
  end
end

--- Whether going from `base` to `value` at `path` loosens the sandbox.
---@return boolean
local function loosens(path, base, value)
  if NEUTRAL[path] then
    return false
  end
  if base == nil and path:sub(1, #BACKEND) == BACKEND then
    if type(value) == "table" and next(value) == nil then
      return false -- an empty list filled in by Flemma's schema
    end
    base = backend_default(path:sub(#BACKEND + 1))
    if vim.deep_equal(base, value) then
      return false
    end
  end
  if path == "sandbox.enabled" or path == "tools.require_approval" then
    return value == false
  end
  if path == "sandbox.policy.network" or path == "sandbox.policy.allow_privileged" then
    return value == true
  end
  if path == "tools.auto_approve_sandboxed" then
    return value == true
  end
  if path:sub(1, #BACKEND + 7) == BACKEND .. "limits." then
    return loosening.limit(path:sub(#BACKEND + 8), base, value)
  end
  local sandboxes_key = path:match("^" .. BACKEND:gsub("%.", "%%.") .. "sandboxes%.(.+)$")
  if sandboxes_key then
    return loosening.sandboxes(sandboxes_key, base, value)
  end
  if (path == "sandbox.policy.rw_paths" or path == "tools.auto_approve") and type(value) == "table" then
    return #loosening.added(value, base) > 0
  end
  return true
end

--- What the buffer's frontmatter changes that loosens the sandbox, as
--- "key = value" lines (empty without Flemma or without such changes).
---@param bufnr integer
---@return string[]
function M.loosening(bufnr)
  local ok, config = pcall(require, "flemma.config")
  if not ok or type(config.materialize) ~= "function" then
    return {}
  end
  local got_with, with = pcall(config.materialize, bufnr)
  local got_without, without = pcall(config.materialize, nil)
  if not got_with or not got_without then
    return {}
  end
  local out = {}
  for _, section in ipairs({ "sandbox", "tools" }) do
    local now = flatten(with[section], section, {})
    local base = flatten(without[section], section, {})
    local paths = {}
    for path in pairs(now) do
      paths[#paths + 1] = path
    end
    for path in pairs(base) do
      if now[path] == nil then
        paths[#paths + 1] = path
      end
    end
    table.sort(paths)
    for _, path in ipairs(paths) do
      if not vim.deep_equal(now[path], base[path]) and loosens(path, base[path], now[path]) then
        out[#out + 1] = path .. " = " .. vim.inspect(now[path], { newline = " ", indent = "" })
      end
    end
  end
  return out
end

--- The buffer's frontmatter text, in whatever language its fence names
--- (frontmatter_fence.lua: Flemma's rule, the reader every part shares).
---@param bufnr integer
---@return string|nil
function M.frontmatter_text(bufnr)
  local block = fence.of_buffer(bufnr)
  return block and block.text
end

--- Why the buffer's tool calls are refused, or nil: its frontmatter
--- loosens the sandbox and the user has not trusted that text.
---@param bufnr integer
---@return string|nil reason, string[] loose
function M.refusal(bufnr)
  local loose = M.loosening(bufnr)
  if #loose == 0 then
    return nil, loose
  end
  local code = M.frontmatter_text(bufnr)
  if code and trust.is_trusted(bufnr, code) then
    return nil, loose
  end
  return "this buffer's frontmatter loosens the sandbox ("
    .. table.concat(loose, "; ")
    .. ") and is not trusted: :FlemmaSandbox trust applies it",
    loose
end

--- Trusts (or with `false` forgets) the buffer's frontmatter as it is now.
---@param bufnr integer
---@param trusted boolean
---@return boolean ok, string message
function M.set(bufnr, trusted)
  local code = M.frontmatter_text(bufnr)
  if not code then
    return false, "this buffer has no frontmatter"
  end
  local ok, err = trust.set(bufnr, trusted and code)
  if not ok then
    return false, "cannot keep the trust: " .. tostring(err)
  end
  if not trusted then
    return true, "no longer trusted: tool calls of this buffer are refused while its frontmatter loosens the sandbox"
  end
  local loose = M.loosening(bufnr)
  return true, #loose == 0 and "trusted (it loosens nothing)" or ("trusted; now applied: " .. table.concat(loose, "; "))
end

return M
