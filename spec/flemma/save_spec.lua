-- Under the real Flemma (FLEMMA_DIR), direct mode: a chat's first bash
-- call leaves `sleep 1000.MARKER` running in the chat's live sandbox, the
-- chat is written, and the second call of the same chat still sees it.
-- Written by the user (:write, Neovim's default 'backupcopy' globally) and
-- by Flemma itself (editing.auto_write: its `:write!` of the buffer after
-- each result). A chat buffer writes in place (nvim/autocmds.lua), so the
-- chat file's read-only bind in the sandbox stays. With 'backupcopy' "no"
-- forced for the buffer, the save renames a new file over the chat: the
-- sandbox lives on (nothing ran in it then) and the next call binds the new
-- file read-only before its command runs (csrc/exec/live_reprotect.h).
local n = require("support.nvim")
local flemma_chat = require("support.flemma_chat")

local uv = vim.uv or vim.loop
local execute, result_of = flemma_chat.execute, flemma_chat.result_of

describe("saving a chat under Flemma between two calls", function()
  local p
  flemma_chat.each_project("true", function(world)
    p = world
  end)

  local function setup(auto_write)
    require("flemma").setup({ lsp = { enabled = false }, editing = { auto_write = auto_write } })
    require("flemma.tools").get_all()
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

  --- The chat's first call leaves the process; the chat's buffer, the
  --- process's host pid, the marker and the chat file's inode when opened.
  local function first_call(chat)
    local marker = n.marker()
    local leave = "cd "
      .. p.proj
      .. " && sleep 1000."
      .. marker
      .. ' > /dev/null 2>&1 & for i in $(seq 200); do [ "$(cat /proc/$!/comm)" = sleep ] && break; sleep 0.01; done;'
      .. " echo started"
    local ino
    local text, bufnr = execute(chat, "bash", { label = "t", command = leave }, nil, function()
      ino = uv.fs_stat(chat).ino
    end)
    assert.matches("started", result_of(text))
    local pids = {}
    vim.wait(3000, function()
      pids = sleeping(marker)
      return #pids == 1
    end, 10)
    assert.are.equal(1, #pids, "the call left it")
    return bufnr, pids[1], marker, ino
  end

  --- A tool use of command in the same chat, run with :Flemma
  --- tool:execute; its result's text.
  local function call(bufnr, id, command)
    local lines = flemma_chat.lines("bash", id, { label = "t", command = command })
    table.insert(lines, 1, "")
    vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, lines)
    vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(bufnr) - 3, 0 })
    vim.cmd("Flemma tool:execute")
    local result
    assert(
      vim.wait(30000, function()
        local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
        result = text:match("%*%*Tool Result:%*%* `" .. id .. "`[^\n]*\n(.-```.-```)")
        return result ~= nil and not require("flemma.tools.executor").get_pending(bufnr)[1]
      end, 20),
      "no result of the call " .. id
    )
    return result
  end

  --- A second tool use in the same chat that looks for the process.
  local function second_call(bufnr, marker)
    -- "1000[.]": the pattern must not match the shell that runs pgrep
    local look = "pgrep -f 'sleep 1000[.]" .. marker .. "' >/dev/null && echo alive || echo gone"
    return call(bufnr, "toolu_2_" .. marker, look)
  end

  it("written by the user with :write, keeps what the first call left for the second", function()
    setup(false)
    assert.are.equal("auto", vim.api.nvim_get_option("backupcopy"), "Neovim's default, globally")
    local chat = p.proj .. "/first.chat"
    local bufnr, pid, marker, ino = first_call(chat)
    assert.is_true(vim.bo[bufnr].modified, "the result is not saved yet")
    vim.cmd("silent write")
    assert.is_false(vim.bo[bufnr].modified)
    n.pause(500) -- a stop would come at once (inotify)
    assert.is_true(n.alive(pid), "the save did not stop the sandbox")
    assert.matches("alive", second_call(bufnr, marker))
    assert.is_true(n.alive(pid))
    assert.are.equal(ino, uv.fs_stat(chat).ino, "written in place")
  end)

  it("written by Flemma (editing.auto_write), keeps what the first call left for the second", function()
    setup(true)
    local chat = p.proj .. "/auto.chat"
    local bufnr, pid, marker, ino = first_call(chat)
    assert.is_true(
      vim.wait(5000, function()
        return not vim.bo[bufnr].modified
      end, 20),
      "Flemma wrote the chat after the result"
    )
    assert.matches("started", io.open(chat):read("*a"), "the result is on disk")
    n.pause(500)
    assert.is_true(n.alive(pid), "Flemma's write did not stop the sandbox")
    assert.matches("alive", second_call(bufnr, marker))
    assert.is_true(n.alive(pid))
    assert.are.equal(ino, uv.fs_stat(chat).ino, "written in place")
  end)

  it(
    "with 'backupcopy' no forced for the chat, :write replaces it: the sandbox lives on, the new file read-only",
    function()
      setup(false)
      local chat = p.proj .. "/control.chat"
      local bufnr, pid, marker, ino = first_call(chat)
      vim.bo[bufnr].backupcopy = "no"
      vim.cmd("silent write")
      assert.are_not.equal(ino, uv.fs_stat(chat).ino, "a new file renamed over the chat")
      n.pause(500) -- the keeper's watch sees the rename at once (inotify)
      assert.is_true(n.alive(pid), "nothing ran in the sandbox then: it lives on")
      local out = call(bufnr, "toolu_w_" .. marker, "{ echo planted >> " .. chat .. "; } 2>/dev/null || echo refused")
      assert.matches("refused", out, "bound read-only again before the call ran")
      assert.is_nil(io.open(chat):read("*a"):find("planted", 1, true))
      assert.matches("alive", second_call(bufnr, marker))
      assert.is_true(n.alive(pid))
    end
  )
end)
