--- policy/env.lua: the environment a command sees is the default names and
--- env_allow, read from the host; a pattern ("PREFIX*") never lets a
--- credential through, only naming it exactly does.
local env = require("flemma_sandbox.policy.env")
local surroundings = require("flemma_sandbox.base.surroundings")

--- The host's environment as a table, for surroundings.use.
---@param vars table<string, string>
---@param listable? boolean false: environ() cannot list it (plain LuaJIT)
local function host(vars, listable)
  surroundings.use({
    getenv = function(name)
      return vars[name]
    end,
    environ = function()
      if listable == false then
        return nil
      end
      local copy = {}
      for k, v in pairs(vars) do
        copy[k] = v
      end
      return copy
    end,
  })
end

describe("policy.env.looks_like_credential", function()
  after_each(function()
    surroundings.use(nil)
  end)

  it("knows credentials by their names, in any case", function()
    for _, name in ipairs({
      "OPENAI_API_KEY",
      "GITHUB_TOKEN",
      "client_secret",
      "DB_PASSWORD",
      "SMTP_PASSWD",
      "GOOGLE_APPLICATION_CREDENTIALS",
      "AWS_REGION",
      "HTTP_AUTHORIZATION",
      "SESSION_COOKIE",
      "GH_PAT",
      "SENTRY_DSN",
      "MYSQL_PASS",
      "ROOT_PWD",
    }) do
      assert.is_true(env.looks_like_credential(name), name)
    end
  end)

  it("lets ordinary names through, even ones that contain a credential's word in the middle", function()
    for _, name in ipairs({ "PATH", "HOME", "LANG", "LC_ALL", "TERM", "MY_AWS_REGION", "KEYBOARD", "PATHEXT" }) do
      assert.is_false(env.looks_like_credential(name), name)
    end
  end)

  it("knows a URL with a password in its value, under any name", function()
    assert.is_true(env.looks_like_credential("DATABASE_URL", "postgres://user:hunter2@db.example/app"))
    assert.is_true(env.looks_like_credential("LC_X", "redis://:pw@127.0.0.1:6379"))
    assert.is_false(env.looks_like_credential("DATABASE_URL", "postgres://db.example/app"))
    assert.is_false(env.looks_like_credential("DATABASE_URL", "postgres://user@db.example/app"))
    assert.is_false(env.looks_like_credential("LANG", nil))
    assert.is_false(env.looks_like_credential("LANG", "C.UTF-8"))
  end)
end)

describe("policy.env.environment", function()
  after_each(function()
    surroundings.use(nil)
  end)

  it("passes the default names from the host and nothing else", function()
    host({ PATH = "/usr/bin", HOME = "/home/u", LANG = "C.UTF-8", OTHER = "x", OPENAI_API_KEY = "sk-1" })
    local e = env.environment(nil)
    assert.are.same({ PATH = "/usr/bin", HOME = "/home/u", LANG = "C.UTF-8" }, e)
  end)

  it("expands a prefix pattern, leaving out what looks like a credential by name or value", function()
    host({
      LC_ALL = "C",
      LC_CTYPE = "C.UTF-8",
      LC_API_KEY = "k",
      LC_URL = "https://u:p@host/",
      LANGUAGE = "en",
    })
    local e = env.environment(nil)
    assert.are.same({ LC_ALL = "C", LC_CTYPE = "C.UTF-8" }, e)
  end)

  it("passes a credential that env_allow names exactly, but never through a pattern", function()
    host({ MY_TOKEN = "t", MY_VAR = "v", MY_SECRET_FILE = "/s" })
    local exact = env.environment({ "MY_TOKEN" })
    assert.are.equal("t", exact.MY_TOKEN)
    assert.is_nil(exact.MY_VAR)
    local pattern = env.environment({ "MY_*" })
    assert.are.same({ MY_VAR = "v" }, pattern)
  end)

  it("leaves out a named variable the host does not have", function()
    host({ PATH = "/bin" })
    local e = env.environment({ "NOT_SET" })
    assert.are.same({ PATH = "/bin" }, e)
  end)

  it("expands no pattern where the environment cannot be listed, and still passes named ones", function()
    host({ PATH = "/bin", LC_ALL = "C" }, false)
    local e = env.environment({ "X_*" })
    assert.are.same({ PATH = "/bin" }, e)
  end)

  it("lists the default names", function()
    assert.is_truthy(#env.DEFAULT_ENV >= 10)
    for _, n in ipairs({ "PATH", "HOME", "LC_*", "TERM" }) do
      local found = false
      for _, d in ipairs(env.DEFAULT_ENV) do
        found = found or d == n
      end
      assert.is_true(found, n)
    end
  end)
end)
