local core = require("flemma_sandbox.core")
local files = require("flemma_sandbox.tools.files")
local h = require("support.helpers")
local command_notes = require("flemma_sandbox.tools.command_notes")
local live_notes = require("flemma_sandbox.tools.live_notes")

describe("command_notes.classify", function()
  local simple = { "ls", "ls -la /tmp", "  git status", "grep -r 'a b' .", 'echo "$HOME"', "cat ./file" }
  local complex = {
    "ls && rm x",
    "ls || true",
    "ls | wc -l",
    "ls; rm x",
    "echo $(id)",
    "echo `id`",
    "ls > out",
    "cat < in",
    "(cd /; ls)",
    "sleep 1 &",
    "ls\nrm x",
    "PATH=/tmp ls",
    "",
  }
  for _, cmd in ipairs(simple) do
    it("simple: " .. cmd, function()
      assert.is_true((command_notes.classify(cmd)))
    end)
  end
  for _, cmd in ipairs(complex) do
    it("complex: " .. cmd:gsub("\n", "\\n"), function()
      assert.is_false((command_notes.classify(cmd)))
    end)
  end

  it("names the program of a simple command", function()
    assert.are.equal("ls", command_notes.program("  ls -la"))
    assert.are.equal("/usr/bin/env", command_notes.program("'/usr/bin/env' x"))
  end)
end)

describe("command_notes on output and records", function()
  it("strips ANSI colours, cursor movement and titles, and trailing white space", function()
    local text = "\27[1;31mred\27[0m  \n\27]0;title\7x\27[2K\27[1G\n\n  "
    assert.are.equal("red\nx", command_notes.trim(command_notes.strip_ansi(text)))
  end)

  it("recognizes network failures", function()
    for _, msg in ipairs({
      "curl: (6) Could not resolve host: example.org",
      "Temporary failure in name resolution",
      "connect: Network is unreachable",
      "fatal: unable to access 'https://x/': ...",
      "Connection refused",
    }) do
      assert.is_true(command_notes.looks_like_network_failure(msg), msg)
    end
    assert.is_false(command_notes.looks_like_network_failure("No such file or directory"))
  end)

  it("finds the paths of denied reads and writes in the usual messages", function()
    local stderr = table.concat({
      "bash: line 1: /etc/hosts: Read-only file system",
      "touch: cannot touch '/usr/x': Read-only file system",
      "sh: 1: cannot create /home/u/.bashrc: Read-only file system",
      "rm: cannot remove '/var/tmp/h/.ssh': Read-only file system",
      "cat: /home/u/.aws/credentials: Permission denied",
      "bash: line 1: sub/.envrc: Read-only file system",
      "mount: /mnt: Operation not permitted",
      "cat: .env: Permission denied",
      "cat: /h/.ssh/id: No such file or directory",
      "flemma-sandbox-host: cannot run /opt/x/flemma-sandbox-proxy: No such file or directory",
      "some other error",
    }, "\n")
    assert.are.same({
      { path = "/etc/hosts", errno = "EROFS" },
      { path = "/usr/x", errno = "EROFS" },
      { path = "/home/u/.bashrc", errno = "EROFS" },
      { path = "/var/tmp/h/.ssh", errno = "EROFS" },
      { path = "/home/u/.aws/credentials", errno = "EACCES" },
      { path = "sub/.envrc", errno = "EROFS" },
      { path = "/mnt", errno = "EPERM" },
      { path = ".env", errno = "EACCES" },
      { path = "/h/.ssh/id", errno = "ENOENT" },
    }, command_notes.denied_paths(stderr))
  end)

  it("names the resource limit a failed command hit", function()
    local limits = { memory_mb = 8192, file_size_mb = 1, cpu_seconds = 2, open_files = 16, processes = false }
    local function notes(r)
      r.stdout, r.stderr = r.stdout or "", r.stderr or ""
      return table.concat(command_notes.limit_notes(r, limits), "\n")
    end
    assert.matches(
      "policy.limits.memory_mb = 8192 MiB; raise it or set it to false %(sanitizers",
      notes({
        exit_code = 134,
        stderr = "==1==ERROR: ReserveShadowMemoryRange failed while trying to map",
      })
    )
    assert.matches("policy.limits.file_size_mb = 1 MiB", notes({ exit_code = 153, signal = 25 }))
    assert.matches("policy.limits.cpu_seconds = 2 s", notes({ exit_code = 152, signal = 24 }))
    assert.matches("policy.limits.open_files = 16;", notes({ exit_code = 1, stderr = "bash: Too many open files" }))
    -- a limit that is off is never blamed; success gets no note
    assert.are.equal("", notes({ exit_code = 254, stderr = "bash: fork: retry: Resource temporarily unavailable" }))
    assert.are.equal("", notes({ exit_code = 0, stderr = "Too many open files" }))
  end)

  it("knows curl's, wget's, git's, pip's and npm's words for a failed network", function()
    for _, line in ipairs({
      "curl: (7) Failed to connect to example.com port 443 after 3 ms: Couldn't connect to server",
      "curl: (6) Could not resolve host: example.com",
      "wget: unable to resolve host address 'example.com'",
      "fatal: unable to access 'https://example.com/r.git/': Could not resolve host: example.com",
      "WARNING: Retrying ... NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection>: "
        .. "Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')",
      "npm ERR! request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org",
    }) do
      assert.is_true(command_notes.looks_like_network_failure(line), line)
    end
    assert.is_false(command_notes.looks_like_network_failure("make: *** [all] Error 2"))
  end)

  it("says the network is off by policy", function()
    assert.matches("policy.network = false", command_notes.NETWORK_HINT)
  end)

  it("makes notes from the records of a stop and of the proxy, and none from other records", function()
    local records = {
      { type = "moved", run = "this", from = "/p/.envrc", to = "/q/1/.envrc" },
      { type = "stopped", reason = "time_limit", ms = "1000" },
      { type = "stopped", reason = "disk_reserve", why = "x", root = "/p", free_mb = "10", reserve_mb = "2048" },
      { type = "stopped", reason = "protection_changed", why = "/p/.env, hidden, was replaced" },
      { type = "blocked", host = "evil.test", why = "evil.test is not in allow_domains" },
      { type = "unreachable", host = "ok.test", why = "cannot connect" },
    }
    local stops = command_notes.stop_notes(records)
    assert.are.equal(2, #stops)
    assert.matches("only 10 MiB were free on the disk of /p %(policy%.limits%.disk_reserve_mb = 2048%)", stops[1])
    assert.matches("^%[sandbox%] stopped: /p/%.env, hidden, was replaced", stops[2])
    local net = command_notes.network_notes(records)
    assert.are.equal(2, #net)
    assert.matches("^%[sandbox%] blocked evil%.test: ", net[1])
    assert.matches("^%[sandbox%] ok%.test is allowed, but could not be reached", net[2])
    assert.are.same({}, command_notes.stop_notes(nil))
    assert.are.same({}, command_notes.network_notes({}))
  end)

  it("marks a restart's settings that the chat's frontmatter sets, and only those", function()
    local why = "policy.network: allowlist -> false; policy.rw_paths: added /a; "
      .. "policy.limits.memory_mb: 1 -> 2; and 3 more"
    local sets = { ["policy.network"] = true, ["policy.rw_paths"] = true }
    local stops = command_notes.stop_notes({ { type = "restarted", why = why } }, false, function(name)
      return sets[name]
    end)
    assert.are.equal(
      "[sandbox] policy.network: allowlist -> false (set by this chat's frontmatter); "
        .. "policy.rw_paths: added /a (set by this chat's frontmatter); policy.limits.memory_mb: 1 -> 2; "
        .. "and 3 more: this chat's sandbox was started again, what ran in it was stopped",
      stops[1]
    )
    -- without the question, or when it fails, nothing is marked
    assert.are.equal(why, live_notes.mark_frontmatter(why, nil))
    local other = "a file it protects or hides now was not so when it started"
    assert.are.equal(
      other,
      live_notes.mark_frontmatter(other, function()
        return true
      end)
    )
    assert.are.equal(
      why,
      live_notes.mark_frontmatter(why, function()
        error("no config")
      end)
    )
  end)
end)

describe("the write question", function()
  it("names the target and size and shows the start of the content, marked", function()
    local content = {}
    for i = 1, 20 do
      content[i] = "line " .. i
    end
    local text = table.concat(content, "\n") .. "\n"
    local lines = files.write_question("/p/a.txt", text)
    assert.are.equal("write " .. #text .. " bytes (20 lines) to /p/a.txt", lines[1])
    assert.are.equal("| line 1", lines[3])
    assert.are.equal("| line " .. files.QUESTION_CONTENT_LINES, lines[2 + files.QUESTION_CONTENT_LINES])
    assert.are.equal("(8 more lines)", lines[#lines])
  end)

  it("shows a short content whole, a last line without newline, and an empty file", function()
    assert.are.same({ "write 6 bytes (2 lines) to /p/b", "", "| a", "| b c" }, files.write_question("/p/b", "a\nb c\n"))
    assert.are.same({ "write 3 bytes (2 lines) to /p/b", "", "| a", "| b" }, files.write_question("/p/b", "a\nb"))
    assert.are.same({ "write 0 bytes (0 lines) to /p/b", "" }, files.write_question("/p/b", ""))
  end)
end)

describe("edit's uniqueness rule", function()
  it("replaces a unique string", function()
    assert.are.equal("a X c", files.apply_edit("a b c", { oldText = "b", newText = "X" }))
  end)
  it("fails when oldText is missing", function()
    local out, err = files.apply_edit("a b c", { oldText = "z", newText = "X" })
    assert.is_nil(out)
    assert.matches("not found", err)
  end)
  it("fails when oldText is not unique", function()
    local out, err = files.apply_edit("b b b", { oldText = "b", newText = "X" })
    assert.is_nil(out)
    assert.matches("occurs 3 times", err)
  end)
  it("treats oldText as plain text, not a pattern", function()
    assert.are.equal("x(%d)y", files.apply_edit("x.*y", { oldText = ".*", newText = "(%d)" }))
  end)
end)

describe("core.write_atomic", function()
  local dir
  before_each(function()
    dir = h.tmpdir()
    h.sh("mkdir " .. h.shell_quote(dir .. "/root") .. " " .. h.shell_quote(dir .. "/outside"))
  end)
  after_each(function()
    h.rmdir(dir)
  end)

  it("replaces a file, keeping its mode, and creates missing folders", function()
    h.write(dir .. "/root/f", "old")
    h.sh("chmod 640 " .. h.shell_quote(dir .. "/root/f"))
    assert.is_true(core.write_atomic(dir .. "/root", "f", "new"))
    assert.are.equal("new", h.read(dir .. "/root/f"))
    assert.are.equal("640\n", h.run({ "stat", "-c", "%a", dir .. "/root/f" }).stdout)
    assert.is_true(core.write_atomic(dir .. "/root", "a/b/c.txt", "deep"))
    assert.are.equal("deep", h.read(dir .. "/root/a/b/c.txt"))
  end)

  it("does not follow a symlink below the root, folder or file", function()
    h.write(dir .. "/outside/target", "keep")
    h.sh("ln -s ../outside " .. h.shell_quote(dir .. "/root/link"))
    h.sh("ln -s ../outside/target " .. h.shell_quote(dir .. "/root/file-link"))
    local ok, err = core.write_atomic(dir .. "/root", "link/target", "evil")
    assert.is_nil(ok)
    assert.matches("symlink", err)
    ok, err = core.write_atomic(dir .. "/root", "file-link", "evil")
    assert.is_nil(ok)
    assert.matches("symlink", err)
    assert.are.equal("keep", h.read(dir .. "/outside/target"))
  end)

  it("make_dirs makes the whole chain and gives the last folder its mode", function()
    assert.is_true(core.make_dirs(dir .. "/x/y/z", tonumber("700", 8)))
    assert.are.equal("700\n", h.run({ "stat", "-c", "%a", dir .. "/x/y/z" }).stdout)
    assert.are.same({ nil, "make_dirs: path must be absolute" }, { core.make_dirs("relative") })
    assert.has_error(function()
      core.make_dirs(dir .. "/w", -1)
    end)
  end)

  it("refuses .. and absolute paths", function()
    assert.is_nil((core.write_atomic(dir .. "/root", "../outside/x", "x")))
    assert.is_nil((core.write_atomic(dir .. "/root", "/etc/passwd", "x")))
    assert.is_nil((core.write_atomic("relative", "x", "x")))
  end)

  it("leaves the old content and no temporary file when a write fails half-way", function()
    local ffi = require("ffi")
    pcall(
      ffi.cdef,
      [[
      struct flemma_rlimit { unsigned long cur, max; };
      int getrlimit(int resource, struct flemma_rlimit *rlim);
      int setrlimit(int resource, const struct flemma_rlimit *rlim);
      void (*signal(int sig, void (*handler)(int)))(int);
    ]]
    )
    local RLIMIT_FSIZE, SIGXFSZ = 1, 25
    h.write(dir .. "/root/f", "old content")
    local saved = ffi.new("struct flemma_rlimit")
    ffi.C.getrlimit(RLIMIT_FSIZE, saved)
    local low = ffi.new("struct flemma_rlimit", 4096, saved.max)
    ffi.C.signal(SIGXFSZ, ffi.cast("void (*)(int)", 1)) -- SIG_IGN: the write fails with EFBIG
    ffi.C.setrlimit(RLIMIT_FSIZE, low)
    local ok, err = core.write_atomic(dir .. "/root", "f", string.rep("x", 100000))
    ffi.C.setrlimit(RLIMIT_FSIZE, saved)
    assert.is_nil(ok)
    assert.matches("cannot write f", err)
    assert.are.equal("old content", h.read(dir .. "/root/f"))
    assert.are.equal("f\n", h.run({ "ls", "-A", dir .. "/root" }).stdout)
  end)
end)
