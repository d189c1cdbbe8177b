--- The questions of policy.network = "ask". A run's proxy
--- (csrc/proxy/proxy_conn.c) asks about a host name that no allow_domains or
--- deny_domains entry names: it connects to a unix socket this module
--- serves on Neovim's event loop, writes "ask HOST PORT" and waits for
--- "once", "always" or "deny". The editor never waits; the command does.
---
--- One question per host at a time (parallel connections share it);
--- "always" is kept for the Neovim session, "once" and "deny" for the one
--- command (the proxy keeps them for its run). The question goes through
--- the approval window (questions/init.lua), standalone and under Flemma:
--- it never takes focus, so keys typed elsewhere cannot answer it.
local core = require("flemma_sandbox.core")
local surroundings = require("flemma_sandbox.base.surroundings")
local util = require("flemma_sandbox.base.util")
local visible_text = require("flemma_sandbox.base.visible_text")

local M = {}

local uv = require("flemma_sandbox.base.process").uv()

---@type userdata|nil the listening pipe
local server
---@type string|nil
local server_path
---@type table<string, boolean> hosts answered "always" this session
local always = {}
---@type table<string, fun(answer: string)[]> callbacks of the question being asked, by host
local pending = {}
--- At most this many answers are kept for the status.
M.LIMIT = 10

local answered = util.recent_hosts(M.LIMIT)

--- The longest request line taken from a proxy.
local MAX_LINE = 320

--- What the status shows: the answers lately, the newest first.
---@return { host: string, answer: string }[]
function M.recent()
  return answered.newest_first()
end

--- Asks the user about one host; cb gets "once", "always" or "deny".
--- Specs replace this with a scripted user.
---@param name string
---@param port string
---@param cb fun(answer: "once"|"always"|"deny")
function M.prompt(name, port, cb)
  local warning
  name, warning = visible_text.host(name)
  -- not vim.ui.select: a modal prompt takes the next Enter typed anywhere
  require("flemma_sandbox.questions").ask({
    title = "Let the sandboxed command connect to " .. name .. "?",
    lines = {
      name .. " (port " .. port .. ") is not in policy.allow_domains.",
      "yes: for this command; always: until Neovim exits.",
      warning and ("Careful: " .. warning .. ".") or "",
    },
    can_remember = true,
    tool = "a connection to " .. name,
  }, function(answer)
    cb(answer)
  end)
end

--- Answers a question about name: at once when the session already said
--- "always", else after the user (one question per host at a time).
---@param name string
---@param port string
---@param cb fun(answer: string)
function M.question(name, port, cb)
  if always[name] then
    return cb("always")
  end
  if pending[name] then
    table.insert(pending[name], cb)
    return
  end
  pending[name] = { cb }
  M.prompt(name, port, function(answer)
    if answer ~= "once" and answer ~= "always" then
      answer = "deny"
    end
    if answer == "always" then
      always[name] = true
    end
    answered.put({ host = name, answer = answer })
    local waiting = pending[name] or {}
    pending[name] = nil
    for _, waiter in ipairs(waiting) do
      waiter(answer)
    end
  end)
end

--- Serves one proxy's connection: a line in, the answer out.
local function serve(client)
  local got = ""
  local asked, done = false, false
  local function finish(answer)
    if done then
      return
    end
    done = true
    if client:is_closing() then
      return
    end
    if not answer then
      return client:close()
    end
    client:write(answer .. "\n", function()
      if not client:is_closing() then
        client:close()
      end
    end)
  end
  client:read_start(function(err, data)
    if err or not data then
      -- the proxy gave up (its client left): nobody to answer
      done = true
      if not client:is_closing() then
        client:close()
      end
      return
    end
    if asked then
      return -- more after the line: the line is being answered
    end
    got = got .. data
    if not got:find("\n", 1, true) then
      if #got > MAX_LINE then
        finish(nil)
      end
      return
    end
    asked = true
    local name, port = got:match("^ask ([%w%.%-_]+) (%d+)\n$")
    if not name or #got > MAX_LINE then
      return finish(nil)
    end
    vim.schedule(function()
      M.question(name:lower(), port, finish)
    end)
  end)
end

--- The socket the proxies of "ask" runs put their questions to, served
--- from the first call on: nil outside Neovim's event loop or when no
--- state folder can hold it.
---@return string|nil path, string|nil err
function M.socket()
  if server then
    return server_path
  end
  local folder, err = surroundings.state_dir("ask")
  if not folder then
    return nil, err
  end
  local path = string.format("%s/%d.sock", folder, core.getpid())
  if #path >= 108 then
    return nil, "the question socket's path is too long for a unix socket: " .. path
  end
  -- sockets of Neovims that are gone (a crash skips VimLeavePre); one with
  -- our pid was left by an earlier Neovim
  local scan = uv.fs_scandir(folder)
  local name = scan and uv.fs_scandir_next(scan)
  while name do
    local pid = tonumber(name:match("^(%d+)%.sock$"))
    local stale = pid == core.getpid()
    if pid and not stale then
      local alive, kill_err = uv.kill(pid, 0)
      stale = not alive and tostring(kill_err):find("ESRCH", 1, true) ~= nil
    end
    if stale then
      os.remove(folder .. "/" .. name)
    end
    name = scan and uv.fs_scandir_next(scan)
  end
  local pipe = uv.new_pipe(false)
  local ok, berr = pipe:bind(path)
  if not ok then
    pipe:close()
    return nil, "cannot serve " .. path .. ": " .. tostring(berr)
  end
  pipe:listen(16, function(lerr)
    if lerr then
      return
    end
    local client = uv.new_pipe(false)
    if pipe:accept(client) then
      serve(client)
    else
      client:close()
    end
  end)
  server, server_path = pipe, path
  return path
end

--- The socket a run's proxy asks through for a policy in "ask" mode (a
--- call's plan keeps it: backends/call_plan.lua); without one, "ask"
--- refuses like "allowlist".
---@param resolved flemma_sandbox.ResolvedPolicy
---@return string|nil
function M.ask_socket(resolved)
  if resolved.network_mode == "ask" then
    return M.socket()
  end
  return nil
end

--- Stops serving and removes the socket (VimLeavePre; specs).
function M.stop()
  if server then
    server:close()
    os.remove(server_path)
  end
  server, server_path = nil, nil
end

--- For specs: forget the session's answers.
function M.reset()
  always, pending = {}, {}
  answered.clear()
end

return M
