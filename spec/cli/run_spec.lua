--- flemma-sandbox run: exit codes, input and output, the sandbox kept
--- between runs and joined while it runs, the user's saved setup() in
--- charge, clone mode's copy until apply.
local cli = require("support.cli")
local h = require("support.helpers")
local net = require("support.net")

describe("flemma-sandbox run", function()
  local w
  cli.each_world(function(world)
    w = world
  end)

  it("passes the command's exit code, output and input on", function()
    local r = cli.run(w, { "run", "--direct", "codes", "--", "sh", "-c", "echo out; echo err >&2; exit 7" })
    assert.are.equal(7, r.code, r.stderr)
    assert.are.equal("out\n", r.stdout)
    assert.matches("err", r.stderr)
    r = h.run(
      { "sh", "-c", "echo from-stdin | " .. h.shell_quote(cli.BIN) .. " run --direct codes -- cat" },
      cli.env(w),
      w.proj
    )
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("from-stdin\n", r.stdout)
    -- a command that is not there: 127, as a shell says
    r = cli.run(w, { "run", "--direct", "codes", "--", "no-such-command-here" })
    assert.are.equal(127, r.code)
  end)

  it("passes SIGTERM sent to flemma-sandbox on to the command, which leaves nothing running", function()
    local marker = string.format("sleep 66.%06d", math.random(0, 999999))
    local out = w.base .. "/term.out"
    local job = vim.fn.jobstart({
      "sh",
      "-c",
      "exec " .. h.shell_quote(cli.BIN) .. " run --direct term -- sh -c " .. h.shell_quote(
        "trap 'echo got-term; exit 3' TERM; " .. marker .. " & wait"
      ) .. " > " .. h.shell_quote(out),
    }, {
      cwd = w.proj,
      env = cli.env(w),
    })
    assert.truthy(
      cli.eventually(function()
        return cli.host_pids(marker) ~= ""
      end),
      "the command did not start"
    )
    vim.fn.jobstop(job) -- SIGTERM to flemma-sandbox
    assert.are.equal("got-term\n", cli.eventually(function()
      return h.read(out) == "got-term\n" and "got-term\n"
    end) or h.read(out))
    -- the command's own shell ended with 3; its sleep is gone with the call
    assert.are.equal("", cli.eventually(function()
      return cli.host_pids(marker) == "" and ""
    end) or "still running")
  end)

  it("keeps the sandbox's /tmp between runs of a name, and another name has its own", function()
    local r = cli.run(w, { "run", "--direct", "keep", "--", "sh", "-c", "echo kept > /tmp/note" })
    assert.are.equal(0, r.code, r.stderr)
    r = cli.run(w, { "run", "--direct", "keep", "--", "cat", "/tmp/note" })
    assert.are.equal("kept\n", r.stdout, r.stderr)
    -- control: another sandbox does not see it, nor does the host
    r = cli.run(w, { "run", "--direct", "other", "--", "cat", "/tmp/note" })
    assert.are_not.equal(0, r.code)
    assert.is_nil(h.read("/tmp/note"))
  end)

  it("joins a running sandbox: a second run sees the first one's processes", function()
    local marker = string.format("sleep 44.%06d", math.random(0, 999999))
    local job = cli.start(w, { "run", "--direct", "joined", "--", "sh", "-c", marker })
    finally(function()
      vim.fn.jobstop(job)
    end)
    assert.truthy(
      cli.eventually(function()
        return cli.host_pids(marker) ~= ""
      end),
      "the first run did not start"
    )
    local r = cli.run(w, { "run", "--direct", "joined", "--", "sh", "-c", "ps -eo args" })
    assert.are.equal(0, r.code, r.stderr)
    assert.truthy(r.stdout:find(marker, 1, true), r.stdout)
    assert.is_nil(r.stderr:find("started again", 1, true), r.stderr)
    -- control: another name is another sandbox
    r = cli.run(w, { "run", "--direct", "apart", "--", "sh", "-c", "ps -eo args" })
    assert.is_nil(r.stdout:find(marker, 1, true), r.stdout)
  end)

  it("applies the user's setup(): network off, and its control with the host's network", function()
    local function connect(server)
      return "exec 3<>/dev/tcp/127.0.0.1/" .. server.port .. " && echo connected"
    end
    -- control: with the host's network the command reaches the test's server
    local open = net.listen_kind("tcp4")
    cli.setup(w, { policy = { network = "host" } })
    local r = cli.run(w, { "run", "--direct", "net", "--", "bash", "-c", connect(open) })
    assert.are.equal("connected\n", r.stdout, r.stderr)
    assert.is_true(open.accepted())
    open.close()
    local closed = net.listen_kind("tcp4")
    cli.setup(w, { policy = { network = false } })
    r = cli.run(w, { "run", "--direct", "net", "--", "bash", "-c", connect(closed) })
    assert.are_not.equal(0, r.code)
    assert.is_false(closed.accepted())
    closed.close()
  end)

  it("in a git repository works on the sandbox's copy until apply; --direct writes the tree", function()
    local r = cli.run(w, { "run", "copy", "--", "sh", "-c", "echo new > b.txt && echo changed > a.txt && cat a.txt" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("changed\n", r.stdout)
    assert.is_nil(h.read(w.proj .. "/b.txt"))
    assert.are.equal("original\n", h.read(w.proj .. "/a.txt"))
    assert.matches("flemma%-sandbox diff copy", r.stderr)
    -- the copy is kept: the next run finds its own change
    r = cli.run(w, { "run", "copy", "--", "cat", "b.txt" })
    assert.are.equal("new\n", r.stdout, r.stderr)
    r = cli.run(w, { "diff", "copy" })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("%+%+%+ b/b%.txt", r.stdout)
    assert.matches("%+changed", r.stdout)
    r = cli.run(w, { "apply", "copy" })
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    assert.are.equal("new\n", h.read(w.proj .. "/b.txt"))
    assert.are.equal("changed\n", h.read(w.proj .. "/a.txt"))
    -- control: --direct writes the user's tree at once
    r = cli.run(w, { "run", "--direct", "straight", "--", "sh", "-c", "echo direct > c.txt" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("direct\n", h.read(w.proj .. "/c.txt"))
  end)

  it("shows home_overlay paths writable as the sandbox's copy; the host's stay as they were", function()
    vim.fn.mkdir(w.home .. "/.agent", "p")
    h.write(w.home .. "/.agent/settings.json", '{"model":"a"}\n')
    h.write(w.home .. "/.agent.json", '{"n":1}\n')
    local show = { "run", "--direct", "agent", "--", "sh", "-c", "cat ~/.agent/settings.json ~/.agent.json" }
    -- control: without the setting the agent's config is not there
    local r = cli.run(w, show)
    assert.are_not.equal(0, r.code)
    assert.is_nil(r.stdout:find("model", 1, true))
    cli.setup(w, { policy = { home_overlay = { "~/.agent", "~/.agent.json" } } })
    local write = "echo changed > ~/.agent/settings.json && echo new > ~/.agent/token && echo '{}' > ~/.agent.json"
    r = cli.run(w, { "run", "--direct", "agent", "--", "sh", "-c", write })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal('{"model":"a"}\n', h.read(w.home .. "/.agent/settings.json"))
    assert.are.equal('{"n":1}\n', h.read(w.home .. "/.agent.json"))
    assert.is_nil(h.read(w.home .. "/.agent/token"))
    -- the copy is kept between runs, until reset makes it again from the host's
    r = cli.run(w, show)
    assert.are.equal("changed\n{}\n", r.stdout, r.stderr)
    r = cli.run(w, { "reset", "agent" })
    assert.are.equal(0, r.code, r.stderr)
    r = cli.run(w, show)
    assert.are.equal('{"model":"a"}\n{"n":1}\n', r.stdout, r.stderr)
  end)

  it("refuses bad input naming the argument, and runs nothing unsandboxed", function()
    local r = cli.run(w, { "run", "--direct", "bad name", "--", "true" })
    assert.are.equal(2, r.code)
    assert.matches("NAME: expected a sandbox name", r.stderr)
    r = cli.run(w, { "run", "--bogus", "x" })
    assert.are.equal(2, r.code)
    assert.matches("unknown option '%-%-bogus'", r.stderr)
    r = cli.run(w, { "frobnicate" })
    assert.are.equal(2, r.code)
    assert.matches("unknown command 'frobnicate'", r.stderr)
    cli.setup(w, { enabled = false })
    r = cli.run(w, { "run", "--direct", "off", "--", "sh", "-c", "echo ran > ran.txt" })
    assert.are.equal(2, r.code)
    assert.matches("runs nothing unsandboxed", r.stderr)
    assert.is_nil(h.read(w.proj .. "/ran.txt"))
  end)
end)
