--- The environment a command sees: a short allowlist of Neovim's
--- variables, never a credential by its name or its look (API keys,
--- tokens, passwords), unless env_allow names it exactly.
local surroundings = require("flemma_sandbox.base.surroundings")

local M = {}

--- Passed into every sandbox unless removed; "PREFIX*" matches a prefix.
M.DEFAULT_ENV = {
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "LANG",
  "LC_*",
  "TERM",
  "COLORTERM",
  "TMPDIR",
  "SHELL",
  "EDITOR",
  "TZ",
}

--- Names that look like credentials: a pattern ("PREFIX*") never lets
--- them through; only naming them exactly in env_allow does.
local CREDENTIAL = {
  "KEY$",
  "TOKEN$",
  "SECRET",
  "PASSWORD",
  "PASSWD",
  "CREDENTIAL",
  "^AWS_",
  "AUTH",
  "COOKIE",
  "_PAT$",
  "_DSN$",
  "_PASS$",
  "_PWD$",
}

--- Whether a variable looks like a credential: by its name, or by a value
--- that is a URL with a password in it (postgres://user:pass@host).
---@param name string
---@param value? string
---@return boolean
function M.looks_like_credential(name, value)
  local upper = name:upper()
  for _, pattern in ipairs(CREDENTIAL) do
    if upper:find(pattern) then
      return true
    end
  end
  return type(value) == "string" and value:find("^%a[%w+.-]*://[^/@%s]*:[^/@%s]*@") ~= nil
end

--- The environment a sandboxed command sees: the default names and
--- env_allow, taken from the host, and nothing else.
---@param extra string[]|nil env_allow
---@return table<string, string>
function M.environment(extra)
  local env, all = {}, nil
  local names = {}
  for _, list in ipairs({ M.DEFAULT_ENV, extra or {} }) do
    for _, n in ipairs(list) do
      names[#names + 1] = n
    end
  end
  for _, entry in ipairs(names) do
    local prefix = entry:match("^(.*)%*$")
    if not prefix then
      env[entry] = surroundings.getenv(entry)
    else
      all = all or surroundings.environ() or {}
      for name, value in pairs(all) do
        if name:sub(1, #prefix) == prefix and not M.looks_like_credential(name, value) then
          env[name] = value
        end
      end
    end
  end
  return env
end

return M
