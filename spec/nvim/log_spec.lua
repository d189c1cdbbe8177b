--- The chat's timeline (timeline.lua) and :FlemmaSandbox log
--- (nvim/log.lua): each tool call of a chat gets an entry when it ends,
--- with its exit code, the files it changed (direct mode's checkpoints
--- before and after it), the hosts the proxy let it reach and the ones it
--- refused, and what the check after the run moved to the quarantine.
--- A test server on 127.0.0.2 plays the outside world, reached by name
--- through the proxy's test-only map (FLEMMA_SANDBOX_PROXY_TEST=1).
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")
local timeline = require("flemma_sandbox.api.timeline")
local log = require("flemma_sandbox.nvim.log")

--- A shell line that sends one GET for name to HTTP_PROXY and prints the reply.
local function get(name, port)
  local text = "GET http://" .. name .. ":" .. port .. "/hello HTTP/1.1\r\nHost: " .. name .. "\r\n\r\n"
  return '{ p=${HTTP_PROXY#http://}; exec 3<>"/dev/tcp/${p%:*}/${p##*:}" && printf '
    .. h.shell_quote(text)
    .. " >&3 && cat <&3; echo; }"
end

local function bash(bufnr, command)
  local r = n.run_tool("bash", { command = command }, { bufnr = bufnr, approved = true })
  assert.is_nil(r.error, vim.inspect(r))
  return r
end

--- The chat's folder of bufnr.
local function chat_dir(bufnr)
  return assert(log.chat_of(bufnr), "the chat has a folder")
end

--- Waits until the chat's timeline has count entries (an entry is written
--- once the checkpoint after the call is taken); the entries.
local function entries(bufnr, count)
  local got = {}
  vim.wait(15000, function()
    got = timeline.read(chat_dir(bufnr))
    return #got >= count
  end, 20)
  assert.are.equal(count, #got, vim.inspect(got))
  return got
end

describe("the chat's timeline", function()
  local dir, server, server_pid, port, p

  setup(function()
    server = assert(io.popen("exec luajit spec/support/http.lua serve 127.0.0.2 2>&1", "r"))
    port, server_pid = server:read("*l"):match("^port (%d+) pid (%d+)")
    dir = h.tmpdir()
    h.write(dir .. "/hosts", "allowed.test 127.0.0.2\nother.test 127.0.0.2\n")
    vim.env.FLEMMA_SANDBOX_PROXY_TEST = "1"
    vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = dir .. "/hosts"
  end)
  teardown(function()
    h.sh("kill " .. server_pid)
    server:close()
    vim.env.FLEMMA_SANDBOX_PROXY_TEST = nil
    vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = nil
    h.rmdir(dir)
  end)

  project.each(
    "git init -q . && printf 'one\\n' > README.md && printf 'bye\\n' > gone.txt && git add -A"
      .. " && git -c user.name=u -c user.email=u@e commit -qm init",
    function(set)
      p = set
      sandbox.setup({
        backend = "bwrap",
        policy = { rw_paths = { "$CWD" }, network = "allowlist", allow_domains = { "allowed.test" } },
        approval = { bash = "allow", write = "allow", edit = "allow" },
      })
    end
  )
  after_each(function()
    vim.cmd("silent! only")
  end)

  it("lists each call: its files, the hosts it reached, the ones refused", function()
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "mkdir -p src && echo new > src/new.txt && echo two >> README.md && rm gone.txt")
    assert.are.equal("new\n", h.read(p.proj .. "/src/new.txt"), "control: the call wrote")
    bash(bufnr, "true")
    local r = bash(bufnr, get("allowed.test", port))
    assert.matches("hello /hello host=allowed%.test", r.stdout, "control: the server was reached")
    r = bash(bufnr, get("other.test", port))
    assert.matches("^HTTP/1.1 403", r.stdout, "control: the proxy refused it")
    local e = entries(bufnr, 4)
    assert.are.same({ 1, 2, 3, 4 }, { e[1].n, e[2].n, e[3].n, e[4].n })
    assert.are.same({ "bash", 0, true }, { e[1].tool, e[1].exit, e[1].checkpoint })
    assert.are.same({ "allowed.test:" .. port }, e[3].reached)
    assert.are.same({}, e[3].refused)
    assert.are.same({}, e[4].reached)
    assert.matches("^other%.test: other%.test is not in allow_domains", e[4].refused[1])

    local lines = log.lines(bufnr)
    local text = table.concat(lines, "\n")
    -- newest first; each call with its command and exit code
    local at = {}
    for i = 1, 4 do
      at[i] = assert(text:find("\n#" .. i .. "  %d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d  bash  exit 0\n"), text)
    end
    assert.is_true(at[4] < at[3] and at[3] < at[2] and at[2] < at[1], text)
    local one = text:sub(at[1])
    assert.matches("\n    %$ mkdir %-p src", one)
    -- (the last entry ends the text)
    assert.matches("\n    A src/new%.txt", one)
    assert.matches("\n    M README%.md\n", one)
    assert.matches("\n    D gone%.txt\n", one)
    assert.matches("\n    files: none changed\n", text:sub(at[2], at[1]))
    local three = text:sub(at[3], at[2])
    assert.matches("\n    reached: allowed%.test:" .. port .. "\n", three)
    assert.matches("\n    files: none changed\n", three)
    local four = text:sub(at[4], at[3])
    assert.matches("\n    refused: other%.test: other%.test is not in allow_domains", four)
    assert.not_matches("reached", four)
  end)

  it("says what the quarantine moved and where a call failed", function()
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    -- the call's check after it, or its sandbox's when its watch saw
    -- .envrc made and stopped it: either way this call moved it
    bash(bufnr, "echo 'echo planted' > .envrc; echo made")
    assert.is_nil(h.read(p.proj .. "/.envrc"), "control: the check after the run moved it")
    bash(bufnr, "exit 3")
    local e = entries(bufnr, 2)
    assert.are.same({ p.proj .. "/.envrc" }, e[1].moved)
    assert.are.same({ 3, false }, { e[2].exit, e[2].ok })
    -- (a line of its own: the last one, or one before what the sandbox's
    -- stop said, when its watch saw .envrc made while the call ran)
    local text = table.concat(log.lines(bufnr), "\n") .. "\n"
    assert.matches("\n    moved to the quarantine: " .. vim.pesc(p.proj) .. "/%.envrc\n", text)
    assert.matches("\n#2  [%d: -]+  bash  exit 3\n", text)
  end)

  it("opens in a window; <CR> on a call or one of its files shows its diff", function()
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "echo new > new.txt && echo two >> README.md")
    local wrote = n.run_tool("write", { path = p.proj .. "/w.txt", content = "written\n" }, { bufnr = bufnr })
    assert.is_nil(wrote.error, vim.inspect(wrote))
    entries(bufnr, 2)
    vim.cmd("FlemmaSandbox log")
    local logbuf = vim.api.nvim_get_current_buf()
    assert.are_not.equal(bufnr, logbuf)
    local shown = vim.api.nvim_buf_get_lines(logbuf, 0, -1, false)
    local text = table.concat(shown, "\n")
    assert.matches("\n#2  [%d: -]+  write  ok\n", text)
    assert.matches("\n    A w%.txt\n", text)
    -- <CR> on the file line of README.md: the call's diff, at that file
    local row
    for i, line in ipairs(shown) do
      if line == "    M README.md" then
        row = i
      end
    end
    assert(row, text)
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "x", false)
    local diffbuf = vim.api.nvim_get_current_buf()
    assert.are_not.equal(logbuf, diffbuf)
    assert.are.equal("diff", vim.bo[diffbuf].filetype)
    local diff = table.concat(vim.api.nvim_buf_get_lines(diffbuf, 0, -1, false), "\n")
    assert.matches("diff %-%-git a/new%.txt b/new%.txt", diff)
    assert.matches("\n%+new", diff)
    assert.matches("\n%+two", diff)
    assert.not_matches("written", diff, "only that call's change")
    assert.are.equal(
      "diff --git a/README.md b/README.md",
      vim.api.nvim_buf_get_lines(diffbuf, vim.fn.line(".") - 1, vim.fn.line("."), false)[1]
    )
  end)

  it("keeps the last 500 calls", function()
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    local folder = chat_dir(bufnr)
    vim.fn.mkdir(folder, "p")
    for i = 1, 510 do
      assert(timeline.append(folder, { n = i, tool = "read", label = "read x", reached = {} }))
    end
    local e = timeline.read(folder)
    assert.are.equal(500, #e)
    assert.are.same({ 11, 510 }, { e[1].n, e[500].n })
  end)

  it("in clone mode, says the call worked on the chat's copy", function()
    sandbox.setup({
      backend = "bwrap",
      sandboxes = { workspace = "clone" },
      policy = { rw_paths = { "$CWD" }, network = false },
      approval = { bash = "allow" },
    })
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "echo new > new.txt")
    assert.is_nil(h.read(p.proj .. "/new.txt"), "control: the copy, not the tree")
    local e = entries(bufnr, 1)
    assert.are.same({ true, false }, { e[1].clone, e[1].checkpoint })
    assert.matches("\n    files: on the chat's copy %(clone mode", table.concat(log.lines(bufnr), "\n"))
  end)

  it("says so in a buffer that is no chat, and in a chat with no calls yet", function()
    vim.cmd("enew")
    local lines, why = log.lines(vim.api.nvim_get_current_buf())
    assert.is_nil(lines)
    assert.matches("not a chat with a file", why)
    local bufnr = n.open_chat(p.proj .. "/b.chat", { "@You:", "hi" })
    lines, why = log.lines(bufnr)
    assert.is_nil(lines)
    assert.matches("no call of chat b%-%x+ is recorded yet", why)
  end)
end)
