--- policy/default_lists.lua: the built-in lists. Each entry is read as the
--- policy reads it: paths expand with the policy's variables and `~`,
--- secret patterns match names with core.fnmatch as the scan does.
local defaults = require("flemma_sandbox.policy.default_lists")
local core = require("flemma_sandbox.core")

--- Whether any pattern of SECRET_FILES matches a file name.
local function secret(name)
  for _, glob in ipairs(defaults.SECRET_FILES) do
    if core.fnmatch(glob, name) then
      return true
    end
  end
  return false
end

local VARS = {
  HOME = "/home/u",
  NVIM_CONFIG = "/home/u/.config/nvim",
  NVIM_DATA = "/home/u/.local/share/nvim",
  NVIM_STATE = "/home/u/.local/state/nvim",
  NVIM_CACHE = "/home/u/.cache/nvim",
  FLEMMA_SANDBOX_LIB = "/lib/fs",
  FLEMMA_SANDBOX_LUA = "/lua/fs",
  NVIM_RUNTIMEPATH = "/rtp",
}

describe("policy.default_lists", function()
  it("secret patterns match keys, env files and credentials, not public keys or sources", function()
    for _, name in ipairs({
      ".env",
      ".env.local",
      ".env.production",
      ".envrc",
      "server.pem",
      "tls.key",
      "id_rsa",
      "id_ed25519",
      "id_ecdsa",
      "cert.p12",
      "vault.kdbx",
      ".netrc",
      ".npmrc",
      ".pgpass",
      ".git-credentials",
      "credentials.json",
      "prod.tfvars",
      "terraform.tfstate",
      "terraform.tfstate.backup",
    }) do
      assert.is_true(secret(name), name)
    end
    for _, name in ipairs({
      "id_rsa.pub",
      "id_ed25519.pub",
      "README.md",
      "environment.lua",
      "env.go",
      "keys.lua",
      "main.tf",
      "package.json",
      "my.env.example.txt",
    }) do
      assert.is_false(secret(name), name)
    end
  end)

  it("every path of DENY_READ, DENY_WRITE, HOME_ALLOW and HOME_WRITABLE expands with the policy's variables", function()
    for list_name, list in pairs({
      DENY_READ = defaults.DENY_READ,
      DENY_WRITE = defaults.DENY_WRITE,
      HOME_ALLOW = defaults.HOME_ALLOW,
      HOME_WRITABLE = defaults.HOME_WRITABLE,
    }) do
      for _, entry in ipairs(list) do
        local expanded, err = core.expand(entry, VARS)
        assert.is_truthy(expanded, list_name .. " " .. entry .. ": " .. tostring(err))
      end
    end
  end)

  it("hides the credential folders and protects the files that run code later", function()
    local function has(list, entry)
      for _, e in ipairs(list) do
        if e == entry then
          return true
        end
      end
      return false
    end
    for _, e in ipairs({ "~/.ssh", "~/.gnupg", "~/.aws", "~/.netrc", "~/.git-credentials", "~/.kube" }) do
      assert.is_true(has(defaults.DENY_READ, e), e)
    end
    for _, e in ipairs({ ".git/", ".envrc", ".nvim.lua", ".exrc", "~/.bashrc", "~/.local/bin/", "$NVIM_CONFIG/" }) do
      assert.is_true(has(defaults.DENY_WRITE, e), e)
    end
  end)

  it("shows nothing of the home folder's secrets through HOME_ALLOW or HOME_WRITABLE", function()
    for _, list in ipairs({ defaults.HOME_ALLOW, defaults.HOME_WRITABLE }) do
      for _, entry in ipairs(list) do
        local path = assert(core.expand(entry, VARS))
        for _, hidden in ipairs(defaults.DENY_READ) do
          local h = assert(core.expand(hidden, VARS))
          assert.is_false(core.is_within(path, h) or core.is_within(h, path), entry .. " and " .. hidden)
        end
      end
    end
  end)
end)
