local h = require("support.helpers")
local approval = require("flemma_sandbox.questions")
local sandbox = require("flemma_sandbox")
local tools = require("flemma_sandbox.tools")

local run = require("support.nvim").run_tool

describe("tools", function()
  local dir, asked, old_cwd, old_xdg
  before_each(function()
    dir = h.tmpdir()
    old_cwd, old_xdg = vim.fn.getcwd(), vim.env.XDG_DATA_HOME
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/proj") .. " " .. h.shell_quote(dir .. "/xdg"))
    vim.env.XDG_DATA_HOME = dir .. "/xdg"
    vim.cmd("cd " .. vim.fn.fnameescape(dir .. "/proj"))
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "$FLEMMA_PLAYGROUND" }, network = false },
      approval = { bash = "allow", git = "allow", read = "allow", write = "allow", edit = "allow" },
      tools = { output_limit = 200 },
    })
    approval.reset()
    asked = {}
    approval.prompt = function(question, cb)
      asked[#asked + 1] = question
      cb("deny")
    end
  end)
  after_each(function()
    vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
    vim.env.XDG_DATA_HOME = old_xdg
    sandbox.setup()
    approval.reset()
    h.rmdir(dir)
  end)

  it("describe the effective policy to the model", function()
    local text = tools.definition("bash", nil).description
    assert.truthy(
      text:find("read-only except: " .. dir .. "/proj, " .. dir .. "/xdg/flemma-sandbox/playground", 1, true)
    )
    assert.matches("network is off", text)
    assert.matches("Each command gets its own empty /tmp, [^:]*: what it writes there is gone when it ends", text)
    sandbox.setup({ policy = { network = "ask" } })
    local ask = tools.definition("bash", nil).description
    assert.matches("For any other host name the user is asked while the command waits", ask)
    -- a call says it needs the network; the policy decides what it reaches
    assert.are.equal("boolean", tools.definition("bash", nil).input_schema.properties.network.type)
    assert.matches("Only these paths are writable", tools.definition("write", nil).description)
    assert.are.equal("object", tools.definition("edit", nil).input_schema.type)
  end)

  it("bash keeps the whole of a long output in a file it names", function()
    local r = run("bash", { command = "seq 1 5000" })
    assert.is_true(r.truncated)
    assert.truthy(r.output_file)
    local whole = h.read(r.output_file)
    assert.are.equal(5000, select(2, whole:gsub("\n", "")))
    assert.matches("^1\n2\n", r.stdout)
    assert.matches("5000$", r.stdout)
    -- read reads it back, though it lies in the private home
    local back = run("read", { path = r.output_file, offset = 4999 })
    assert.are.equal("4999\n5000", back.content, vim.inspect(back))
    os.remove(r.output_file)
  end)

  it("bash keeps 100 MB of a 300 MB output, ends the file with a marker, and read reads its middle", function()
    -- seq 1 35000000 prints about 304 MB; line N is N
    local r = run("bash", { command = "seq 1 35000000" })
    assert.are.equal(0, r.exit_code)
    local size = (vim.uv or vim.loop).fs_stat(r.output_file).size
    local cap = 104857600
    assert.is_true(size > cap and size < cap + 200, "kept the cap and a marker line: " .. size)
    local f = assert(io.open(r.output_file, "rb"))
    f:seek("set", cap - 200)
    local tail = f:read("*a")
    f:close()
    local last = tail:match("([^\n]*)\n$")
    assert.matches("^%[flemma%-sandbox: output cut here: the first 104857600 of %d+ bytes were kept", last)
    assert.truthy(tail:find("\n" .. last, 1, true), "the marker starts a line of its own")
    local total = tonumber(last:match("of (%d+) bytes"))
    assert.is_true(total > 300000000, total)
    local note = table.concat(r.notes, "\n")
    assert.truthy(note:find("its first 104857600 of " .. total .. " bytes are in " .. r.output_file, 1, true), note)
    local middle = run("read", { path = r.output_file, offset = 5000000, limit = 3 })
    assert.are.equal("5000000\n5000001\n5000002", middle.content:match("^(.-)\n\n%["), vim.inspect(middle))
    assert.matches("more lines in file%. Use offset=5000003 to continue", middle.content)
    os.remove(r.output_file)
  end)

  it("find, grep and ls run in the sandbox, where a secret file is empty (control: sandbox off)", function()
    h.sh("mkdir -p sub/deep && printf 'needle one\\n' > sub/a.lua && printf 'needle two\\n' > sub/deep/b.lua")
    h.write(dir .. "/proj/.env", "needle=secret\n")
    assert.are.equal("sub/a.lua\nsub/deep/b.lua", run("find", { pattern = "*.lua" }).content)
    assert.are.equal("sub/deep/b.lua", run("find", { pattern = "sub/**/deep/*.lua", label = "x" }).content)
    assert.are.equal("No files found matching *.rs", run("find", { pattern = "*.rs" }).content)
    local found = run("grep", { pattern = "needle", glob = "*.lua" }).content
    assert.truthy(found:find("sub/a.lua:1:needle one", 1, true) and found:find("sub/deep/b.lua:1:needle two", 1, true))
    local all = run("grep", { pattern = "needle" })
    assert.is_nil((all.content or vim.inspect(all)):find("needle=secret", 1, true), vim.inspect(all))
    assert.matches("sub/a%.lua:1:needle one", all.content)
    assert.matches("^No matches found", run("grep", { pattern = "absent-word" }).content)
    assert.are.equal(".env\nsub/", run("ls", { path = "." }).content)
    assert.are.equal(".env\nsub/\nsub/a.lua\nsub/deep/", run("ls", { path = ".", max_depth = 2 }).content)
    -- control: unsandboxed, the same call sees the secret
    sandbox.setup({ enabled = false })
    assert.truthy(run("grep", { pattern = "needle" }).content:find(".env:1:needle=secret", 1, true))
  end)

  it("bash names the rule that blocked a write", function()
    local r = run("bash", { command = "echo x > /etc/flemma-blocked" })
    assert.are_not.equal(0, r.exit_code)
    assert.are.same({ "[sandbox] write to /etc/flemma-blocked blocked: not in rw_paths" }, r.notes)
    assert.is_nil(h.read("/etc/flemma-blocked"))
  end)

  it("bash gives at most 20 refused-path notes, then says how many more", function()
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD" }, network = false },
      approval = { bash = "allow" },
      tools = { output_limit = 100000 },
    })
    local r = run("bash", { command = "for i in $(seq 30); do echo x > /etc/flemma-blocked-$i; done; false" })
    assert.are.equal(21, #r.notes, vim.inspect(r.notes))
    assert.are.equal("[sandbox] write to /etc/flemma-blocked-20 blocked: not in rw_paths", r.notes[20])
    assert.are.equal("[sandbox] 10 more paths were refused", r.notes[21])
    assert.is_nil(h.read("/etc/flemma-blocked-1"))
  end)

  it("bash names the rule behind a protected write, a hidden read and a moved name", function()
    h.write(dir .. "/proj/.env", "TOKEN=s3cret\n")
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/proj/.git/hooks"))
    local r = run("bash", { command = "echo x > .nvim.lua; echo x > .git/hooks/post-merge; cat .env" })
    assert.is_nil(r.stdout:find("s3cret", 1, true))
    assert.are.equal(4, #r.notes, vim.inspect(r.notes)) -- the last: output was cut
    assert.matches(
      "^%[sandbox%] "
        .. vim.pesc(dir .. "/proj/.nvim.lua")
        .. " was created at a protected name and moved to the quarantine",
      r.notes[1]
    )
    assert.are.same({
      "[sandbox] write to " .. dir .. "/proj/.git/hooks/post-merge blocked: protected (deny_write .git/)",
      "[sandbox] read of " .. dir .. "/proj/.env blocked: hidden (secret_files)",
    }, { r.notes[2], r.notes[3] })
    assert.is_nil(h.read(dir .. "/proj/.nvim.lua"))
    assert.is_nil(h.read(dir .. "/proj/.git/hooks/post-merge"))
  end)

  it("bash names a refusal and the network hint also when the command ends with exit 0", function()
    h.sh("mkdir -p " .. h.shell_quote(dir .. "/proj/.git/hooks"))
    local r = run("bash", { command = "echo x > .git/hooks/post-merge; echo done" })
    assert.are.equal(0, r.exit_code)
    assert.are.same({
      "[sandbox] write to " .. dir .. "/proj/.git/hooks/post-merge blocked: protected (deny_write .git/)",
    }, r.notes)
    assert.is_nil(h.read(dir .. "/proj/.git/hooks/post-merge"))
    -- a connection refused in the command's own network namespace (network = false)
    r = run("bash", { command = "(exec 3<>/dev/tcp/127.0.0.1/9) || echo failed" })
    assert.are.equal(0, r.exit_code)
    assert.matches("Connection refused", r.stderr)
    assert.are.same({ require("flemma_sandbox.tools.command_notes").NETWORK_HINT }, r.notes)
  end)

  it("the chat file itself is read-only to the sandbox: its frontmatter sets the policy", function()
    local chat = dir .. "/proj/talk.chat"
    h.write(chat, "```lua\nflemma.opt.sandbox = { policy = { network = false } }\n```\n@You: hi\n")
    vim.cmd("edit " .. vim.fn.fnameescape(chat))
    local buf = vim.api.nvim_get_current_buf()
    local r = run("bash", { command = "sed -i 's/network = false/network = true/' talk.chat" }, { bufnr = buf })
    assert.are_not.equal(0, r.exit_code)
    assert.matches("network = false", h.read(chat))
    r = run("write", { path = "talk.chat", content = "flemma.opt.sandbox = false" }, { bufnr = buf })
    assert.matches("blocked: protected %(the chat file", r.error)
    vim.cmd("bwipeout!")
  end)

  it("read refuses hidden paths; write and edit refuse protected ones", function()
    h.write(dir .. "/proj/.env", "TOKEN=s3cret\n")
    h.write(dir .. "/proj/.gitmodules", "[submodule]\n")
    local r = run("read", { path = ".env" })
    assert.are.equal("read of " .. dir .. "/proj/.env blocked: hidden (secret_files)", r.error)
    r = run("write", { path = ".envrc", content = "evil" })
    assert.are.equal("write to " .. dir .. "/proj/.envrc blocked: protected (deny_write .envrc)", r.error)
    r = run("edit", { path = ".gitmodules", oldText = "[submodule]", newText = "evil" })
    assert.matches("blocked: protected %(deny_write %.gitmodules%)", r.error)
    assert.are.equal("[submodule]\n", h.read(dir .. "/proj/.gitmodules"))
    assert.is_nil(h.read(dir .. "/proj/.envrc"))
  end)

  it("bash names the resource limit a command ran into", function()
    sandbox.setup({
      policy = { rw_paths = { "$CWD" }, network = false, limits = { file_size_mb = 1 } },
      approval = { bash = "allow" },
    })
    local r = run("bash", { command = "head -c 3000000 /dev/zero > big" })
    assert.are_not.equal(0, r.exit_code)
    assert.truthy(
      vim.tbl_contains(
        r.notes or {},
        "[sandbox] the command may have hit policy.limits.file_size_mb = 1 MiB; raise it or set it to false"
      ),
      vim.inspect(r)
    )
    assert.is_true((vim.uv or vim.loop).fs_stat(dir .. "/proj/big").size <= 1048576)
  end)

  it("bash strips ANSI colours and honours a per-call timeout", function()
    local r = run("bash", { command = "printf '\\033[31mred\\033[0m   \\n'" })
    assert.are.equal("red", r.stdout)
    r = run("bash", { command = "sleep 5", timeout = 0.3 })
    assert.is_true(r.timed_out)
  end)

  it("read returns lines and parts, says where to go on, and refuses binary files", function()
    h.write(dir .. "/proj/t.txt", "a\nb\nc\n")
    assert.are.equal("a\nb\nc", run("read", { path = "t.txt" }).content)
    assert.are.equal(
      "b\n\n[1 more lines in file. Use offset=3 to continue.]",
      run("read", { path = "t.txt", offset = 2, limit = 1, label = "part" }).content
    )
    local beyond = run("read", { path = "t.txt", offset = 9 }).error
    assert.matches("Offset 9 is beyond end of file %(3 lines total%)", beyond)
    h.write(dir .. "/proj/bin", "x\0y")
    assert.matches("looks binary", run("read", { path = "bin" }).error)
    -- the size cap is on what one call returns, not on the file
    sandbox.setup({ tools = { read_max_bytes = 3 } })
    local r = run("read", { path = "t.txt" })
    assert.are.equal("a\n\n[Showing lines 1-1 of 3 (3 byte limit). Use offset=2 to continue.]", r.content)
  end)

  it("write and edit change files inside rw_paths only", function()
    assert.matches("Wrote 7 bytes", run("write", { path = "sub/new.txt", content = "one two" }).content)
    assert.are.equal("one two", h.read(dir .. "/proj/sub/new.txt"))
    assert.matches("Edited", run("edit", { path = "sub/new.txt", oldText = "two", newText = "2" }).content)
    assert.are.equal("one 2", h.read(dir .. "/proj/sub/new.txt"))
    assert.matches("not found", run("edit", { path = "sub/new.txt", oldText = "zzz", newText = "" }).error)
    h.sh("ln -s /etc " .. h.shell_quote(dir .. "/proj/etc-link"))
    assert.are.equal(
      "write to /etc/x blocked: not in rw_paths",
      run("write", { path = "etc-link/x", content = "" }).error
    )
  end)

  it("rejects bad input with a clear message", function()
    assert.are.equal("missing required input: command", run("bash", {}).error)
    assert.are.equal("input command must be a string", run("bash", { command = 5 }).error)
    assert.are.equal("unknown input: cmd", run("bash", { command = "x", cmd = 1 }).error)
    assert.are.equal("unknown tool: nope", run("nope", {}).error)
  end)

  it("honours deny from the approval settings and from frontmatter", function()
    sandbox.setup({ approval = { bash = "deny" } })
    assert.matches("not run: the approval setting for bash is deny", run("bash", { command = "true" }).error)
  end)

  it("git runs local commands in the sandbox and clones into the playground", function()
    local origin = dir .. "/proj/origin"
    h.sh(
      "git init -q "
        .. h.shell_quote(origin)
        .. " && cd "
        .. h.shell_quote(origin)
        .. " && echo x > f && git add f && git -c user.name=t -c user.email=t@t commit -qm first"
    )
    local r = run("git", { args = { "log", "--oneline" } }, { cwd = origin })
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.matches("first", r.stdout)

    r = run("git", { args = { "clone", origin } })
    assert.are.equal(0, r.exit_code, r.stderr)
    local clone = dir .. "/xdg/flemma-sandbox/playground/origin"
    assert.are.equal("x\n", h.read(clone .. "/f"))
    assert.matches("cloned into " .. clone:gsub("%p", "%%%0"), table.concat(r.notes, "\n"))

    -- into the project: needs the user's explicit yes, even with approval "allow"
    r = run("git", { args = { "clone", origin, "copy" } })
    assert.matches("not run: the user declined", r.error)
    assert.are.equal(1, #asked)
    assert.is_nil(h.read(dir .. "/proj/copy/f"))
    assert.matches("unsupported git subcommand: push", run("git", { args = { "push" } }).error)
  end)

  --- A bare repository under dir/served/r.git, ready for git's dumb HTTP
  --- (info/refs also under the name a smart client asks for first, for
  --- servers that take the query as part of the file name).
  local function served_repo()
    local served = dir .. "/served"
    h.sh(
      "git init -q "
        .. h.shell_quote(served .. "/src")
        .. " && cd "
        .. h.shell_quote(served .. "/src")
        .. " && echo fetched > f && git add f && git -c user.name=t -c user.email=t@t commit -qm first"
        .. " && git clone -q --bare . ../r.git && cd ../r.git && git update-server-info"
        .. " && cp info/refs 'info/refs?service=git-upload-pack'"
    )
    -- the proxy's test-only name map: repos.test is 127.0.0.2
    h.write(dir .. "/hosts", "repos.test 127.0.0.2\n")
    vim.env.FLEMMA_SANDBOX_PROXY_TEST, vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = "1", dir .. "/hosts"
    return served
  end

  local function allow_repos(allowed, extra)
    sandbox.setup({
      backend = "bwrap",
      policy = vim.tbl_extend("force", {
        rw_paths = { "$CWD", "$FLEMMA_PLAYGROUND" },
        network = "allowlist",
        allow_domains = allowed and { "repos.test" } or {},
      }, extra or {}),
      approval = { git = "allow" },
    })
  end

  it("git clones over HTTP through the allowlist proxy from an allowed host (control: not allowed)", function()
    local served = served_repo()
    local server = assert(io.popen("exec luajit " .. old_cwd .. "/spec/support/http.lua serve 127.0.0.2 " .. served))
    local port, pid = server:read("*l"):match("^port (%d+) pid (%d+)")
    finally(function()
      h.sh("kill " .. pid)
      server:close()
      vim.env.FLEMMA_SANDBOX_PROXY_TEST, vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = nil, nil
    end)
    local url = "http://repos.test:" .. port .. "/files/r.git"
    allow_repos(false)
    local r = run("git", { args = { "clone", url } })
    assert.are_not.equal(0, r.exit_code)
    local notes = table.concat(r.notes or {}, "\n")
    assert.matches("%[sandbox%] blocked repos%.test: repos%.test is not in allow_domains", notes)
    assert.is_nil(h.read(dir .. "/xdg/flemma-sandbox/playground/r/f"))
    allow_repos(true)
    r = run("git", { args = { "clone", url } })
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.are.equal("fetched\n", h.read(dir .. "/xdg/flemma-sandbox/playground/r/f"))
  end)

  it("an allowed host that does not answer gets its own note (the proxy's 502)", function()
    served_repo()
    finally(function()
      vim.env.FLEMMA_SANDBOX_PROXY_TEST, vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = nil, nil
    end)
    -- a port on 127.0.0.2 that nothing listens on: bind one, then close it
    local probe = vim.loop.new_tcp()
    probe:bind("127.0.0.2", 0)
    local port = probe:getsockname().port
    probe:close()
    allow_repos(true)
    local r = run("git", { args = { "clone", "http://repos.test:" .. port .. "/r.git" } })
    assert.are_not.equal(0, r.exit_code)
    local notes = table.concat(r.notes or {}, "\n")
    assert.matches(
      "%[sandbox%] repos%.test is allowed, but could not be reached from this machine: cannot connect",
      notes
    )
    assert.is_nil(notes:find("blocked repos.test", 1, true), notes)
  end)

  it(
    "a failed connection to 127.0.0.1 in allowlist mode says the sandbox has its own loopback (control: host)",
    function()
      h.sh("mkdir -p " .. h.shell_quote(dir .. "/served") .. " && echo hello > " .. h.shell_quote(dir .. "/served/x"))
      local server =
        assert(io.popen("exec luajit " .. old_cwd .. "/spec/support/http.lua serve 127.0.0.1 " .. dir .. "/served"))
      local port, pid = server:read("*l"):match("^port (%d+) pid (%d+)")
      finally(function()
        h.sh("kill " .. pid)
        server:close()
      end)
      -- bash's own /dev/tcp: no proxy, no curl needed
      local command = "exec 3<>/dev/tcp/127.0.0.1/"
        .. port
        .. " && printf 'GET /files/x HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
      local function network(mode)
        sandbox.setup({ backend = "bwrap", policy = { network = mode }, approval = { bash = "allow" } })
      end
      network("allowlist")
      local r = run("bash", { command = command })
      assert.are_not.equal(0, r.exit_code)
      assert.is_nil((r.stdout or ""):find("hello", 1, true), "the host's server is out of reach")
      local notes = table.concat(r.notes or {}, "\n")
      assert.truthy(notes:find("[sandbox] 127.0.0.1 in this sandbox is its own loopback", 1, true), notes)
      -- control: with the host's network the same command reaches the server, and no such note
      network("host")
      r = run("bash", { command = command })
      assert.are.equal(0, r.exit_code, r.stderr)
      assert.matches("hello", r.stdout)
      assert.is_nil(table.concat(r.notes or {}, "\n"):find("own loopback", 1, true))
    end
  )

  it("git clones over HTTPS through the proxy's CONNECT tunnel, certificate checked (control: not allowed)", function()
    if h.capture("command -v openssl") == "" then
      return pending("openssl is not installed")
    end
    local served = served_repo()
    -- a TLS server for repos.test on 127.0.0.2 (openssl serves the folder)
    h.sh(
      "cd "
        .. h.shell_quote(dir .. "/proj")
        .. " && openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=repos.test"
        .. " -addext subjectAltName=DNS:repos.test -keyout ../key.pem -out ca.crt -days 1 2>/dev/null"
    )
    local server = assert(
      io.popen(
        "cd "
          .. h.shell_quote(served)
          .. " && exec openssl s_server -WWW -accept 127.0.0.2:0 -cert ../proj/ca.crt -key ../key.pem 2>&1"
      )
    )
    local port
    repeat
      local line = server:read("*l")
      port = line and line:match("^ACCEPT 127%.0%.0%.2:(%d+)")
    until port or not line
    finally(function()
      h.sh("pkill -f " .. h.shell_quote("[o]penssl s_server -WWW -accept 127.0.0.2:0 -cert ../proj/ca.crt"))
      server:close()
      vim.env.FLEMMA_SANDBOX_PROXY_TEST, vim.env.FLEMMA_SANDBOX_PROXY_TEST_HOSTS = nil, nil
      vim.env.GIT_SSL_CAINFO = nil
    end)
    assert.truthy(port, "openssl s_server started")
    -- git inside checks the server's certificate against this one
    vim.env.GIT_SSL_CAINFO = dir .. "/proj/ca.crt" -- (*.pem would be a hidden secret file)
    local url = "https://repos.test:" .. port .. "/r.git"
    allow_repos(false, { env_allow = { "GIT_SSL_CAINFO" } })
    local r = run("git", { args = { "clone", url } })
    assert.are_not.equal(0, r.exit_code)
    assert.matches("blocked repos%.test: repos%.test is not in allow_domains", table.concat(r.notes or {}, "\n"))
    allow_repos(true, { env_allow = { "GIT_SSL_CAINFO" } })
    r = run("git", { args = { "clone", url } })
    assert.are.equal(0, r.exit_code, r.stderr)
    assert.are.equal("fetched\n", h.read(dir .. "/xdg/flemma-sandbox/playground/r/f"))
  end)

  describe("repository writes", function()
    local proj, marker
    before_each(function()
      proj = dir .. "/proj"
      marker = proj .. "/hook-ran"
      -- the user's repository with the user's own pre-commit hook
      h.sh(
        "cd "
          .. h.shell_quote(proj)
          .. " && git init -q . && git config user.name t && git config user.email t@t"
          .. " && printf '#!/bin/sh\\ntouch "
          .. marker
          .. "\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo x > f"
      )
    end)

    local function commits()
      return h.capture("cd " .. h.shell_quote(proj) .. " && git rev-list --all 2>/dev/null | wc -l"):gsub("%s", "")
    end

    it("bash's git commit fails inside, names the git tool, and commits nothing", function()
      local r = run("bash", { command = "git add f && git commit -qm evil" })
      assert.are_not.equal(0, r.exit_code)
      assert.matches("go through the git tool", table.concat(r.notes or {}, "\n"))
      assert.are.equal("0", commits())
      assert.is_nil(h.read(marker))
      -- control: without the rule for .git the commit lands
      sandbox.setup({
        backend = "bwrap",
        policy = { rw_paths = { "$CWD" }, network = false, deny_write = { "!.git/" } },
        approval = { bash = "allow" },
      })
      r = run("bash", { command = "git add f && git commit -qm inside" })
      assert.are.equal(0, r.exit_code, r.stderr)
      assert.are.equal("1", commits())
    end)

    it("the git tool commits on the host after the user agrees, with no hook of the tree run", function()
      assert.matches("not run: the user declined", run("git", { args = { "add", "f" } }).error)
      assert.are.equal(1, #asked, "asked although approval.git is allow")
      assert.matches("OUTSIDE the sandbox", table.concat(asked[1].lines or asked[1], "\n"))
      approval.prompt = function(question, cb)
        asked[#asked + 1] = question
        cb("once")
      end
      local r = run("git", { args = { "add", "f" } })
      assert.are.equal(0, r.exit_code, r.stderr)
      r = run("git", { args = { "commit", "-qm", "by the tool" } })
      assert.are.equal(0, r.exit_code, r.stderr)
      assert.are.equal("1", commits())
      -- the question shows the arguments as the shell would read them
      assert.are.equal("$ git commit -qm 'by the tool'", asked[#asked].lines[1])
      -- a hook would run on the host what the model wrote in the tree
      assert.is_nil(h.read(marker), "no hook ran on the host")
      -- control: git on the host without the tool's settings runs it
      h.sh("cd " .. h.shell_quote(proj) .. " && git commit -q --allow-empty -m by-hand")
      assert.truthy(h.read(marker), "the pre-commit hook runs for a plain git commit")
      assert.matches("is not allowed", run("git", { args = { "rebase", "--exec=touch x", "HEAD" } }).error)
      assert.matches("is not allowed", run("git", { args = { "rebase", "--exe=touch x", "HEAD" } }).error)
      assert.matches("transport ext:: is not allowed", run("git", { args = { "clone", "ext::sh -c touch% x" } }).error)
      assert.matches(
        "outside the project and the playground",
        run("git", { args = { "clone", "file://" .. dir .. "/elsewhere" } }).error
      )
    end)
  end)
end)
