-- flemma-sandbox as the backend of the real Flemma (FLEMMA_DIR), on Neovim
-- 0.11+. The runner sources plugin/flemma_sandbox.lua before these specs call
-- Flemma's setup(): the load order of lazy.nvim with flemma-sandbox among
-- Flemma's dependencies. The other order runs in a child Neovim below.
local h = require("support.helpers")

local uv = vim.uv or vim.loop
local flemma_dir = assert(os.getenv("FLEMMA_DIR"), "FLEMMA_DIR")
local repo = vim.fn.getcwd()

local flemma_chat = require("support.flemma_chat")
local execute, error_result = flemma_chat.execute, flemma_chat.error_result

--- Writes an init.lua for a Neovim of its own: Flemma and this plugin on
--- the runtimepath, then the setup lines; returns its path.
local function child_init(dir, setup_lines)
  local init = dir .. "/init.lua"
  local lines = {
    "vim.opt.rtp:prepend(" .. vim.inspect(flemma_dir) .. ")",
    "vim.opt.rtp:prepend(" .. vim.inspect(repo) .. ")",
    "vim.opt.swapfile = false",
  }
  h.write(init, table.concat(vim.list_extend(lines, setup_lines), "\n"))
  return init
end

describe("flemma-sandbox inside Flemma", function()
  local home, project, old_home, old_cwd
  local secret = "SECRET-" .. tostring(uv.hrtime())

  -- Flemma's LSP would write its log under the test's HOME
  local function setup_flemma(opts)
    require("flemma").setup(vim.tbl_deep_extend("force", { lsp = { enabled = false } }, opts or {}))
    -- what a request does first: loads the tools.modules sources
    require("flemma.tools").get_all()
  end

  before_each(function()
    old_home, old_cwd = vim.env.HOME, vim.fn.getcwd()
    home = h.tmpdir()
    project = home .. "/project"
    vim.fn.mkdir(home .. "/.ssh", "p")
    -- as in a real home: Flemma's default rw_paths name them, and its own
    -- bwrap backend fails to start when they are missing
    vim.fn.mkdir(home .. "/.cache", "p")
    vim.fn.mkdir(home .. "/.local/share", "p")
    vim.fn.mkdir(project, "p")
    h.write(home .. "/.ssh/id_test", secret .. "\n")
    vim.env.HOME = home
    vim.cmd("cd " .. vim.fn.fnameescape(project))
    require("flemma.sandbox").reset_enabled()
  end)

  after_each(function()
    vim.cmd("silent! %bwipeout!")
    vim.env.HOME = old_home
    vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
    h.rmdir(home)
  end)

  it("is the backend Flemma picks, and :Flemma sandbox:status works", function()
    setup_flemma()
    assert.are.equal("flemma_sandbox", (require("flemma.sandbox").detect_available_backend()))
    vim.cmd("Flemma sandbox:status")
    local text = table.concat(require("flemma_sandbox.nvim.status").lines(0), "\n")
    assert.matches("backend:    flemma_sandbox", text)
    assert.matches("limits:     processes=4096", text)
  end)

  it("runs a bash call hardened: key hidden, limits from Flemma's config, writes outside refused", function()
    setup_flemma({ sandbox = { backends = { flemma_sandbox = { limits = { processes = 300 } } } } })
    local cmd = "cat ~/.ssh/id_test; ulimit -u; ulimit -d; "
      .. "grep Seccomp: /proc/self/status; echo hi > ~/outside; echo end"
    local text = execute(project .. "/a.chat", "bash", { label = "t", command = cmd, timeout = 20 })
    assert.is_nil(text:find(secret, 1, true), text)
    assert.matches("\n300\n", text)
    assert.matches("\n8388608\n", text) -- the other limits keep flemma-sandbox's defaults
    assert.matches("Seccomp:%s+2", text)
    assert.matches("id_test: No such file", text) -- the private home has no ~/.ssh
    assert.are.equal(0, vim.fn.filereadable(home .. "/outside")) -- written in the private home only
  end)

  it("control: with Flemma's own bwrap backend the key is readable", function()
    setup_flemma({ sandbox = { backend = "bwrap" } })
    local text = execute(project .. "/b.chat", "bash", { label = "t", command = "cat ~/.ssh/id_test", timeout = 20 })
    assert.truthy(text:find(secret, 1, true), text)
  end)

  it("returns the exit code as Flemma does, and a timeout leaves no process", function()
    setup_flemma()
    local text = execute(project .. "/c.chat", "bash", { label = "t", command = "echo out; exit 3", timeout = 20 })
    assert.matches("Command exited with code 3", text)
    -- sleep takes fractions: the marker makes the command lines unique
    local marker = tostring(uv.hrtime() % 100000000)
    local cmd = "sleep 1000." .. marker .. " & (sleep 1001." .. marker .. " &); sleep 1002." .. marker
    text = execute(project .. "/d.chat", "bash", { label = "t", command = cmd, timeout = 1 })
    assert.matches("timed out after 1 seconds", text)
    assert.truthy(
      vim.wait(5000, function()
        return vim.fn.system({ "pgrep", "-f", marker }) == ""
      end, 50),
      "processes left: " .. vim.fn.system({ "pgrep", "-af", marker })
    )
  end)

  it("takes Flemma's network = true (its default) as the allowlist proxy, and 'host' from our config", function()
    setup_flemma()
    local host_net = uv.fs_readlink("/proc/self/ns/net")
    local cmd = "readlink /proc/self/ns/net; echo proxy=$HTTPS_PROXY; p=${HTTPS_PROXY#http://}; "
      .. "exec 3<>\"/dev/tcp/${p%:*}/${p##*:}\"; printf 'CONNECT evil.test:443 HTTP/1.1\\r\\n\\r\\n' >&3; "
      .. "cat <&3"
    local text = execute(project .. "/n.chat", "bash", { label = "t", command = cmd, timeout = 20 })
    assert.is_nil(text:find(host_net, 1, true), text) -- a network namespace of its own
    assert.matches("proxy=http://127%.0%.0%.1:%d+", text)
    assert.matches("HTTP/1.1 403 Forbidden", text)
    -- the refusal's body (Flemma shows stderr, where the proxy's line goes, only on failure)
    assert.matches("flemma%-sandbox: evil%.test is not in allow_domains", text)
    -- control: our config's "host" gives the command the host's network
    setup_flemma({ sandbox = { backends = { flemma_sandbox = { network = "host" } } } })
    text = execute(project .. "/o.chat", "bash", { label = "t", command = "readlink /proc/self/ns/net", timeout = 20 })
    assert.truthy(text:find(host_net, 1, true), text)
  end)

  it("asks about an unlisted name in the question window where our config says 'ask' (control: no)", function()
    local server = assert(io.popen("exec luajit " .. repo .. "/spec/support/http.lua serve 127.0.0.2 2>&1", "r"))
    local port, pid = server:read("*l"):match("^port (%d+) pid (%d+)")
    local approval = require("flemma_sandbox.questions")
    local prompt, select, prompts, choice = approval.prompt, vim.ui.select, {}, "once"
    finally(function()
      approval.prompt = prompt
      vim.ui.select = select
      vim.env.FLEMMA_SANDBOX_PROXY_TEST, vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = nil, nil
      h.sh("kill " .. pid)
      server:close()
    end)
    -- the proxy's test-only name map: asked.test is the server above
    h.write(project .. "/hosts", "asked.test 127.0.0.2\n")
    vim.env.FLEMMA_SANDBOX_PROXY_TEST, vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = "1", project .. "/hosts"
    -- never the modal vim.ui.select, which takes the next Enter typed anywhere
    vim.ui.select = function()
      error("vim.ui.select was used")
    end
    approval.prompt = function(question, respond)
      prompts[#prompts + 1] = question.title .. "\n" .. table.concat(question.lines, "\n")
      vim.schedule(function()
        respond(choice)
      end)
      return function() end
    end
    setup_flemma({ sandbox = { backends = { flemma_sandbox = { network = "ask", allow_domains = {} } } } })
    local request = "GET http://asked.test:" .. port .. "/hello HTTP/1.1\r\nHost: asked.test\r\n\r\n"
    local cmd = 'p=${HTTP_PROXY#http://}; exec 3<>"/dev/tcp/${p%:*}/${p##*:}" && printf '
      .. h.shell_quote(request)
      .. " >&3 && cat <&3"
    local text = execute(project .. "/ask.chat", "bash", { label = "t", command = cmd, timeout = 20 })
    assert.matches("hello /hello host=asked%.test", text)
    assert.are.equal(1, #prompts)
    local asked = "connect to asked%.test%?\nasked%.test %(port " .. port .. "%) is not in policy%.allow_domains"
    assert.matches(asked, prompts[1])
    -- the control: refused, the server is not reached
    choice = "deny"
    text = execute(project .. "/ask2.chat", "bash", { label = "t", command = cmd, timeout = 20 })
    assert.are.equal(2, #prompts)
    assert.matches("asked%.test is not in allow_domains, and the user refused it when asked", text)
    assert.is_nil(text:find("hello /hello", 1, true), text)
  end)

  it("honours Flemma's network = false and frontmatter enabled = false", function()
    setup_flemma({ sandbox = { policy = { network = false } } })
    local host_net = uv.fs_readlink("/proc/self/ns/net")
    local input = { label = "t", command = "readlink /proc/self/ns/net", timeout = 20 }
    local text = execute(project .. "/e.chat", "bash", input)
    assert.is_nil(text:find(host_net, 1, true), text)
    -- a frontmatter that turns the sandbox off applies once trusted
    -- (before, even a call run by hand is refused: hand_run_spec.lua)
    text = execute(
      project .. "/f.chat",
      "bash",
      { label = "t", command = "echo hi > ~/outside; cat ~/.ssh/id_test", timeout = 20 },
      "flemma.opt.sandbox.enabled = false",
      function()
        vim.cmd("FlemmaSandbox trust")
      end
    )
    assert.truthy(text:find(secret, 1, true), text)
    assert.are.equal(1, vim.fn.filereadable(home .. "/outside"))
  end)

  it("keeps the home folder read-only when Neovim was started there", function()
    setup_flemma()
    vim.cmd("cd " .. vim.fn.fnameescape(home))
    local input = { label = "t", command = "echo evil >> ~/.bash_aliases", timeout = 20 }
    execute(home .. "/r.chat", "bash", input)
    -- it lands in the command's private home, not in yours
    assert.are.equal(0, vim.fn.filereadable(home .. "/.bash_aliases"))
    -- control: Flemma's own backend makes urn:flemma:cwd, the home folder, writable
    setup_flemma({ sandbox = { backend = "bwrap" } })
    execute(home .. "/s.chat", "bash", input)
    assert.are.equal(1, vim.fn.filereadable(home .. "/.bash_aliases"))
  end)

  it("takes flemma-sandbox settings from Flemma's frontmatter", function()
    setup_flemma()
    local text = execute(
      project .. "/g.chat",
      "bash",
      { label = "t", command = "ulimit -u", timeout = 20 },
      "flemma.opt.sandbox.backends.flemma_sandbox = { limits = { processes = 77 } }"
    )
    assert.matches("\n77\n", text)
  end)

  it("refuses the tool calls of a buffer whose frontmatter loosens the sandbox until it is trusted", function()
    setup_flemma({ tools = { auto_approve = { "bash" } } })
    local approval = require("flemma.tools.approval")
    local input = { label = "t", command = "true", timeout = 20 }
    local function resolve_in(path, frontmatter)
      local lines = vim.list_extend({ "```lua", frontmatter, "```" }, flemma_chat.lines("bash", "toolu_t", input))
      h.write(path, table.concat(lines, "\n") .. "\n")
      vim.cmd("edit! " .. vim.fn.fnameescape(path))
      local bufnr = vim.api.nvim_get_current_buf()
      require("flemma.processor").evaluate_buffer_frontmatter(bufnr)
      return approval.resolve("bash", input, { bufnr = bufnr, tool_id = "toolu_t" }), bufnr
    end
    -- what a sandboxed command could write into another chat file of the project
    local loose = "flemma.opt.sandbox.enabled = false\nflemma.opt.tools.auto_approve = { 'bash', 'write' }"
    local decision, bufnr = resolve_in(project .. "/v.chat", loose)
    assert.are.equal("deny", decision)
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(bufnr), "\n")
    assert.matches("frontmatter NOT trusted", status)
    assert.matches("sandbox.enabled = false", status)
    vim.cmd("FlemmaSandbox trust")
    assert.are.equal("approve", approval.resolve("bash", input, { bufnr = bufnr, tool_id = "toolu_t" }))
    -- any change to the text needs trust again
    decision = resolve_in(project .. "/v.chat", loose .. "\nflemma.opt.sandbox.enabled = false")
    assert.are.equal("deny", decision)
    -- tightening needs no trust; control: no frontmatter, the same auto_approve lets bash through
    assert.are.equal(
      "approve",
      (resolve_in(project .. "/w.chat", "flemma.opt.sandbox.backends.flemma_sandbox = { limits = { processes = 77 } }"))
    )
    assert.are.equal("approve", (resolve_in(project .. "/x.chat", "-- nothing")))
  end)

  it("FLEMMA_SANDBOX_TOOLS=off: the resolver denies every call, the backend refuses; nothing runs", function()
    setup_flemma({ tools = { auto_approve = { "bash", "write" } } })
    vim.env.FLEMMA_SANDBOX_TOOLS = "off"
    local ok, err = pcall(function()
      -- run by hand (:Flemma tool:execute asks no resolver): the backend refuses
      local input = { label = "t", command = "echo ran > ran.txt", timeout = 20 }
      local _, bufnr = execute(project .. "/off.chat", "bash", input)
      local text = error_result(bufnr)
      assert.matches("tool calls are off: FLEMMA_SANDBOX_TOOLS=off", text)
      assert.are.equal(0, vim.fn.filereadable(project .. "/ran.txt"))
      -- what Flemma asks before it runs a call the model made: denied, even auto-approved
      local approval = require("flemma.tools.approval")
      local context = { bufnr = bufnr, tool_id = "toolu_x" }
      assert.are.equal("deny", approval.resolve("write", { path = "w.txt", content = "x" }, context))
      assert.are.equal("deny", approval.resolve("bash", input, context))
      local flemma_policy = { rw_paths = { project }, network = false }
      local argv, why = require("flemma_sandbox.flemma.backend").wrap(flemma_policy, nil, { "true" })
      assert.is_nil(argv)
      assert.matches("FLEMMA_SANDBOX_TOOLS=off", why)
      local status = table.concat(require("flemma_sandbox.nvim.status").lines(0), "\n")
      assert.matches("tool calls: tool calls are off: FLEMMA_SANDBOX_TOOLS=off", status)
    end)
    vim.env.FLEMMA_SANDBOX_TOOLS = nil
    assert(ok, err)
    -- control: without it the same call runs
    execute(project .. "/on.chat", "bash", { label = "t", command = "echo ran > ran.txt", timeout = 20 })
    assert.are.equal(1, vim.fn.filereadable(project .. "/ran.txt"))
  end)

  it("two calls of one Flemma chat share its /tmp; another chat does not see it", function()
    local old_cache = vim.env.XDG_CACHE_HOME
    vim.env.XDG_CACHE_HOME = home .. "/.cache"
    setup_flemma()
    local cmd = "echo kept-" .. secret .. " > /tmp/kept.txt; echo written"
    local text = execute(project .. "/one.chat", "bash", { label = "t", command = cmd, timeout = 20 })
    assert.matches("written", text)
    text = execute(project .. "/one.chat", "bash", { label = "t", command = "cat /tmp/kept.txt", timeout = 20 })
    assert.truthy(text:find("kept-" .. secret, 1, true), text)
    -- control: the other chat's /tmp is its own
    text = execute(project .. "/two.chat", "bash", { label = "t", command = "cat /tmp/kept.txt", timeout = 20 })
    assert.is_nil(text:find("kept-" .. secret, 1, true), text)
    vim.env.XDG_CACHE_HOME = old_cache
  end)

  it("undoes a Flemma chat's `rm -rf *` and its write byte for byte; the repository shows no trace", function()
    local old_cache = vim.env.XDG_CACHE_HOME
    vim.env.XDG_CACHE_HOME = home .. "/.cache"
    setup_flemma()
    h.sh(
      "cd "
        .. h.shell_quote(project)
        .. " && git init -q . && printf 'one\\n' > a.txt && mkdir -p src && printf 'two\\n' > src/b.txt"
        .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
        .. " && printf 'changed\\n' > a.txt && printf 'untracked\\n' > notes.txt"
    )
    local function tree()
      return h.run({
        "sh",
        "-c",
        'cd "$1" && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum',
        "sh",
        project,
      }).stdout
    end
    local function repo_state()
      return h.run({
        "sh",
        "-c",
        'cd "$1" && git ls-files -s && GIT_OPTIONAL_LOCKS=0 git status --porcelain'
          .. " && git for-each-ref && git stash list",
        "sh",
        project,
      }).stdout
    end
    local function undo()
      local notes = {}
      local original = vim.notify
      vim.notify = function(msg)
        notes[#notes + 1] = msg
      end
      vim.cmd("FlemmaSandbox! undo")
      local said = vim.wait(20000, function()
        return table.concat(notes, "\n"):find("undo of call", 1, true) ~= nil
      end, 20)
      vim.notify = original
      assert(said, "undo said nothing")
      return table.concat(notes, "\n")
    end
    vim.fn.mkdir(home .. "/chats", "p")
    local before, state = tree(), repo_state()
    local text = execute(
      home .. "/chats/c.chat",
      "bash",
      { label = "t", command = "cd " .. project .. " && rm -rf * && echo removed", timeout = 20 }
    )
    assert.matches("removed", text)
    assert.are.equal(0, vim.fn.filereadable(project .. "/notes.txt"), "control: the call removed the untracked file")
    local said = undo()
    assert.matches("undo of call %d+ %(bash: ", said)
    assert.are.equal(before, tree(), said)
    assert.are.equal(state, repo_state())
    text = execute(home .. "/chats/c.chat", "write", { label = "t", path = project .. "/new.txt", content = "new\n" })
    assert.are.equal(1, vim.fn.filereadable(project .. "/new.txt"), text)
    said = undo()
    assert.are.equal(before, tree(), said)
    assert.are.equal(state, repo_state())
    vim.env.XDG_CACHE_HOME = old_cache
  end)

  it("a Flemma chat's calls share its live sandbox: what one call leaves running is there for the next", function()
    local old_cache = vim.env.XDG_CACHE_HOME
    vim.env.XDG_CACHE_HOME = home .. "/.cache"
    setup_flemma()
    local marker = tostring(uv.hrtime() % 1000000)
    local cmd = "sleep 1000." .. marker .. " >/dev/null 2>&1 & echo started"
    local text = execute(project .. "/live.chat", "bash", { label = "t", command = cmd, timeout = 20 })
    assert.matches("started", text)
    -- what the command printed, not the command (the buffer shows both)
    local result_of = flemma_chat.result_of
    -- "1000[.]": the pattern must not match the shell that runs pgrep
    local look = "pgrep -f 'sleep 1000[.]" .. marker .. "' >/dev/null && echo ALIVE | tr A-Z a-z || echo gone"
    text = execute(project .. "/live.chat", "bash", { label = "t", command = look, timeout = 20 })
    assert.matches("\nalive\n", result_of(text))
    -- control: another chat's sandbox has its own processes
    text = execute(project .. "/other.chat", "bash", { label = "t", command = look, timeout = 20 })
    assert.matches("\ngone\n", result_of(text))
    require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
    vim.env.XDG_CACHE_HOME = old_cache
  end)

  it("a sandbox name in Flemma's frontmatter shares one chat's folders with another, once trusted", function()
    local old_cache = vim.env.XDG_CACHE_HOME
    vim.env.XDG_CACHE_HOME = home .. "/.cache"
    setup_flemma({ tools = { auto_approve = { "bash" } } })
    local named = "flemma.opt.sandbox.backends.flemma_sandbox = { sandboxes = { name = 'shared' } }"
    local cmd = "echo kept-" .. secret .. " > /tmp/kept.txt; echo written"
    local function trust()
      vim.cmd("FlemmaSandbox trust")
    end
    local text = execute(project .. "/a.chat", "bash", { label = "t", command = cmd, timeout = 20 }, named, trust)
    assert.matches("written", text)
    local look = { label = "t", command = "cat /tmp/kept.txt", timeout = 20 }
    local bufnr
    text, bufnr = execute(project .. "/b.chat", "bash", look, named, trust)
    assert.truthy(text:find("kept-" .. secret, 1, true), text)
    -- control: a chat without the name keeps its own
    text = execute(project .. "/c.chat", "bash", look)
    assert.is_nil(text:find("kept-" .. secret, 1, true), text)
    -- another chat's folders and processes: Flemma's resolver denies the
    -- model's calls until it is trusted (and a call run by hand is
    -- refused: hand_run_spec.lua)
    local approval = require("flemma.tools.approval")
    vim.cmd("buffer " .. bufnr)
    vim.cmd("FlemmaSandbox untrust")
    require("flemma.processor").evaluate_buffer_frontmatter(bufnr)
    local context = { bufnr = bufnr, tool_id = "toolu_n" }
    assert.are.equal("deny", approval.resolve("bash", look, context))
    local status = table.concat(require("flemma_sandbox.nvim.status").lines(bufnr), "\n")
    assert.matches('sandboxes.name = "shared"', status)
    vim.cmd("FlemmaSandbox trust")
    assert.are.equal("approve", approval.resolve("bash", look, context))
    require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
    vim.env.XDG_CACHE_HOME = old_cache
  end)

  it("a Flemma chat keeps its /tmp across a restart of Neovim; its processes end with Neovim", function()
    local out = h.tmpdir()
    local init = child_init(out, { "require('flemma').setup({ lsp = { enabled = false } })" })
    local marker = tostring(uv.hrtime() % 1000000)
    --- A Neovim of its own runs one bash call in project/keep.chat, as
    --- :Flemma tool:execute does, writes the result and exits.
    local function session(command)
      -- done once its last line is in the result (the result block is
      -- there, empty, before the output)
      local input = { label = "t", command = command .. "; echo session-done", timeout = 20 }
      local lines = flemma_chat.lines("bash", "toolu_" .. tostring(uv.hrtime()), input)
      h.write(project .. "/keep.chat", table.concat(lines, "\n") .. "\n")
      local script = out .. "/session.lua"
      h.write(
        script,
        table.concat({
          "vim.cmd('edit keep.chat')",
          "vim.api.nvim_win_set_cursor(0, { " .. (#lines - 3) .. ", 0 })",
          "vim.cmd('Flemma tool:execute')",
          "local text",
          "vim.wait(30000, function()",
          "  text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')",
          "  local result = text:match('%*%*Tool Result:%*%*[^\\n]*\\n(.*)$')",
          "  return result ~= nil and result:find('session-done', 1, true) ~= nil",
          "end, 20)",
          "local f = io.open(" .. vim.inspect(out .. "/result") .. ", 'w')",
          "f:write(text)",
          "f:close()",
          "vim.cmd('qa!')",
        }, "\n")
      )
      os.remove(out .. "/result")
      local argv =
        { vim.v.progpath, "--headless", "-u", init, "-i", "NONE", "-c", "luafile " .. script, "-c", "cquit 1" }
      local r = h.run(argv, { XDG_CACHE_HOME = home .. "/.cache" }, project)
      local text = h.read(out .. "/result") or r.stderr
      return text:match("%*%*Tool Result:%*%*[^\n]*\n(.*)$") or text
    end
    local first =
      session("echo kept-" .. secret .. " > /tmp/kept.txt; sleep 1000." .. marker .. " >/dev/null 2>&1 & echo written")
    assert.truthy(first:find("written", 1, true), first)
    local look = "pgrep -f 'sleep 1000[.]" .. marker .. "' >/dev/null && echo ALIVE | tr A-Z a-z || echo gone"
    local second = session("cat /tmp/kept.txt; " .. look)
    h.rmdir(out)
    assert.truthy(second:find("kept-" .. secret, 1, true), second)
    -- the first Neovim's exit ended what its chat left running
    assert.matches("\ngone\n", "\n" .. second)
    assert.are.same({}, require("support.nvim").pids_with("sleep 1000." .. marker))
  end)

  it("passes Flemma's tools.bash.env, but not credential-like names", function()
    setup_flemma({ tools = { bash = { env = { PROJECT_MODE = "dev", DEPLOY_TOKEN = "t0k" } } } })
    local text = execute(project .. "/h.chat", "bash", {
      label = "t",
      command = 'echo "mode=$PROJECT_MODE token=${DEPLOY_TOKEN:-none}"',
      timeout = 20,
    })
    assert.matches("mode=dev token=none", text)
  end)

  it("denies read of a hidden path and write of a protected one, with the reason", function()
    setup_flemma()
    vim.cmd("edit " .. vim.fn.fnameescape(project .. "/i.chat"))
    local bufnr = vim.api.nvim_get_current_buf()
    local approval = require("flemma.tools.approval")
    local ctx = { bufnr = bufnr, tool_id = "toolu_x" }
    local notes, original = {}, vim.notify
    vim.notify = function(msg)
      notes[#notes + 1] = msg
    end
    local read = approval.resolve("read", { label = "r", path = home .. "/.ssh/id_test" }, ctx)
    local write = approval.resolve("write", { label = "w", path = ".envrc", content = "x" }, ctx)
    local fine = approval.resolve("read", { label = "r", path = "README.md" }, ctx)
    -- the host's /tmp is out of the sandbox's view, but Flemma's own saved
    -- outputs there stay readable for its read tool
    local other_tmp = approval.resolve("read", { label = "r", path = "/tmp/other.txt" }, ctx)
    local flemma_out = approval.resolve("read", { label = "r", path = "/tmp/flemma_bash_x_1.txt" }, ctx)
    vim.wait(100)
    vim.notify = original
    assert.are.equal("deny", read)
    assert.are.equal("deny", write)
    assert.are_not.equal("deny", fine)
    assert.are.equal("deny", other_tmp)
    assert.are_not.equal("deny", flemma_out)
    local all = table.concat(notes, "\n")
    assert.truthy(all:find("blocked: hidden (private home (not in policy.home_allow))", 1, true), all)
    assert.truthy(all:find(".envrc blocked: protected (deny_write .envrc)", 1, true), all)
    -- Flemma's own backend: Flemma's rules, not ours
    setup_flemma({ sandbox = { backend = "bwrap" } })
    assert.are_not.equal("deny", approval.resolve("read", { label = "r", path = home .. "/.ssh/id_test" }, ctx))
  end)

  describe("the git tool module", function()
    local origin, origin_base, playground
    local function host_git(args, cwd)
      local env = { GIT_CONFIG_GLOBAL = "/dev/null", GIT_CONFIG_NOSYSTEM = "1" }
      local r = h.run(vim.list_extend({ "git" }, args), env, cwd)
      assert(r.code == 0, table.concat(args, " ") .. ": " .. r.stderr)
    end

    before_each(function()
      -- a repository to clone, in the project (the git tool clones local
      -- repositories from the project and the playground only): file://
      -- needs no network but git tells clone from local operations by the
      -- subcommand alone
      origin_base = project .. "/origin-base"
      origin = origin_base .. "/origin"
      vim.fn.mkdir(origin, "p")
      host_git({ "init", "-q", "-b", "main" }, origin)
      h.write(origin .. "/f.txt", "from origin\n")
      host_git({ "add", "f.txt" }, origin)
      host_git({ "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one" }, origin)
      playground = home .. "/.local/share/flemma-sandbox/playground"
      vim.env.XDG_DATA_HOME = nil
    end)
    after_each(function()
      vim.fn.delete(origin_base, "rf")
    end)

    -- Flemma's rw_paths without ~/.local/share: the playground is writable
    -- only because the git tool asks for it
    local narrow = { rw_paths = { "urn:flemma:cwd" } }

    it("clones into the playground through flemma-sandbox's backend; bash cannot write there", function()
      setup_flemma({ tools = { modules = { "flemma_sandbox.flemma.tools" } }, sandbox = { policy = narrow } })
      local input = { label = "c", args = { "clone", "-q", "file://" .. origin } }
      local text = execute(project .. "/j.chat", "git", input)
      assert.matches("cloned into " .. vim.pesc(playground .. "/origin"), text)
      assert.are.equal("from origin\n", h.read(playground .. "/origin/f.txt"))
      -- control: the same policy keeps a bash command out of the playground
      local touch = { label = "t", command = "touch " .. playground .. "/x", timeout = 20 }
      execute(project .. "/k.chat", "bash", touch)
      -- the playground is in the private home there: the file ends with the command
      assert.are.equal(0, vim.fn.filereadable(playground .. "/x"))
    end)

    it("runs local subcommands sandboxed: status works, the key stays hidden", function()
      setup_flemma({ tools = { modules = { "flemma_sandbox.flemma.tools" } } })
      host_git({ "init", "-q", "-b", "main" }, project)
      local text = execute(project .. "/l.chat", "git", { label = "s", args = { "status" } })
      assert.matches("On branch main", text)
      local diff = { label = "s", args = { "diff", "--no-index", "/dev/null", home .. "/.ssh/id_test" } }
      text = execute(project .. "/m.chat", "git", diff)
      assert.is_nil(text:find(secret, 1, true), text)
      -- control: under Flemma's own bwrap backend git reads the key
      setup_flemma({ tools = { modules = { "flemma_sandbox.flemma.tools" } }, sandbox = { backend = "bwrap" } })
      text = execute(project .. "/m2.chat", "git", diff)
      assert.truthy(text:find(secret, 1, true), text)
    end)

    it("refuses network subcommands when Flemma's policy has no network, with the reason", function()
      setup_flemma({
        tools = { modules = { "flemma_sandbox.flemma.tools" } },
        sandbox = { policy = { network = false } },
      })
      local text = execute(project .. "/n.chat", "git", { label = "c", args = { "clone", "file://" .. origin } })
      assert.matches("needs the network, and Flemma's sandbox.policy.network is off", text)
      assert.are.equal(0, vim.fn.isdirectory(playground .. "/origin"))
    end)

    it("always asks before a clone outside the playground, even when git is auto-approved", function()
      setup_flemma({ tools = { modules = { "flemma_sandbox.flemma.tools" }, auto_approve = { "git" } } })
      vim.cmd("edit " .. vim.fn.fnameescape(project .. "/o.chat"))
      local ctx = { bufnr = vim.api.nvim_get_current_buf(), tool_id = "toolu_y" }
      local approval = require("flemma.tools.approval")
      local outside = { label = "c", args = { "clone", "file://" .. origin, project .. "/dest" } }
      local inside = { label = "c", args = { "clone", "file://" .. origin } }
      assert.are.equal("require_approval", approval.resolve("git", outside, ctx))
      -- control: the same auto_approve lets a clone into the playground through
      assert.are.equal("approve", approval.resolve("git", inside, ctx))
      -- a repository write runs on the host: asked, like the clone above
      assert.are.equal(
        "require_approval",
        approval.resolve("git", { label = "c", args = { "commit", "-m", "x" } }, ctx)
      )
      assert.are.equal("approve", approval.resolve("git", { label = "s", args = { "status" } }, ctx))
    end)

    it("commits on the host with no hook of the tree run; bash's git commit fails in the sandbox", function()
      setup_flemma({ tools = { modules = { "flemma_sandbox.flemma.tools" } } })
      -- :Flemma tool:execute runs past Flemma's resolvers: the tool itself
      -- asks before each write on the host, in the question window
      local questions = require("flemma_sandbox.questions")
      local prompt, asked, answer = questions.prompt, {}, "deny"
      finally(function()
        questions.prompt = prompt
      end)
      questions.prompt = function(question, respond)
        asked[#asked + 1] = question.lines[1]
        vim.schedule(function()
          respond(answer)
        end)
        return function() end
      end
      host_git({ "init", "-q", "-b", "main" }, project)
      local marker = project .. "/hook-ran"
      h.write(project .. "/.git/hooks/pre-commit", "#!/bin/sh\ntouch " .. marker .. "\n")
      vim.fn.setfperm(project .. "/.git/hooks/pre-commit", "rwxr-xr-x")
      h.write(project .. "/f.txt", "x\n")
      local commit = "git add f.txt && git -c user.name=t -c user.email=t@t commit -qm inside"
      local text = execute(project .. "/r.chat", "bash", { label = "c", command = commit, timeout = 20 })
      assert.matches("Read%-only file system", text)
      assert.are.equal(0, vim.fn.filereadable(marker))
      -- declined: nothing is staged
      text = execute(project .. "/s0.chat", "git", { label = "a", args = { "add", "f.txt" } })
      assert.matches("not run: the user declined git add on the host", text)
      assert.are.same({ "$ git add f.txt" }, asked)
      assert.are.equal("", h.run({ "git", "diff", "--cached", "--name-only" }, nil, project).stdout)
      answer = "once"
      execute(project .. "/s.chat", "git", { label = "a", args = { "add", "f.txt" } })
      assert.are.equal("f.txt\n", h.run({ "git", "diff", "--cached", "--name-only" }, nil, project).stdout)
      text = execute(project .. "/t.chat", "git", { label = "c", args = { "-c", "x=y", "commit" } })
      assert.matches("unsupported git subcommand", text)
      vim.env.GIT_AUTHOR_NAME, vim.env.GIT_AUTHOR_EMAIL = "t", "t@t"
      vim.env.GIT_COMMITTER_NAME, vim.env.GIT_COMMITTER_EMAIL = "t", "t@t"
      execute(project .. "/u.chat", "git", { label = "c", args = { "commit", "-qm", "by the tool" } })
      -- a hook would run on the host what the model wrote in the tree
      assert.are.equal(0, vim.fn.filereadable(marker), "no hook ran on the host")
      local log = h.run({ "git", "log", "--oneline" }, nil, project)
      assert.matches("by the tool", log.stdout)
      assert.are.same({ "$ git add f.txt", "$ git add f.txt", "$ git commit -qm 'by the tool'" }, asked)
      -- control: a plain git commit on the host runs the hook
      h.run({ "git", "commit", "-q", "--allow-empty", "-m", "by hand" }, nil, project)
      vim.env.GIT_AUTHOR_NAME, vim.env.GIT_AUTHOR_EMAIL = nil, nil
      vim.env.GIT_COMMITTER_NAME, vim.env.GIT_COMMITTER_EMAIL = nil, nil
      assert.are.equal(1, vim.fn.filereadable(marker), "the hook runs for a plain commit")
    end)
  end)

  it("uses no deprecated Neovim API on the bridge's paths", function()
    setup_flemma({ tools = { modules = { "flemma_sandbox.flemma.tools" } } })
    execute(project .. "/p.chat", "bash", { label = "t", command = "true", timeout = 20 })
    execute(project .. "/q.chat", "git", { label = "s", args = { "status" } })
    vim.cmd("silent FlemmaSandbox status")
    vim.cmd("checkhealth flemma_sandbox")
    vim.cmd("bwipeout!")
    vim.cmd("checkhealth vim.deprecated")
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    assert.matches("No deprecated functions detected", text)
  end)

  it("other load order: Flemma set up in init.lua, flemma-sandbox's plugin file after it", function()
    local out = h.tmpdir()
    local init = child_init(out, {
      "require('flemma_sandbox').setup({ policy = { limits = { processes = 55 } } })",
      "require('flemma').setup({ lsp = { enabled = false } })",
    })
    local script = out .. "/check.lua"
    h.write(
      script,
      table.concat({
        "local fs = require('flemma.sandbox')",
        "local argv = assert(fs.wrap_command({ 'bash', '-c', 'ulimit -u' }, 0))",
        "local f = io.open(" .. vim.inspect(out .. "/result") .. ", 'w')",
        "f:write(tostring(fs.detect_available_backend()) .. ' ' .. vim.fn.system(argv))",
        "f:close()",
        "vim.cmd('qa!')",
      }, "\n")
    )
    local argv = { vim.v.progpath, "--headless", "-u", init, "-i", "NONE", "-c", "luafile " .. script, "-c", "cquit 1" }
    local r = h.run(argv, nil, old_cwd)
    local got = h.read(out .. "/result")
    h.rmdir(out)
    assert.are.equal("flemma_sandbox 55\n", got, r.stderr)
  end)
end)
