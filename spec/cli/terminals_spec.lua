--- A sandbox's key is its policy: runs of one name from terminals with
--- different environments (PATH, TERM) join one sandbox, each command
--- with its own environment; a change of the policy starts it again and
--- says which setting changed, from what to what.
local cli = require("support.cli")

describe("flemma-sandbox run from two terminals", function()
  local w
  cli.each_world(function(world)
    w = world
  end)

  --- Starts a run with extra environment (a job), as another terminal.
  ---@param args string[]
  ---@param env table<string, string>
  ---@return integer job
  ---@return integer job, { stderr: string, code: integer|nil } out filled as it runs
  local function start(args, env)
    local out = { stderr = "" }
    local job = vim.fn.jobstart(vim.list_extend({ cli.BIN }, args), {
      cwd = w.proj,
      env = cli.env(w, env),
      stderr_buffered = true,
      on_stderr = function(_, data)
        out.stderr = table.concat(data, "\n")
      end,
      on_exit = function(_, code)
        out.code = code
      end,
    })
    assert(job > 0, "cannot start the command line")
    return job, out
  end

  local base_path = os.getenv("PATH")

  it("share the sandbox and its processes, each command with its own PATH and TERM", function()
    local marker = string.format("sleep 45.%06d", math.random(0, 999999))
    local first = { PATH = w.base .. "/first-bin:" .. base_path, TERM = "xterm" }
    local job = start(
      { "run", "--direct", "web", "--", "sh", "-c", 'printf "%s|%s" "$PATH" "$TERM" > /tmp/first; ' .. marker },
      first
    )
    finally(function()
      vim.fn.jobstop(job)
    end)
    assert.truthy(
      cli.eventually(function()
        return cli.host_pids(marker) ~= ""
      end),
      "the first run did not start"
    )
    local second = { PATH = w.base .. "/second-bin:" .. base_path, TERM = "dumb" }
    local r = cli.run(
      w,
      { "run", "--direct", "web", "--", "sh", "-c", 'ps -eo args; printf "%s|%s\\n" "$PATH" "$TERM"; cat /tmp/first' },
      { env = second }
    )
    assert.are.equal(0, r.code, r.stderr)
    assert.is_nil(r.stderr:find("started again", 1, true), r.stderr)
    -- the first run's process is there, in the same sandbox
    assert.truthy(r.stdout:find(marker, 1, true), r.stdout)
    assert.truthy(cli.host_pids(marker) ~= "", "the first run's process was stopped")
    -- each its own environment
    assert.truthy(r.stdout:find(second.PATH .. "|dumb\n", 1, true), r.stdout)
    assert.truthy(r.stdout:find(first.PATH .. "|xterm", 1, true), r.stdout)
  end)

  it("start again on a policy change (control), naming the setting with its old and new value", function()
    local marker = string.format("sleep 46.%06d", math.random(0, 999999))
    cli.setup(w, { policy = { network = false } })
    local job, first = start({ "run", "--direct", "net", "--", "sh", "-c", marker }, { PATH = base_path })
    finally(function()
      vim.fn.jobstop(job)
    end)
    assert.truthy(
      cli.eventually(function()
        return cli.host_pids(marker) ~= ""
      end),
      "the first run did not start"
    )
    cli.setup(w, { policy = { network = "host" } })
    local r = cli.run(w, { "run", "--direct", "net", "--", "true" }, { env = { PATH = base_path } })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("started again: policy%.network: false %-> host", r.stderr)
    assert.truthy(r.stderr:find("what ran in it was stopped", 1, true), r.stderr)
    assert.truthy(
      cli.eventually(function()
        return cli.host_pids(marker) == ""
      end),
      "what ran in the old sandbox still runs"
    )
    -- the first terminal's run ends, saying why
    assert.truthy(vim.wait(10000, function()
      return first.code ~= nil and first.stderr ~= ""
    end, 20))
    assert.are_not.equal(0, first.code)
    assert.truthy(
      first.stderr:find(
        "ended while the command ran: another call started it again: policy.network: false -> host",
        1,
        true
      ),
      first.stderr
    )
  end)
end)
