--- hosted.lua: the API for a host plugin (Flemma) that decides itself
--- whether, with which writable paths, network and privileges a command is
--- sandboxed: its config for flemma-sandbox is checked with errors naming
--- the host's key, and its policy is laid on flemma-sandbox's hardening.
local hosted = require("flemma_sandbox.api.hosted")
local surroundings = require("flemma_sandbox.base.surroundings")

local KEY = "sandbox.backends.flemma_sandbox"

--- A hosted call with the host's policy and config.
local function call(policy, backend_config, more)
  local c = { config_key = KEY, policy = policy, backend_config = backend_config }
  for k, v in pairs(more or {}) do
    c[k] = v
  end
  return c
end

describe("hosted", function()
  after_each(function()
    surroundings.use(nil)
  end)

  describe("config", function()
    it("names the host's key in each error", function()
      local cases = {
        { { network = "bogus" }, KEY .. ".network: expected" },
        { { path = 3 }, KEY .. ".path: expected non-empty string, got number" },
        { { path = "" }, KEY .. ".path: expected non-empty string" },
        { { extra_args = { 1 } }, KEY .. ".extra_args[1]: expected string, got number" },
        { { env_allow = "HOME" }, KEY .. ".env_allow: expected a list of strings, got string" },
        { { seccomp = "yes" }, KEY .. ".seccomp" },
      }
      for _, case in ipairs(cases) do
        local cfg, err = hosted.config(case[1], KEY)
        assert.is_nil(cfg)
        assert.are.equal(1, err:find(case[2], 1, true), err)
      end
    end)

    it("lays the host's keys on the defaults, path and extra_args under backends.bwrap", function()
      local cfg =
        assert(hosted.config({ deny_domains = { "evil.test" }, path = "/opt/bwrap", extra_args = { "--x" } }, KEY))
      assert.are.same({ "evil.test" }, cfg.policy.deny_domains)
      assert.are.equal("/opt/bwrap", cfg.backends.bwrap.path)
      assert.are.same({ "--x" }, cfg.backends.bwrap.extra_args)
      -- the rest stays the defaults
      assert.is_true(cfg.policy.seccomp)
      assert.are.equal("allowlist", cfg.policy.network)
    end)

    it("takes no config as the defaults", function()
      local cfg = assert(hosted.config(nil, KEY))
      assert.are.equal("bwrap", cfg.backends.bwrap.path)
    end)
  end)

  describe("policy", function()
    it("uses the host's writable paths and this call's extra ones", function()
      local resolved = assert(hosted.policy(call({ rw_paths = { "/var/tmp" } }, nil, { extra_rw = { "/srv" } })))
      assert.are.same(
        { "/srv", "/var/tmp" },
        (function()
          local list = { unpack(resolved.rw_paths) }
          table.sort(list)
          return list
        end)()
      )
    end)

    it("sends the host's network on through the allowlist proxy, unless the config asks for host or ask", function()
      for _, case in ipairs({
        { true, nil, "allowlist" },
        { nil, nil, "allowlist" },
        { false, nil, "off" },
        { true, "host", "host" },
        { true, "ask", "ask" },
        { false, "host", "off" },
      }) do
        local resolved = assert(hosted.policy(call({ rw_paths = {}, network = case[1] }, { network = case[2] })))
        assert.are.equal(case[3], resolved.network_mode, tostring(case[1]) .. " " .. tostring(case[2]))
      end
    end)

    it("keeps privileges only when the host says true", function()
      for value, want in pairs({ [true] = true, [false] = false, yes = false }) do
        local resolved = assert(hosted.policy(call({ rw_paths = {}, allow_privileged = value })))
        assert.are.equal(want, resolved.allow_privileged == true, tostring(value))
      end
    end)

    it("passes the host's environment but credential-like names only when env_allow names them", function()
      local resolved = assert(hosted.policy(call({ rw_paths = {} }, { env_allow = { "GITHUB_TOKEN" } }, {
        env = {
          FOO = "bar",
          OPENAI_API_KEY = "sk-x",
          GITHUB_TOKEN = "gh",
          DATABASE_URL = "postgres://u:pw@h/db",
        },
      })))
      assert.are.equal("bar", resolved.env.FOO)
      assert.are.equal("gh", resolved.env.GITHUB_TOKEN)
      assert.is_nil(resolved.env.OPENAI_API_KEY)
      assert.is_nil(resolved.env.DATABASE_URL)
    end)

    it("passes on the config's error", function()
      local resolved, err = hosted.policy(call({ rw_paths = {} }, { limits = "none" }))
      assert.is_nil(resolved)
      assert.matches("^" .. KEY:gsub("%p", "%%%0") .. "%.limits", err)
    end)
  end)

  describe("wrap", function()
    it("refuses a command that is no list of strings", function()
      assert.are.same({ nil, "inner_cmd: expected a non-empty list of strings" }, { hosted.wrap(call({}), {}) })
      assert.are.same(
        { nil, "inner_cmd[2]: expected string, got number" },
        { hosted.wrap(call({ rw_paths = {} }), { "ls", 3 }) }
      )
    end)

    it("refuses every command when FLEMMA_SANDBOX_TOOLS=off, naming it", function()
      surroundings.use({
        getenv = function(name)
          return name == "FLEMMA_SANDBOX_TOOLS" and "off" or os.getenv(name)
        end,
      })
      local argv, err = hosted.wrap(call({ rw_paths = {} }), { "true" })
      assert.is_nil(argv)
      assert.are.equal("refused: tool calls are off: FLEMMA_SANDBOX_TOOLS=off in Neovim's environment", err)
    end)
  end)
end)
