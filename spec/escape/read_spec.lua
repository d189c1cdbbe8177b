--- Escape suite: reading secrets, from files and from the environment.
local f = require("escape.fixture")
local h = require("support.helpers")

describe("escape: reading secrets", function()
  local w
  setup(function()
    w = f.create()
    f.use_host(w)
  end)
  teardown(function()
    f.destroy(w)
  end)
  before_each(function()
    f.policy()
  end)

  local names = {}
  for name in pairs(f.SECRET_FILES) do
    names[#names + 1] = name
  end
  table.sort(names)
  for _, name in ipairs(names) do
    it("cannot read the default secret " .. f.SECRET_FILES[name], function()
      local path = w.home .. "/" .. f.SECRET_FILES[name]
      local r = f.attack(w, "cat " .. h.shell_quote(path) .. "; cat ~/" .. f.SECRET_FILES[name] .. "; ls -A ~/.ssh")
      assert.is_nil(r.stdout:find(f.SECRET, 1, true))
      assert.is_nil(r.stdout:find("id_rsa", 1, true))
    end)
  end

  it("cannot read .env, .env.* and *.pem files found in the project", function()
    local r = f.attack(w, "cat .env config/.env.local server.pem; grep -r " .. f.SECRET .. " . ; cat src/main.c")
    assert.is_nil(r.stdout:find(f.SECRET, 1, true))
    assert.matches("int main", r.stdout) -- the rest of the project is readable
  end)

  -- credential files by purpose, as a project holds them (a deploy key
  -- copied in for a Docker build, a keystore, a registry's token file)
  local CREDENTIALS = {
    "deploy/id_rsa",
    "deploy/id_ed25519",
    "deploy/id_ecdsa_sk",
    "deploy/id_ed25519_github",
    "certs/client.p12",
    "certs/client.pfx",
    "android/release.jks",
    "android/release.keystore",
    "vault.kdbx",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    "web/.htpasswd",
    "gcp/credentials.json",
    "infra/prod.tfvars",
    "infra/terraform.tfstate",
    "infra/terraform.tfstate.backup",
  }

  it("cannot read conventional credential files anywhere in the project; public keys stay readable", function()
    for _, rel in ipairs(CREDENTIALS) do
      h.sh("mkdir -p " .. h.shell_quote((w.proj .. "/" .. rel):match("^(.*)/")))
      h.write(w.proj .. "/" .. rel, f.SECRET .. "\n")
    end
    h.write(w.proj .. "/deploy/id_ed25519.pub", "ssh-ed25519 PUBLIC\n")
    local cats = {}
    for i, rel in ipairs(CREDENTIALS) do
      cats[i] = "cat " .. h.shell_quote(rel) .. " 2>/dev/null | sed 's|^|" .. rel .. ": |'"
    end
    local r = f.attack(w, table.concat(cats, "; ") .. "; cat deploy/id_ed25519.pub", { keep_host = true })
    for _, rel in ipairs(CREDENTIALS) do
      assert.is_nil(r.stdout:find(rel .. ": " .. f.SECRET, 1, true), rel)
    end
    assert.matches("ssh%-ed25519 PUBLIC", r.stdout)
    -- control: the same file is readable once its rule is taken out
    f.policy({ secret_files = { "!id_rsa!(*.pub)", "!*.tfvars" } })
    r = f.attack(w, "cat deploy/id_rsa infra/prod.tfvars", { keep_host = true })
    assert.are.equal(f.SECRET .. "\n" .. f.SECRET .. "\n", r.stdout)
    for _, rel in ipairs(CREDENTIALS) do
      os.remove(w.proj .. "/" .. rel)
    end
    h.sh("cd " .. h.shell_quote(w.proj) .. " && rm -rf deploy certs android web gcp infra")
  end)

  it("the control: the same command sees a secret file once it is allowed", function()
    f.policy({ deny_read = { "!~/.aws" }, home_allow = { "~/.aws" } })
    local r = f.attack(w, "cat ~/.aws/credentials")
    assert.truthy(r.stdout:find(f.SECRET, 1, true))
  end)

  it("cannot read API keys from its environment", function()
    local r = f.attack(w, 'env; printf \'%s\\n\' "$OPENAI_API_KEY" "$GITHUB_TOKEN" "$LC_SECRET_TOKEN"')
    assert.is_nil(r.stdout:find(f.SECRET, 1, true))
    assert.matches("HOME=", r.stdout)
  end)

  it("cannot read API keys from another process's environment", function()
    local r = f.attack(w, "cat /proc/*/environ /proc/1/environ 2>/dev/null | tr '\\0' '\\n'")
    assert.is_nil(r.stdout:find(f.SECRET, 1, true))
  end)

  it("a credential passes only when named exactly in env_allow", function()
    f.policy({ env_allow = { "GITHUB_TOKEN" } })
    local r = f.attack(w, 'printf \'%s\\n\' "$GITHUB_TOKEN" "$OPENAI_API_KEY"')
    assert.are.equal(f.SECRET .. "\n\n", r.stdout)
  end)
end)
