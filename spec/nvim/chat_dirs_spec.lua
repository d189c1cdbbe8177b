--- A chat's own /tmp and home_writable folders, kept on disk between its
--- tool calls (policy/chat_dirs.lua), and :FlemmaSandbox list, reset,
--- delete and gc (nvim/sandboxes.lua).
local h = require("support.helpers")
local n = require("support.nvim")
local sandbox = require("flemma_sandbox")

describe("a chat's own folders", function()
  local dir, old_cwd, old_cache, notes, restore

  --- Runs cmd as a tool command of the buffer; its result.
  local function run_in(bufnr, cmd)
    return n.run_job({ "bash", "-c", cmd }, { bufnr = bufnr, wrap = sandbox.wrapper(bufnr) })
  end

  local function wait_notes(count)
    assert(vim.wait(10000, function()
      return #notes >= count
    end, 10))
  end

  before_each(function()
    dir = h.tmpdir()
    old_cwd, old_cache = vim.fn.getcwd(), vim.env.XDG_CACHE_HOME
    vim.env.XDG_CACHE_HOME = dir .. "/cache"
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/proj"))
    vim.cmd("cd " .. vim.fn.fnameescape(dir .. "/proj"))
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { "$CWD", "/tmp" } } })
    notes, restore = n.capture_notify()
  end)
  after_each(function()
    restore()
    vim.cmd("silent! %bwipeout!")
    vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
    -- what the chats of this test left running ends with it
    require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
    vim.env.XDG_CACHE_HOME = old_cache
    sandbox.setup()
    h.rmdir(dir)
  end)

  it("keep /tmp and ~/.cache from one call of a chat to the next; another chat has its own", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local r = run_in(a, "echo kept > /tmp/out.txt; mkdir -p ~/.cache/t && echo c > ~/.cache/t/f")
    assert.are.equal(0, r.exit_code, r.stderr)
    r = run_in(a, "cat /tmp/out.txt ~/.cache/t/f")
    assert.are.equal("kept\nc\n", r.stdout, r.stderr)
    -- another chat of the project: its own, empty
    local b = n.open_chat(dir .. "/proj/b.chat", { "@You:", "hi" })
    r = run_in(b, "cat /tmp/out.txt ~/.cache/t/f")
    assert.are_not.equal(0, r.exit_code)
    assert.are.equal("", r.stdout)
    -- control: a buffer without a file, or one that is not a chat, gets
    -- fresh folders each call, as before
    local scratch = vim.api.nvim_create_buf(true, false)
    run_in(scratch, "echo x > /tmp/out.txt")
    r = run_in(scratch, "cat /tmp/out.txt")
    assert.are_not.equal(0, r.exit_code)
    vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/proj/code.lua"))
    local code = vim.api.nvim_get_current_buf()
    run_in(code, "echo x > /tmp/out.txt")
    r = run_in(code, "cat /tmp/out.txt")
    assert.are_not.equal(0, r.exit_code)
    -- on disk, under the cache folder, named after the chat
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(a)
    assert.matches("^" .. vim.pesc(dir .. "/cache/flemma-sandbox/proj-") .. "%x+/a%-%x+$", chat.dir)
    assert.are.equal("kept\n", h.read(chat.dir .. "/tmp/out.txt"))
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(a), "\n")
    assert.matches("kept:       /tmp, /run, ~/%.cache[^\n]* of chat " .. vim.pesc(chat.name), status)
    assert.matches("caps:       a chat's kept folders are on disk, not in RAM; the rest of its private home", status)
    -- what the chat and its model read says they are kept, never "thrown away"
    assert.is_nil(status:find("thrown away", 1, true), status)
    local _, why = sandbox.is_path_writable("~/.bashrc", a)
    assert.is_nil(why:find("thrown away", 1, true), why)
    assert.truthy(why:find("a chat keeps its own between its calls", 1, true), why)
    -- control: a buffer that is not a chat has them empty in each command, and its status says so
    local code_status = table.concat(require("flemma_sandbox.nvim.status").lines(code), "\n")
    assert.truthy(code_status:find("empty in each command of this buffer (not a chat;", 1, true), code_status)
  end)

  it("are made by the step before the wrap, not by the wrap itself", function()
    local c = n.open_chat(dir .. "/proj/c.chat", { "@You:", "hi" })
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(c)
    local entry = assert(require("flemma_sandbox.backends").get("bwrap"))
    local prepare = entry.prepare
    -- the wrap alone: its argv and plan files, no folder of the chat
    entry.prepare = function()
      return {}, nil
    end
    local ok, argv = pcall(sandbox.wrap_command, { "true" }, c)
    entry.prepare = prepare
    assert.is_true(ok, tostring(argv))
    assert.is_table(argv)
    assert.is_nil(vim.loop.fs_stat(chat.dir .. "/tmp"), "the wrap made the chat's /tmp")
    -- control: the wrap path with its step before makes them
    assert.is_table((sandbox.wrap_command({ "true" }, c)))
    assert.are.equal("directory", (vim.loop.fs_stat(chat.dir .. "/tmp") or {}).type)
  end)

  it("hides every chat's folders from the sandbox, even where the cache folder is writable", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    assert.are.equal(0, run_in(a, "echo secret-of-a > /tmp/a.txt").exit_code)
    local chat_a = require("flemma_sandbox.policy.chat_dirs").for_buffer(a)
    assert.are.equal("secret-of-a\n", h.read(chat_a.dir .. "/tmp/a.txt"), "control: it is there on the host")
    -- chat b's policy makes the cache folder writable
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { "$CWD", dir .. "/cache" } } })
    local b = n.open_chat(dir .. "/proj/b.chat", { "@You:", "hi" })
    local r =
      run_in(b, "cat " .. h.shell_quote(chat_a.dir .. "/tmp/a.txt") .. "; ls " .. h.shell_quote(dir .. "/cache"))
    assert.is_nil(r.stdout:find("secret-of-a", 1, true), r.stdout)
    r = run_in(b, "ln -s / " .. h.shell_quote(dir .. "/cache/flemma-sandbox/planted"))
    assert.are_not.equal(0, r.exit_code, "nothing can be made there")
    assert.is_nil(require("flemma_sandbox.core").file_type(dir .. "/cache/flemma-sandbox/planted"))
  end)

  it("works where the cache folder is a link to another folder (as ~/.cache often is)", function()
    h.sh(
      "mkdir -p " .. h.shell_quote(dir .. "/real-cache") .. " && ln -s real-cache " .. h.shell_quote(dir .. "/linked")
    )
    vim.env.XDG_CACHE_HOME = dir .. "/linked"
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    local r = run_in(a, "echo kept > /tmp/out.txt")
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.are.equal("kept\n", run_in(a, "cat /tmp/out.txt").stdout)
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(a)
    assert.are.equal(1, vim.fn.isdirectory(dir .. "/real-cache/flemma-sandbox"))
    assert.truthy(chat.dir:find(dir .. "/real-cache/", 1, true), chat.dir)
  end)

  it("refuses to bind a chat folder that is a link (fail closed)", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    assert.are.equal(0, run_in(a, "true").exit_code)
    local chat = require("flemma_sandbox.policy.chat_dirs").for_buffer(a)
    h.sh("rm -rf " .. h.shell_quote(chat.dir .. "/tmp") .. " && mkdir " .. h.shell_quote(dir .. "/elsewhere"))
    h.sh("ln -s " .. h.shell_quote(dir .. "/elsewhere") .. " " .. h.shell_quote(chat.dir .. "/tmp"))
    local argv, err = sandbox.wrap_command({ "true" }, a)
    assert.is_nil(argv)
    assert.matches("is not a folder %(a link%?%)", err)
    -- control: a real folder again, and it runs
    h.sh("rm " .. h.shell_quote(chat.dir .. "/tmp"))
    assert.are.equal(0, run_in(a, "echo ok > /tmp/x").exit_code)
    assert.is_nil(h.read(dir .. "/elsewhere/x"))
  end)

  it(":FlemmaSandbox list, reset, delete NAME and gc", function()
    local a = n.open_chat(dir .. "/proj/a.chat", { "@You:", "hi" })
    run_in(a, "echo kept > /tmp/out.txt")
    local b = n.open_chat(dir .. "/proj/b.chat", { "@You:", "hi" })
    run_in(b, "echo kept > /tmp/out.txt")
    local chat_dirs = require("flemma_sandbox.policy.chat_dirs")
    local chat_a, chat_b = chat_dirs.for_buffer(a), chat_dirs.for_buffer(b)
    local text = table.concat(require("flemma_sandbox.nvim.sandboxes").list_lines(), "\n")
    assert.truthy(text:find(chat_a.name, 1, true), text)
    assert.truthy(text:find(dir .. "/proj/b.chat", 1, true), text)
    vim.api.nvim_set_current_buf(a)
    vim.cmd("FlemmaSandbox reset")
    wait_notes(1)
    assert.is_nil(h.read(chat_a.dir .. "/tmp/out.txt"))
    assert.are.equal("kept\n", h.read(chat_b.dir .. "/tmp/out.txt"), "only this chat's")
    local r = run_in(a, "cat /tmp/out.txt")
    assert.are_not.equal(0, r.exit_code)
    local live_b = require("flemma_sandbox.backends.live").dir_for(chat_b)
    assert.are.equal("directory", require("flemma_sandbox.core").file_type(live_b), "control: b's live sandbox")
    vim.cmd("FlemmaSandbox delete " .. chat_b.name)
    wait_notes(2)
    assert.is_nil(require("flemma_sandbox.core").file_type(chat_b.dir))
    assert.is_nil(require("flemma_sandbox.core").file_type(live_b), "its live sandbox's folder goes too")
    -- gc: a chat whose file is gone
    run_in(b, "true")
    os.remove(dir .. "/proj/b.chat")
    vim.cmd("FlemmaSandbox gc")
    wait_notes(3)
    assert.is_nil(require("flemma_sandbox.core").file_type(chat_b.dir))
    assert.are.equal("directory", require("flemma_sandbox.core").file_type(chat_a.dir), "a's file is there")
  end)

  it("gc keeps a shared name's folder while one of its chats is there; list names them", function()
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { "$CWD", "/tmp" } }, sandboxes = { name = "both" } })
    local c = n.open_chat(dir .. "/proj/c.chat", { "@You:", "hi" })
    run_in(c, "echo kept > /tmp/out.txt")
    local d = n.open_chat(dir .. "/proj/d.chat", { "@You:", "hi" })
    run_in(d, "true")
    local shared = require("flemma_sandbox.policy.chat_dirs").for_buffer(d, "both").dir
    local sandboxes = require("flemma_sandbox.nvim.sandboxes")
    local text = table.concat(sandboxes.list_lines(), "\n")
    assert.truthy(text:find(dir .. "/proj/c.chat (+1)", 1, true), text)
    -- the chat that made it is gone, the other is there: kept
    os.remove(dir .. "/proj/c.chat")
    assert.are.same({}, sandboxes.gc_targets())
    text = table.concat(sandboxes.list_lines(), "\n")
    assert.truthy(text:find(dir .. "/proj/d.chat (+1)", 1, true), text)
    assert.are.equal("kept\n", h.read(shared .. "/tmp/out.txt"))
    -- control: once both are gone, gc takes it
    os.remove(dir .. "/proj/d.chat")
    assert.are.same({ shared }, sandboxes.gc_targets())
  end)
end)
