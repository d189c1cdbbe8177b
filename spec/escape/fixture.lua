--- The world the escape suite attacks: a fake home with every default
--- secret, a project with a .git and secret files, a folder outside every
--- writable path; and `attack()`, which runs one command through the real
--- sandbox and asserts that nothing on the host changed.
local core = require("flemma_sandbox.core")
local h = require("support.helpers")
local surroundings = require("flemma_sandbox.base.surroundings")
local sandbox = require("flemma_sandbox")

local M = {}

--- Relative to the world's base, as find prints it: our own state, where
--- a check file lives while a command runs and moved entries stay.
M.STATE = "./home/.local/state/flemma-sandbox"

--- The warm path (spec/run.sh escape-warm): every attack of a world runs
--- as a call of one chat, in the chat's live sandbox, after the attacks
--- before it; what one planted must not get a later one more than it
--- was allowed. The chat's own folders (its /tmp, /run, home) are where
--- its commands may write: the snapshots leave them out.
M.WARM = os.getenv("FLEMMA_SANDBOX_WARM") == "1"
M.CHATS = "./home/.cache/flemma-sandbox"
--- The chat buffer's number the warm path uses (a fake buffer).
M.CHAT_BUF = 4242

--- What the quarantine holds now: the original paths, sorted.
---@param w table
---@return string[]
function M.quarantined(w)
  local out = {}
  for line in
    h.capture("cat " .. h.shell_quote(w.home) .. "/.local/state/flemma-sandbox/quarantine/*/from 2>/dev/null")
      :gmatch("[^\n]+")
  do
    out[#out + 1] = line
  end
  table.sort(out)
  return out
end

M.SECRET = "FLEMMA-SECRET-" .. tostring(os.time()) .. "-" .. tostring(math.random(1e6))
--- The attack script in the checkout; each world runs its own copy, since
--- a checkout under /tmp is not there in the sandbox's private /tmp.
M.ATTACK_SOURCE = core.absolute("spec/escape/attack.lua", core.getcwd())

--- What the sandboxed process would get in its environment if the
--- allowlist let everything through.
M.ENV = {
  OPENAI_API_KEY = M.SECRET,
  ANTHROPIC_API_KEY = M.SECRET,
  GITHUB_TOKEN = M.SECRET,
  AWS_SECRET_ACCESS_KEY = M.SECRET,
  LC_SECRET_TOKEN = M.SECRET,
}

M.SECRET_FILES = {
  ssh = ".ssh/id_rsa",
  gnupg = ".gnupg/private-keys-v1.d/key",
  aws = ".aws/credentials",
  azure = ".azure/accessTokens.json",
  gcloud = ".config/gcloud/credentials.db",
  kube = ".kube/config",
  docker = ".docker/config.json",
  netrc = ".netrc",
  git_credentials = ".git-credentials",
  password_store = ".password-store/bank.gpg",
  keyrings = ".local/share/keyrings/login.keyring",
  firefox = ".mozilla/firefox/abc.default/cookies.sqlite",
  chrome = ".config/google-chrome/Default/Cookies",
}

local function mkfile(path, content)
  h.sh("mkdir -p " .. h.shell_quote(path:match("^(.*)/[^/]+$")))
  h.write(path, content)
end

--- Builds the world under the real home folder, as a user's projects are.
---@return table world
function M.create()
  local real_home = os.getenv("HOME")
  local base = h.capture("mktemp -d " .. h.shell_quote(real_home .. "/.cache/flemma-escape.XXXXXX") .. " 2>/dev/null")
  if base == "" then
    h.sh("mkdir -p " .. h.shell_quote(real_home .. "/.cache"))
    base = h.capture("mktemp -d " .. h.shell_quote(real_home .. "/.cache/flemma-escape.XXXXXX"))
  end
  base = core.resolve(base:gsub("%s+$", ""), "/")
  local w = { base = base, home = base .. "/home", outside = base .. "/outside" }
  w.proj = w.home .. "/proj"
  w.work = w.proj .. "/work"
  w.tmp = h.tmpdir() -- under /var/tmp: a shared temp folder
  for _, rel in pairs(M.SECRET_FILES) do
    mkfile(w.home .. "/" .. rel, M.SECRET .. "\n")
  end
  mkfile(w.home .. "/.bashrc", "# original bashrc\n")
  mkfile(w.home .. "/.config/nvim/init.lua", "-- original init.lua\n")
  mkfile(w.home .. "/.local/bin/tool", "#!/bin/sh\n")
  mkfile(w.outside .. "/keep.txt", "original\n")
  mkfile(w.proj .. "/.git/config", "[core]\n\tbare = false\n")
  mkfile(w.proj .. "/.git/hooks/pre-commit.sample", "#!/bin/sh\n")
  mkfile(w.proj .. "/.env", "API_KEY=" .. M.SECRET .. "\n")
  mkfile(w.proj .. "/config/.env.local", "TOKEN=" .. M.SECRET .. "\n")
  mkfile(w.proj .. "/server.pem", M.SECRET .. "\n")
  mkfile(w.proj .. "/src/main.c", "int main(void) { return 0; }\n")
  if M.WARM then
    mkfile(base .. "/escape.chat", "@You:\nhi\n")
    h.sh("mkdir -p " .. h.shell_quote(w.home .. "/.cache/flemma-sandbox"))
  end
  M.ATTACK = base .. "/attack.lua"
  h.sh("cp " .. h.shell_quote(M.ATTACK_SOURCE) .. " " .. h.shell_quote(M.ATTACK))
  h.sh("mkdir -p " .. h.shell_quote(w.work))
  return w
end

--- Points the policy layer at the fake home and project.
---@param w table
---@param over? table host fields to override (cwd, ...)
function M.use_host(w, over)
  local env = setmetatable({ HOME = w.home }, { __index = M.ENV })
  local fake = {
    cwd = function()
      return w.proj
    end,
    getenv = function(name)
      if name:match("^XDG_") then
        return nil
      end
      local v = env[name]
      if v ~= nil then
        return v
      end
      return os.getenv(name)
    end,
    buffer_file = function(bufnr)
      return M.WARM and bufnr == M.CHAT_BUF and w.base .. "/escape.chat" or nil
    end,
    environ = function()
      local all = { PATH = os.getenv("PATH"), LANG = "C.UTF-8" }
      for k, v in pairs(M.ENV) do
        all[k] = v
      end
      return all
    end,
  }
  for k, v in pairs(over or {}) do
    fake[k] = v
  end
  surroundings.use(fake)
  -- our state folder is made now, so the snapshots do not see it appear
  assert(surroundings.state_dir("runs"))
  assert(surroundings.state_dir("quarantine"))
  assert(surroundings.state_dir("args"))
end

--- Sets the policy; rw_paths default to the project and /tmp.
---@param policy? table
function M.policy(policy)
  policy = policy or {}
  policy.rw_paths = policy.rw_paths or { "$CWD", "/tmp" }
  if policy.network == nil then
    policy.network = false
  end
  sandbox.setup({ backend = "bwrap", policy = policy })
end

--- Every path under base (the work folder and our state left out) with
--- type, mode, size, content hash; files also with their modification time.
--- What goes to the quarantine is checked by the specs that expect it.
---@param w table
---@return string
function M.snapshot(w)
  local q = h.shell_quote
  return h.capture(
    "cd "
      .. q(w.base)
      .. " && find . \\( -path ./home/proj/work -o -path "
      .. M.STATE
      .. (M.WARM and " -o -path " .. M.CHATS or "")
      .. " \\) -prune"
      .. " -o -type d -printf '%y %m %p\\n' -o -printf '%y %m %s %T@ %p\\n'"
      .. " | sort; find . \\( -path ./home/proj/work -o -path "
      .. M.STATE
      .. (M.WARM and " -o -path " .. M.CHATS or "")
      .. " \\) -prune"
      .. " -o -type f -print0 | sort -z | xargs -0 -r md5sum"
  )
end

--- The lines only one of two snapshots has, marked - and +.
---@param before string
---@param after string
---@return string
function M.diff(before, after)
  local seen, out = {}, {}
  for line in before:gmatch("[^\n]+") do
    seen[line] = true
  end
  for line in after:gmatch("[^\n]+") do
    if not seen[line] then
      out[#out + 1] = "+ " .. line
    end
    seen[line] = nil
  end
  for line in before:gmatch("[^\n]+") do
    if seen[line] then
      out[#out + 1] = "- " .. line
    end
  end
  return table.concat(out, "\n")
end

--- Runs `bash -c cmd` in the sandbox from the project folder, with the
--- secret environment on the host side, and asserts the host is unchanged.
---@param w table
---@param cmd string
---@param opts? { keep_host?: boolean, env?: table, timeout?: integer|string } timeout: timeout(1)'s arguments
---@return { stdout: string, stderr: string, code: integer, records: table[] }
function M.attack(w, cmd, opts)
  opts = opts or {}
  local before = M.snapshot(w)
  local records = require("flemma_sandbox.run.records")
  local check
  --- The wrapped command; its records file made, as Neovim's runner does.
  local function command()
    local argv, _, record = assert(sandbox.wrap_command({ "bash", "-c", cmd }, M.WARM and M.CHAT_BUF or nil))
    check = record and record.check_file
    if check then
      records.create(check)
    end
    local words = { "timeout" }
    for word in tostring(opts.timeout or ""):gmatch("%S+") do
      words[#words + 1] = word
    end
    for i = opts.timeout and #words or 0, 1, -1 do
      table.insert(argv, 1, words[i])
    end
    return argv
  end
  local env = {}
  for k, v in pairs(M.ENV) do
    env[k] = v
  end
  for k, v in pairs(opts.env or {}) do
    env[k] = v
  end
  local r = h.run(command(), env, w.proj)
  -- what the helper and the proxy reported (run/records.lua)
  r.records = check and records.take(check) or {}
  if records.lost_race(r.code, r.records) then
    -- a host socket vanished between policy and start; job.run retries this too
    local first = r.records
    r = h.run(command(), env, w.proj)
    r.records = records.after_retry(first, check and records.take(check))
  end
  if not opts.keep_host then
    local after = M.snapshot(w)
    if after ~= before then
      error("the host changed after: " .. cmd .. "\n" .. M.diff(before, after), 2)
    end
  end
  h.sh("rm -rf " .. h.shell_quote(w.work) .. " && mkdir " .. h.shell_quote(w.work))
  return r
end

--- Stops the chat's live sandboxes (the warm path's); nothing without it.
function M.stop_live()
  if M.WARM then
    require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
  end
end

--- Runs the attack helper script with arguments inside the sandbox.
---@return string the shell command
function M.script(...)
  local words = { "luajit", h.shell_quote(M.ATTACK) }
  for _, a in ipairs({ ... }) do
    words[#words + 1] = h.shell_quote(tostring(a))
  end
  return table.concat(words, " ")
end

--- Host processes whose command line contains `marker` ("" when none).
M.host_pids = h.host_pids

--- Polls (at most 5 s) until no host process matches `marker`; returns
--- what is left.
---@param marker string
---@return string
function M.wait_gone(marker)
  local left = M.host_pids(marker)
  for _ = 1, 50 do
    if left == "" then
      break
    end
    os.execute("sleep 0.1")
    left = M.host_pids(marker)
  end
  return left
end

---@param w table
function M.destroy(w)
  surroundings.use(nil)
  sandbox.setup()
  h.sh("chmod -R u+w " .. h.shell_quote(w.base) .. " 2>/dev/null; rm -rf " .. h.shell_quote(w.base))
  h.rmdir(w.tmp)
end

return M
