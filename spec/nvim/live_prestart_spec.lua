--- A chat's sandbox started when the chat is opened (sandboxes.prestart,
--- nvim/prestart.lua): the first call joins it (the same keeper), with
--- sandboxes.prestart = false nothing starts before the first call, the
--- cap on running sandboxes is kept, and Neovim's exit ends it. A call
--- made while the prestart's own run runs waits for its end: sharing its
--- check after the run, what the call left at a protected name would be
--- moved in the prestart's name, the call's result saying nothing.
local h = require("support.helpers")
local n = require("support.nvim")
local sandbox = require("flemma_sandbox")
local live = require("flemma_sandbox.backends.live")
local client = require("flemma_sandbox.backends.helper")

local PLUGIN = vim.fn.getcwd() -- this plugin (the runner starts here)

describe("a chat's sandbox started when the chat is opened", function()
  local dir
  n.live_world(function(w)
    dir = w.dir
  end)

  -- the standalone path: with FLEMMA_DIR set (CI's sid) the bridge is
  -- attached, and a chat's prestart is Flemma's (spec/flemma/prestart_spec)
  local hooks = require("flemma_sandbox.base.hooks")
  local bridge
  before_each(function()
    bridge, hooks.bridge = hooks.bridge, nil
  end)
  after_each(function()
    hooks.bridge = bridge
  end)

  local function live_dir(bufnr)
    return live.dir_for(require("flemma_sandbox.policy.chat_dirs").for_buffer(bufnr))
  end

  --- The keeper's pid written in the live folder, or nil.
  local function keeper_pid(bufnr)
    local f = io.open(live_dir(bufnr) .. "/pid", "r")
    local text = f and f:read("*a") or ""
    if f then
      f:close()
    end
    local pid = tonumber(text:match("^(%d+)"))
    return pid and n.alive(pid) and pid or nil
  end

  local function open(name, setup)
    n.live_setup(setup)
    require("flemma_sandbox.nvim.autocmds").setup_common()
    local path = dir .. "/proj/" .. name .. ".chat"
    h.write(path, "@You:\nhi\n")
    vim.cmd("edit " .. vim.fn.fnameescape(path))
    local buf = vim.api.nvim_get_current_buf()
    vim.bo[buf].filetype = "chat"
    return buf
  end

  local function call(bufnr, cmd)
    return n.run_job({ "bash", "-c", cmd }, { bufnr = bufnr, wrap = sandbox.wrapper(bufnr, { bufnr = bufnr }) })
  end

  it("starts before the first call, and the first call joins it", function()
    local a = open("a")
    local keeper
    assert.is_true(
      vim.wait(20000, function()
        keeper = keeper_pid(a)
        return keeper ~= nil and require("flemma_sandbox.nvim.prestart").last[live_dir(a)] ~= nil
      end, 20),
      "a keeper runs before any call"
    )
    assert.are.equal("started", require("flemma_sandbox.nvim.prestart").last[live_dir(a)].state)
    assert.are.equal("running", (live.info(client.helper(), live_dir(a))))
    local r = call(a, "echo joined")
    assert.are.equal("joined\n", r.stdout, r.stderr)
    assert.are.equal(0, #h.records_of(r.records, "restarted"), r.stderr)
    assert.are.equal(keeper, keeper_pid(a), "the same sandbox: its keeper unchanged")
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(a), "\n")
    assert.matches("started when the chat was opened", status)
  end)

  it("control: with sandboxes.prestart = false nothing starts until the first call", function()
    local a = open("a", { sandboxes = { prestart = false } })
    n.pause(3000)
    assert.is_nil(keeper_pid(a), "no keeper before the call")
    assert.are.equal("stopped", (live.info(client.helper(), live_dir(a))))
    local r = call(a, "echo first")
    assert.are.equal("first\n", r.stdout, r.stderr)
    assert.truthy(keeper_pid(a), "the call started it")
  end)

  it("starts nothing while the chat's folders are reset: they are made again by no prestart", function()
    local a = open("a", { sandboxes = { prestart = false } })
    local r = call(a, "echo first > /tmp/note")
    assert.are.equal(0, r.exit_code, r.stderr)
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(a)
    local prestart = require("flemma_sandbox.nvim.prestart")
    live.stop(client.helper(), live_dir(a))
    assert.are.equal("directory", (require("flemma_sandbox.core").file_type(chat.dir .. "/tmp")))
    -- a prestart on its way (the chat entered) when the reset begins
    n.live_setup({ sandboxes = { prestart = true } })
    local notes, restore = n.capture_notify()
    prestart.maybe(a)
    require("flemma_sandbox.nvim.commands").actions.reset(a)
    assert.is_true(vim.wait(15000, function()
      n.flush_notices()
      return #notes > 0
    end, 20))
    restore()
    assert.matches("removed", notes[1].msg)
    -- what the prestart did is said once it is done
    assert.is_true(vim.wait(15000, function()
      return prestart.last[live_dir(a)] ~= nil and not prestart.busy()
    end, 20))
    local last = prestart.last[live_dir(a)]
    assert.are.same({ "skipped", "the chat's folders are being removed" }, { last.state, last.why })
    assert.is_nil((require("flemma_sandbox.core").file_type(chat.dir .. "/tmp")), "the reset's folder stays gone")
    assert.is_nil(keeper_pid(a), "no sandbox started on the folders being removed")
  end)

  it("never stops a busier sandbox to prestart (sandboxes.max_running)", function()
    local setup = { sandboxes = { max_running = 1, prestart = false } }
    local a = open("a", setup)
    local marker = n.marker()
    local r = call(a, "sleep 1000." .. marker .. " > /dev/null 2>&1 & echo started")
    assert.are.equal("started\n", r.stdout, r.stderr)
    local keeper = keeper_pid(a)
    assert.truthy(keeper)
    setup.sandboxes.prestart = true
    local b = open("b", setup)
    assert.is_true(vim.wait(20000, function()
      return require("flemma_sandbox.nvim.prestart").last[live_dir(b)] ~= nil
    end, 20))
    assert.are.equal("skipped", require("flemma_sandbox.nvim.prestart").last[live_dir(b)].state)
    assert.is_nil(keeper_pid(b), "b's sandbox did not start")
    assert.are.equal(keeper, keeper_pid(a), "a's runs on")
    assert.are.equal(1, #n.pids_with("sleep 1000." .. marker))
  end)

  it("a call made while the prestart runs waits for its end, and what it leaves is its own", function()
    local job, chat = require("flemma_sandbox.run.job"), require("flemma_sandbox.chat")
    local real = { run = job.run, began = live.prestart_began, ended = live.prestart_ended }
    local events = {}
    job.run = function(argv, opts)
      events[#events + 1] = argv[1] == "true" and "prestart runs" or "call runs"
      return real.run(argv, opts)
    end
    live.prestart_ended = function(bufnr)
      events[#events + 1] = "prestart ended"
      return real.ended(bufnr)
    end
    -- the call comes the moment the prestart begins
    live.prestart_began = function(bufnr)
      real.began(bufnr)
      chat.execute_all(bufnr, 1)
    end
    local approval = require("flemma_sandbox.questions")
    approval.reset()
    approval.prompt = function(question, cb)
      cb(question.answer or "once")
    end
    local ok, err = pcall(function()
      n.live_setup()
      require("flemma_sandbox.nvim.autocmds").setup_common()
      local path = dir .. "/proj/p.chat"
      local use = vim.json.encode({ command = "echo planted > .nvim.lua; echo done" })
      h.write(path, table.concat({ "@You:", "go", "", "@Assistant:", "ok", "" }, "\n"))
      h.write(path, h.read(path) .. "**Tool Use:** `bash` (`toolu_p1`)\n\n```json\n" .. use .. "\n```\n")
      vim.cmd("edit " .. vim.fn.fnameescape(path))
      local buf = vim.api.nvim_get_current_buf()
      vim.bo[buf].filetype = "chat"
      assert.is_true(
        vim.wait(30000, function()
          return vim.tbl_contains(events, "call runs") and #chat.running(buf) == 0
        end, 20),
        "the call ran: " .. table.concat(events, ", ")
      )
    end)
    job.run, live.prestart_began, live.prestart_ended = real.run, real.began, real.ended
    approval.reset()
    assert(ok, err)
    assert.are.same({ "prestart runs", "prestart ended", "call runs" }, events)
    assert.is_nil(h.read(dir .. "/proj/.nvim.lua"), "moved to the quarantine after the call")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    assert.matches("%.nvim%.lua", text:match("Tool Result.*") or "", "the call's result says so")
  end)

  it("leaves no process when Neovim exits", function()
    local marker = n.marker()
    local proj = dir .. "/proj/" .. marker
    h.sh("mkdir -p " .. h.shell_quote(proj))
    h.write(proj .. "/c.chat", "@You:\nhi\n")
    local script = dir .. "/child.lua"
    h.write(
      script,
      table.concat({
        "vim.opt.runtimepath:prepend(" .. vim.inspect(PLUGIN) .. ")",
        "vim.cmd('runtime plugin/flemma_sandbox.lua')",
        "require('flemma_sandbox').setup({ backend = 'bwrap', policy = { network = false } })",
        "vim.cmd('cd ' .. " .. vim.inspect(proj) .. ")",
        "vim.cmd('edit c.chat')",
        "vim.wait(20000, function() return next(require('flemma_sandbox.nvim.prestart').last) ~= nil end, 20)",
        "local dir, last = next(require('flemma_sandbox.nvim.prestart').last)",
        "io.open(" .. vim.inspect(dir .. "/out") .. ", 'w'):write(last.state .. ' ' .. dir)",
        "vim.cmd('qa!')",
      }, "\n")
    )
    local env = "XDG_CACHE_HOME=" .. h.shell_quote(vim.env.XDG_CACHE_HOME)
    h.sh(env .. " nvim --headless -u NONE -i NONE -c " .. h.shell_quote("luafile " .. script) .. " -c 'cquit 1'")
    local out = vim.fn.readfile(dir .. "/out")[1] or ""
    local state, ldir = out:match("^(%S+) (.+)$")
    assert.are.equal("started", state, out)
    local f = io.open(ldir .. "/pid", "r")
    local keeper = tonumber((f and f:read("*a") or ""):match("^(%d+)"))
    if f then
      f:close()
    end
    assert.truthy(keeper, "the child's prestart had started a keeper")
    assert.are.same({}, n.survivors({ keeper }), "gone with the Neovim that started it")
    assert.are.equal("stopped", (live.info(client.helper(), ldir)))
  end)
end)
