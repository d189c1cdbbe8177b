--- A chat's sandbox started again says why: the next result's note and
--- one notice for the user name the setting with its old and new value
--- (a frontmatter change here, marked as the frontmatter's); the same
--- policy joins (control); a change of setup() is not marked (control).
local h = require("support.helpers")
local n = require("support.nvim")

describe("a chat's sandbox started again", function()
  local dir
  n.live_world(function(w)
    dir = w.dir
  end)

  local function bash(buf, command)
    local result
    require("flemma_sandbox.chat").run_tool(buf, "bash", { command = command }, {}, function(r)
      result = r
    end)
    assert.truthy(vim.wait(20000, function()
      return result ~= nil
    end, 10))
    return result
  end

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

  it("names the frontmatter's setting with its old and new value, in the note and a notice", function()
    n.live_setup({ policy = { rw_paths = { "$CWD", "/tmp" }, network = "host" }, approval = { bash = "allow" } })
    local buf = n.open_chat(dir .. "/proj/net.chat", { "@You: hi" })
    local marker = n.marker()
    local r = bash(
      buf,
      "sleep 1000."
        .. marker
        .. ' > /dev/null 2>&1 & for i in $(seq 200); do [ "$(cat /proc/$!/comm)" = sleep ] && break; sleep 0.01; done;'
        .. " echo started"
    )
    assert.are.equal("started", r.stdout, r.stderr)
    local pids = {}
    vim.wait(3000, function()
      pids = sleeping(marker)
      return #pids == 1
    end, 10)
    assert.are.equal(1, #pids, "the call left it running")
    -- control: the same policy joins, without a note
    r = bash(buf, "true")
    assert.is_nil(r.notes)
    assert.is_true(n.alive(pids[1]))
    -- the frontmatter turns the network off (it tightens: applied at once)
    vim.api.nvim_buf_set_lines(buf, 0, 0, false, {
      "```lua",
      "flemma.opt.sandbox = { policy = { network = false } }",
      "```",
    })
    vim.cmd("doautocmd TextChanged")
    local notices, restore = n.capture_notify()
    r = bash(buf, "true")
    n.flush_notices()
    restore()
    local note = "[sandbox] policy.network: host -> false (set by this chat's frontmatter): "
      .. "this chat's sandbox was started again, what ran in it was stopped"
    assert.truthy(vim.tbl_contains(r.notes or {}, note), vim.inspect(r.notes))
    assert.are.same({}, n.survivors({ pids[1] }))
    local said = {}
    for _, x in ipairs(notices) do
      said[#said + 1] = x.msg
    end
    local text = table.concat(said, "\n")
    assert.truthy(text:find("policy.network: host -> false", 1, true), text)
    local _, count = text:gsub("policy%.network: host %-> false", "")
    assert.are.equal(1, count, text)
    -- a list's entry: the one added is named, not the whole list
    h.write(dir .. "/proj/secret.txt", "s3cret\n")
    vim.api.nvim_buf_set_lines(buf, 1, 2, false, {
      "flemma.opt.sandbox = { policy = { network = false, deny_read = { 'secret.txt' } } }",
    })
    vim.cmd("doautocmd TextChanged")
    r = bash(buf, "cat secret.txt")
    local real = vim.loop.fs_realpath(dir .. "/proj/secret.txt")
    note = "[sandbox] policy.deny_paths: added "
      .. real
      .. ": this chat's sandbox was started again, "
      .. "what ran in it was stopped"
    assert.truthy(vim.tbl_contains(r.notes or {}, note), vim.inspect(r.notes))
    assert.is_nil(r.stdout:find("s3cret", 1, true), r.stdout)
    -- control: a setting of setup(), not of the frontmatter, is not marked
    n.live_setup({
      policy = { rw_paths = { "$CWD", "/tmp" }, network = "host", limits = { open_files = 333 } },
      approval = { bash = "allow" },
    })
    r = bash(buf, "true")
    local restart = table.concat(r.notes or {}, "\n")
    assert.matches(
      "%[sandbox%] policy%.limits%.open_files: %S+ %-> 333: this chat's sandbox was started again",
      restart
    )
    assert.is_nil(restart:find("frontmatter", 1, true), restart)
  end)
end)
