--- A save of the chat between two calls of its live sandbox: the standalone
--- runner runs a call that leaves `sleep 1000.MARKER`, the user writes
--- the chat with :write (Neovim's default 'backupcopy' is "auto": a new
--- file renamed over the old one), the next call still sees the process.
--- A chat buffer is written in place ('backupcopy' "yes", buffer-local,
--- nvim/autocmds.lua), so the chat file's read-only bind in the sandbox
--- stays. With 'backupcopy' "no" forced for the buffer the save replaces
--- the file: the sandbox lives on (nothing ran in it then) and the next
--- call binds the new file read-only before its command runs
--- (live_reprotect.h); so for a protected .mcp.json and a hidden .envrc
--- saved by rename while a loop the first call left is held. Control:
--- with neither protected, the same loop writes and reads them.
local h = require("support.helpers")
local n = require("support.nvim")
local approval = require("flemma_sandbox.questions")
local chat = require("flemma_sandbox.chat")

local uv = vim.uv or vim.loop

--- An assistant message holding one bash call.
local function use_lines(id, command)
  return {
    "@Assistant:",
    "On it.",
    "",
    "**Tool Use:** `bash` (`" .. id .. "`)",
    "",
    "```json",
    vim.json.encode({ command = command }),
    "```",
    "",
  }
end

--- The body of the result block for id.
local function result_of(bufnr, id)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  for i, line in ipairs(lines) do
    if line:find("**Tool Result:** `" .. id .. "`", 1, true) then
      local fence = lines[i + 2]
      local body = {}
      for j = i + 3, #lines do
        if lines[j] == fence then
          break
        end
        body[#body + 1] = lines[j]
      end
      return table.concat(body, "\n")
    end
  end
end

--- Runs the chat's calls that have no result and waits for them.
local function run_calls(bufnr)
  chat.execute_all(bufnr, 1)
  assert.is_true(vim.wait(20000, function()
    return #chat.running(bufnr) == 0
  end, 20))
end

--- Host pids of `sleep 1000.MARKER` itself.
local function sleeping(marker)
  return vim.tbl_filter(function(pid)
    local f = io.open("/proc/" .. pid .. "/comm", "r")
    local comm = f and f:read("*l")
    if f then
      f:close()
    end
    return comm == "sleep"
  end, n.pids_with("sleep 1000." .. marker))
end

describe("saving a chat between calls of its live sandbox", function()
  local proj
  n.live_world(function(w)
    proj = w.proj
  end)
  before_each(function()
    approval.reset()
    approval.prompt = function(question, cb)
      cb(question.answer or "once")
    end
  end)
  after_each(function()
    vim.cmd("silent! %bwipeout!")
    approval.reset()
  end)

  --- A chat whose first call leaves `sleep 1000.MARKER` running; runs it.
  ---@return integer bufnr, string path, integer pid, string marker
  local function chat_that_left_a_process()
    local marker = n.marker()
    local leave = "sleep 1000."
      .. marker
      .. ' > /dev/null 2>&1 & for i in $(seq 200); do [ "$(cat /proc/$!/comm)" = sleep ] && break; sleep 0.01; done;'
      .. " echo started"
    local path = proj .. "/a.chat"
    local lines = { "@You:", "start it", "" }
    vim.list_extend(lines, use_lines("toolu_1", leave))
    local buf = n.open_chat(path, lines)
    run_calls(buf)
    assert.are.equal("started", result_of(buf, "toolu_1"))
    local pids = {}
    vim.wait(3000, function()
      pids = sleeping(marker)
      return #pids == 1
    end, 10)
    assert.are.equal(1, #pids, "the call left it")
    return buf, path, pids[1], marker
  end

  --- Writes the buffer with :write (its result is not saved yet) and
  --- returns whether the file kept its inode.
  local function save(buf, path)
    local before = uv.fs_stat(path).ino
    assert.is_true(vim.bo[buf].modified, "the result made the buffer modified")
    vim.api.nvim_buf_call(buf, function()
      vim.cmd("silent write")
    end)
    assert.is_false(vim.bo[buf].modified)
    return uv.fs_stat(path).ino == before
  end

  --- Adds a second call that looks for the process, runs it; its output.
  local function look_again(buf, marker)
    local lines = { "@You:", "is it there?", "" }
    -- "1000[.]": the pattern must not match the shell that runs pgrep
    vim.list_extend(
      lines,
      use_lines("toolu_2", "pgrep -f 'sleep 1000[.]" .. marker .. "' >/dev/null && echo alive || echo gone")
    )
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines)
    run_calls(buf)
    return result_of(buf, "toolu_2")
  end

  it("with the default 'backupcopy' a :write keeps the chat file and what the call left", function()
    assert.are.equal("auto", vim.api.nvim_get_option("backupcopy"), "Neovim's default, globally")
    local buf, path, pid, marker = chat_that_left_a_process()
    local in_place = save(buf, path)
    assert.matches("toolu_1", h.read(path), "the save wrote the result")
    n.pause(500) -- a stop would come at once (inotify)
    assert.is_true(n.alive(pid), "the save did not stop the sandbox")
    assert.are.equal("alive", look_again(buf, marker))
    assert.is_true(n.alive(pid))
    assert.is_true(in_place, "written in place: the same file")
    assert.are.equal("yes", vim.api.nvim_buf_get_option(buf, "backupcopy"), "a chat buffer writes in place")
  end)

  --- Adds a call running command to the chat, runs it; its output.
  local function call(buf, id, command)
    local lines = { "@You:", "go on", "" }
    vim.list_extend(lines, use_lines(id, command))
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines)
    run_calls(buf)
    return result_of(buf, id)
  end

  --- Writes content to path by a new file renamed over it, as an editor
  --- saves; the file is another one after (its inode).
  local function save_by_rename(path, content)
    local before = uv.fs_stat(path).ino
    h.write(path .. ".new", content)
    assert.is_true(os.rename(path .. ".new", path))
    assert.are_not.equal(before, uv.fs_stat(path).ino)
  end

  it(
    "with 'backupcopy' no the save replaces the chat file: the sandbox lives on, the new one read-only to it",
    function()
      local buf, path, pid, marker = chat_that_left_a_process()
      vim.api.nvim_buf_set_option(buf, "backupcopy", "no")
      assert.is_false(save(buf, path), "a new file renamed over the chat")
      n.pause(500) -- the keeper's watch sees the rename at once (inotify)
      assert.is_true(n.alive(pid), "the sandbox lives on: nothing ran in it when the chat was replaced")
      local out = call(buf, "toolu_9", "{ echo planted >> " .. path .. "; } 2>/dev/null || echo refused")
      assert.are.equal("refused", out, "protected again before the call ran")
      assert.is_nil(h.read(path):find("planted", 1, true), "the chat file is as the save left it")
      assert.are.equal("alive", look_again(buf, marker))
      assert.is_true(n.alive(pid))
    end
  )

  --- A chat whose first call leaves a loop that, every 50 ms, appends "y"
  --- to .mcp.json and copies .envrc to seen (a file in the project);
  --- the host then saves both by rename; the second call lets the loop run
  --- for a second. What the host has after, and the loop's pid then.
  ---@return string mcp, string|nil seen, boolean alive
  local function loop_across_saves(seen)
    local marker = n.marker()
    h.write(proj .. "/.mcp.json", "orig")
    h.write(proj .. "/.envrc", "secret1")
    -- seen is renamed into place: held between calls, the loop may stop anywhere
    local loop = "(while :; do printf y >> .mcp.json; cat .envrc > "
      .. seen
      .. ".new; mv -f "
      .. seen
      .. ".new "
      .. seen
      .. "; sleep 0.05; done) > /dev/null 2>&1 & echo started "
      .. marker
    local lines = { "@You:", "start it", "" }
    vim.list_extend(lines, use_lines("toolu_1", loop))
    local buf = n.open_chat(proj .. "/b.chat", lines)
    run_calls(buf)
    assert.are.equal("started " .. marker, result_of(buf, "toolu_1"))
    local pids = n.pids_with(marker)
    assert.is_true(#pids >= 1, "the loop runs")
    save_by_rename(proj .. "/.mcp.json", "new")
    save_by_rename(proj .. "/.envrc", "secret2")
    n.pause(500)
    assert.are.equal("ok", call(buf, "toolu_2", "sleep 1; echo ok"))
    return h.read(proj .. "/.mcp.json"), h.read(seen), #n.survivors(pids) > 0
  end

  it("a protected .mcp.json and a hidden .envrc saved by rename while a process is held stay so to it", function()
    local mcp, seen, alive = loop_across_saves(proj .. "/seen.txt")
    assert.are.equal("new", mcp, "the new .mcp.json is read-only to the loop")
    assert.is_nil((seen or ""):find("secret2", 1, true), "the new .envrc is hidden from the loop")
    assert.is_true(alive, "the sandbox lived on")
  end)

  it("a protected name replaced by a folder while held starts the sandbox again, saying why", function()
    h.write(proj .. "/.mcp.json", "orig")
    local buf, _, pid = chat_that_left_a_process()
    -- a folder cannot be renamed over a file: the file goes first
    h.sh("mkdir " .. h.shell_quote(proj .. "/.mcp.json.new") .. " && rm " .. h.shell_quote(proj .. "/.mcp.json"))
    assert.is_true(os.rename(proj .. "/.mcp.json.new", proj .. "/.mcp.json"))
    n.pause(500)
    local out = call(buf, "toolu_9", "{ echo planted > .mcp.json/x; } 2>/dev/null || echo refused")
    assert.matches("^refused", out, "the new sandbox protects it from the start")
    -- the call's plan binds the new protected folder read-only (a mask the
    -- sandbox lacks), or the sandbox finds no plain file to bind again
    assert.matches("%.mcp%.json", out:match("started again: ([^\n]*)") or "", "the restart names the file: " .. out)
    assert.are.same({}, n.survivors({ pid }), "what was held went with the old sandbox")
    assert.is_nil(h.read(proj .. "/.mcp.json/x"))
  end)

  it("a protected file replaced while a call runs stops the sandbox: the result and one notice say which", function()
    h.write(proj .. "/.mcp.json", "orig")
    local buf, _, pid = chat_that_left_a_process()
    local lines = { "@You:", "go on", "" }
    vim.list_extend(lines, use_lines("toolu_8", "sleep 5; echo finished"))
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, lines)
    local notices, restore = n.capture_notify()
    chat.execute_all(buf, 1)
    assert.is_true(vim.wait(10000, function()
      return #chat.running(buf) > 0
    end, 20))
    n.pause(1000) -- the call's command runs
    save_by_rename(proj .. "/.mcp.json", "new")
    assert.is_true(vim.wait(20000, function()
      return #chat.running(buf) == 0
    end, 20))
    n.flush_notices()
    restore()
    local out = result_of(buf, "toolu_8")
    assert.is_nil(out:find("finished", 1, true), out)
    assert.matches("%[sandbox%] stopped: [^\n]*%.mcp%.json", out)
    local said = {}
    for _, x in ipairs(notices) do
      said[#said + 1] = x.msg
    end
    local text = table.concat(said, "\n")
    -- one row: a long path is cut at the screen's width
    local _, count = text:gsub("stopped: ", "")
    assert.are.equal(1, count, text)
    assert.truthy(text:find("stopped: " .. proj:sub(1, 12), 1, true), text)
    assert.are.same({}, n.survivors({ pid }), "what ran in the sandbox went with it")
    assert.are.equal("new", h.read(proj .. "/.mcp.json"))
  end)

  it("control: with neither protected, the same loop writes the new .mcp.json and reads the new .envrc", function()
    n.live_setup({
      policy = {
        rw_paths = { "$CWD", "/tmp" },
        network = false,
        deny_write = { "!.mcp.json", "!.envrc" },
        secret_files = { "!.envrc" },
      },
    })
    local mcp, seen = loop_across_saves(proj .. "/seen.txt")
    assert.matches("^newy", mcp, "the loop wrote it")
    assert.are.equal("secret2", seen, "the loop read it")
  end)
end)
