--- flemma-sandbox run: between runs of a name, what a run left is held
--- (stopped) when the sandbox works on the user's tree (--direct), and
--- goes on at the next run of the name, whose check sees what it writes;
--- on a copy (clone mode) it keeps running. The same hold as a chat's
--- (spec/nvim/live_between_spec.lua, csrc/exec/live_hold.c).
local cli = require("support.cli")
local h = require("support.helpers")
local n = require("support.nvim")

describe("flemma-sandbox run, between runs", function()
  local w
  cli.each_world(function(world)
    w = world
  end)

  --- A run that leaves `sh -c SCRIPT late.MARKER` in the background: it
  --- makes sub/.git 1 s later. The host pid of that shell.
  local function leave_late(args, marker)
    local script = "sleep 1; mkdir -p sub/.git && echo '[core]' > sub/.git/config; sleep 66." .. marker
    local run = vim.list_extend(vim.deepcopy(args), {
      "--",
      "sh",
      "-c",
      "sh -c " .. h.shell_quote(script) .. " late." .. marker .. " >/dev/null 2>&1 & sleep 0.3",
    })
    local r = cli.run(w, run)
    assert.are.equal(0, r.code, r.stderr)
    local pid = tonumber(cli.host_pids("sh -c sleep 1; mkdir.* late." .. marker):match("%d+"))
    assert.truthy(pid, "the run left it")
    return pid
  end

  it("holds what a --direct run left until the next run, whose check moves its late .git", function()
    local marker = string.format("%06d", math.random(0, 999999))
    local pid = leave_late({ "run", "--direct", "held" }, marker)
    n.pause(2500)
    assert.are.equal(0, vim.fn.isdirectory(w.proj .. "/sub/.git"), "nothing made between runs")
    assert.are.equal("T", n.state_of(pid), "held")
    local r = cli.run(w, { "run", "--direct", "held", "--", "sleep", "2" })
    assert.are.equal(0, r.code, r.stderr)
    assert.is_nil(h.read(w.proj .. "/sub/.git/config"), "its check moved it to the quarantine")
    local sleeping = tonumber(cli.host_pids("sleep 66." .. marker):match("%d+"))
    assert.truthy(sleeping, "it went on during the run")
    assert.are.equal("T", n.state_of(sleeping), "and is held again")
  end)

  it("control: on a copy (clone mode) what a run left keeps running between runs", function()
    local marker = string.format("%06d", math.random(0, 999999))
    local pid = leave_late({ "run", "copied" }, marker)
    n.pause(2500)
    assert.are_not.equal("T", n.state_of(pid), "it runs between runs")
    assert.truthy(cli.host_pids("sleep 66." .. marker):match("%d+"), "it went on")
    assert.are.equal(0, vim.fn.isdirectory(w.proj .. "/sub/.git"), "it wrote in the copy, not the tree")
  end)
end)
