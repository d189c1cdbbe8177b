--- A chat's live sandbox: one sandbox per chat that lives between its
--- tool calls, so what a call leaves running (a server, a REPL) is there
--- for the next one: held (stopped) between calls in direct mode, going
--- on in clone mode. The helper does the work (csrc/exec/live_attach.h):
--- a call's argv is the fresh run's with "--live DIR" in front, and the
--- helper joins the chat's running sandbox when its key (policy and plan)
--- is the same, or starts it again when not, saying which setting changed
--- (M.fields). The environment is no part of the key: it goes with each
--- call (M.call_env). Here: the chat's folder in
--- our state folder, the cap on running sandboxes (sandboxes.max_running),
--- and stopping one (reset, delete, the cap).
local core = require("flemma_sandbox.core")
local process = require("flemma_sandbox.base.process")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")

local M = {}

--- The sandboxes this Neovim used: live folder -> { last = os.time(), name, chat }.
---@type table<string, { last: integer, name: string, chat: string }>
M.used = {}

--- Whose end stops the sandboxes started here: this process (Neovim), or
--- with 0 none (the command line's: they end after their idle time).
---@type integer|nil
M.owner_pid = nil

--- Chats whose prestart (nvim/prestart.lua) runs its `true` now, by
--- buffer: what their calls wait to do until it ended (M.after_prestart).
---@type table<integer, fun()[]>
local prestarting = {}

--- How long a call waits at most for its chat's prestart (ms).
M.PRESTART_WAIT_MS = 15000

--- The prestart of bufnr's chat runs from now (nvim/prestart.lua).
---@param bufnr integer
function M.prestart_began(bufnr)
  prestarting[bufnr] = prestarting[bufnr] or {}
end

--- The prestart of bufnr's chat ended: what waited for it goes on.
---@param bufnr integer
function M.prestart_ended(bufnr)
  local waiting = prestarting[bufnr]
  prestarting[bufnr] = nil
  for _, go_on in ipairs(waiting or {}) do
    go_on()
  end
end

--- Every prestart ended (specs, a reset): what waited goes on.
function M.prestarts_ended()
  for bufnr in pairs(prestarting) do
    M.prestart_ended(bufnr)
  end
end

--- Runs go_on once the prestart of bufnr's chat is not running (at once
--- when none runs): a call that overlapped the prestart's own run would
--- share its check after the run, and what the call left at a protected
--- name would be moved in the prestart's name, the call's result saying
--- nothing. Never longer than M.PRESTART_WAIT_MS.
---@param bufnr integer
---@param go_on fun()
function M.after_prestart(bufnr, go_on)
  local waiting = prestarting[bufnr]
  if not waiting then
    return go_on()
  end
  require("flemma_sandbox.backends.background").queue_once(waiting, go_on, M.PRESTART_WAIT_MS)
end

--- The sandbox the cap stopped last: { name, at }, for the status.
---@type { name: string, at: integer }|nil
M.last_capped = nil

--- The folder of a chat's live sandbox, in our state folder (never
--- visible in a sandbox): short, since its socket's path must fit.
---@param chat flemma_sandbox.ChatDir
---@return string|nil dir, string|nil err
function M.dir_for(chat)
  local base, err = surroundings.state_dir("live")
  if not base then
    return nil, err
  end
  return base .. "/" .. surroundings.sha256(chat.dir):sub(1, 16)
end

--- Whether the policy's chat gets a live sandbox.
---@param policy flemma_sandbox.ResolvedPolicy
---@return boolean
function M.wanted(policy)
  return policy.chat ~= nil and (policy.sandboxes or {}).live == true
end

---@param helper string
---@param dir string
---@param on_exit? fun() called when done; nil: wait for it
local function run_stop(helper, dir, on_exit)
  if on_exit then
    local opts = { stdout = false, stderr = false }
    if process.spawn({ helper, "--live-stop", dir }, opts, function()
      vim.schedule(on_exit)
    end) then
      return
    end
  end
  util.run_quietly({ helper, "--live-stop", dir })
  if on_exit then
    on_exit()
  end
end

--- Stops the sandbox kept in dir (its files stay): waits for it, or in
--- the background when on_exit is given.
---@param helper string
---@param dir string
---@param on_exit? fun()
function M.stop(helper, dir, on_exit)
  M.used[dir] = nil
  run_stop(helper, dir, on_exit)
end

--- Stops a chat's sandbox in the background when it has one (nothing of
--- it may write meanwhile), then done().
---@param chat flemma_sandbox.ChatDir|nil
---@param done fun()
function M.stop_chat(chat, done)
  local helper = chat and require("flemma_sandbox.backends.helper").helper()
  local dir = helper and M.dir_for(chat)
  if dir and core.file_type(dir) == "directory" then
    return M.stop(helper, dir, done)
  end
  done()
end

--- Stops every sandbox this Neovim used, and waits for them.
---@param helper string
function M.stop_all(helper)
  for dir in pairs(M.used) do
    run_stop(helper, dir)
  end
  M.used = {}
end

--- "running", with its processes (besides the sandbox's own) and how
--- many of them are held (stopped between calls), or "stopped".
---@param helper string
---@param dir string
---@return "running"|"stopped" state, integer processes, integer held
function M.info(helper, dir)
  if not core.exists(dir) then
    return "stopped", 0, 0
  end
  local text = process.run({ helper, "--live-info", dir })
  local count, held = text:match("^running %d+ (%d+) (%d+)")
  if count then
    return "running", tonumber(count), tonumber(held)
  end
  return "stopped", 0, 0
end

--- Whether a call of the sandbox kept in dir would stop no other to stay
--- within max_running (of those this Neovim used within their idle time):
--- a prestart (nvim/prestart.lua) never stops a busier one to start.
---@param dir string
---@param sandboxes flemma_sandbox.SandboxesConfig
---@return boolean
function M.room(dir, sandboxes)
  local now, alive = os.time(), 0
  for other, entry in pairs(M.used) do
    if other ~= dir and now - entry.last <= sandboxes.idle_ttl_s then
      alive = alive + 1
    end
  end
  return M.used[dir] ~= nil or alive + 1 <= sandboxes.max_running
end

--- Notes a call of the chat whose sandbox is kept in dir; past
--- max_running, the sandbox used longest ago (of those this Neovim used
--- within their idle time) is stopped in the background.
---@param helper string
---@param dir string
---@param chat flemma_sandbox.ChatDir
---@param sandboxes flemma_sandbox.SandboxesConfig
---@return string|nil name the chat whose sandbox was stopped
function M.touch(helper, dir, chat, sandboxes)
  local now = os.time()
  local alive, oldest = 0, nil
  for other, entry in pairs(M.used) do
    if now - entry.last > sandboxes.idle_ttl_s then
      M.used[other] = nil -- stopped by its own idle time
    elseif other ~= dir then
      alive = alive + 1
      if not oldest or entry.last < M.used[oldest].last then
        oldest = other
      end
    end
  end
  M.used[dir] = { last = now, name = chat.name, chat = chat.chat }
  if alive + 1 > sandboxes.max_running and oldest then
    local name = M.used[oldest].name
    M.stop(helper, oldest, function() end)
    M.last_capped = { name = name, at = now }
    return name
  end
end

--- Whether what a call left may go on between calls: only in clone mode
--- (the sandbox works on copies) and only when its view shows nothing of
--- the user's own folders (backends/workspace_shown.lua: ignored folders
--- such as node_modules/ or an ignored secrets/ are the user's, and a
--- secret saved there while the chat idles must not be read). Else it is
--- held (csrc/exec/live_hold.h).
---@param policy flemma_sandbox.ResolvedPolicy
---@param sandboxes? flemma_sandbox.SandboxesConfig
---@return boolean
function M.keeps_running(policy, sandboxes)
  local workspace = require("flemma_sandbox.policy.clone_plan")
  local spaces = policy.workspaces or workspace.of(policy, sandboxes or policy.sandboxes)
  if #spaces == 0 then
    return false
  end
  for _, space in ipairs(spaces) do
    if #workspace.ignored(space) > 0 then
      return false
    end
  end
  return true
end

--- Appends a counted list to out: "NAME N WORD...", as the attach reads
--- it (attach_main.c); returns out.
---@param out string[]
---@param name string
---@param words string[]
---@return string[]
local function counted(out, name, words)
  out[#out + 1] = name
  out[#out + 1] = string.format("%d", #words)
  for _, word in ipairs(words) do
    out[#out + 1] = word
  end
  return out
end

--- Where the keeper finds its listening socket, which the attach puts
--- there (csrc/exec/live_attach.h EXEC_LIVE_KEEPER_FD): its supervisor
--- serves it, bwrap passing it on at the same number.
M.KEEPER_FD = 3

--- The helper's options in front of a live call's argv: the folder, the
--- owner, and the words after the inner helper's of the supervisor a
--- keeper the call starts runs ("--supervisor N ...", made here once and
--- used by the attach as they are). Between calls what a call left is
--- held (stopped until the next call) unless keep_running (clone mode:
--- the sandbox sees copies, not the user's tree).
---@param dir string
---@param sandboxes flemma_sandbox.SandboxesConfig
---@param keep_running? boolean
---@return string[]
function M.options(dir, sandboxes, keep_running)
  local supervisor = { "--supervise", string.format("%d", M.KEEPER_FD) }
  if sandboxes.idle_ttl_s > 0 then
    supervisor[#supervisor + 1] = "--idle-ttl"
    supervisor[#supervisor + 1] = string.format("%d", sandboxes.idle_ttl_s)
  end
  if keep_running then
    supervisor[#supervisor + 1] = "--keep-running"
  end
  local out = { "--live", dir, "--owner", string.format("%d", M.owner_pid or core.getpid()) }
  return counted(out, "--supervisor", supervisor)
end

--- The host program's options as a chat's keeper, "--keeper N ...",
--- made here once from the run's own (bwrap.lua's front_options: the
--- keeper's check file and args file are its copies in the live folder,
--- where it runs) and used by the attach as they are: its command line
--- is the host program, these, --owner's, bwrap's words and the
--- supervisor's (M.options); they are part of the sandbox's key.
---@param host_options string[] the keeper's host options (--clearenv, limits, the proxy's)
---@return string[]
function M.keeper(host_options)
  local words = { "--live-keeper", string.format("%d", M.KEEPER_FD), "--check-file", "keeper.check" }
  for _, word in ipairs(host_options) do
    words[#words + 1] = word
  end
  return counted({}, "--keeper", words)
end

--- The policy's settings by name, as "--policy-fields N NAME VALUE ...":
--- part of the sandbox's key, and what a restart names with its old and
--- new value (csrc/exec/live_why.c); a list's entries one pair each,
--- named "NAME[]", so a restart names the entries added and removed. The
--- environment's values are no setting: they go with each call (M.call_env).
---@param policy flemma_sandbox.ResolvedPolicy
---@return string[]
function M.fields(policy)
  local mode = policy.network_mode or (policy.network and "allowlist" or "off")
  local out = { "--policy-fields", "0", "policy.network", mode == "off" and "false" or mode }
  -- plain Lua: the wrap runs outside Neovim too (the helper's own specs)
  local function add(name, value)
    out[#out + 1] = name
    out[#out + 1] = tostring(value)
  end
  for _, name in ipairs({ "seccomp", "allow_privileged" }) do
    add("policy." .. name, policy[name])
  end
  local limits = {}
  for name in pairs(policy.limits or {}) do
    limits[#limits + 1] = name
  end
  table.sort(limits)
  for _, name in ipairs(limits) do
    add("policy.limits." .. name, policy.limits[name])
  end
  local sandboxes = policy.sandboxes or {}
  for _, name in ipairs({ "workspace", "idle_ttl_s" }) do
    if sandboxes[name] ~= nil then
      add("sandboxes." .. name, sandboxes[name])
    end
  end
  local lists = { "allow_domains", "deny_domains", "rw_paths", "deny_paths", "ro_paths", "allow_sockets" }
  lists[#lists + 1] = "env_allow"
  for _, name in ipairs(lists) do
    for _, entry in ipairs(policy[name] or {}) do
      add("policy." .. name .. "[]", entry)
    end
  end
  out[2] = string.format("%d", #out - 2)
  return out
end

--- The helper's live options for a chat's sandbox: its folder, the
--- command line of a keeper the call may start (M.options, M.keeper),
--- the policy's fields (its key) and the call's environment. (The step
--- before the wrap noted the sandbox's use: backends/bwrap_prepare.lua.)
---@param policy flemma_sandbox.CallPlan
---@param dir string the live folder
---@param keeper string[] the keeper's host options and its proxy's (bwrap.lua)
---@return string[] words
function M.words(policy, dir, keeper)
  local sandboxes = policy.sandboxes
  local words = {}
  local parts = { M.options(dir, sandboxes, M.keeps_running(policy, sandboxes)), M.keeper(keeper), M.fields(policy) }
  parts[#parts + 1] = policy.env and M.call_env(policy.env) or {}
  for _, part in ipairs(parts) do
    for _, word in ipairs(part) do
      words[#words + 1] = word
    end
  end
  return words
end

--- The environment a call's command gets (the terminal's or Neovim's
--- PATH, TERM, LANG, ...) as "--call-env N NAME VALUE ...", sorted: it
--- goes with the call to the sandbox's supervisor, for that command
--- alone, so two terminals with different environments join one sandbox.
---@param env table<string, string>
---@return string[]
function M.call_env(env)
  local names = {}
  for name in pairs(env) do
    names[#names + 1] = name
  end
  table.sort(names)
  local out = { "--call-env", string.format("%d", 2 * #names) }
  for _, name in ipairs(names) do
    out[#out + 1] = name
    out[#out + 1] = env[name]
  end
  return out
end

return M
