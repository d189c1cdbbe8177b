--- tools/around.lua (run in Neovim; calls.lua, api/clone_mode.lua and the
--- notices stood in for, their own paths are calls_spec's, checkpoints_spec's
--- and the clone specs'): what happens around a standalone tool call. A
--- writing call in direct mode starts with a checkpoint, in clone mode
--- after the chat's copies are made (and is synced after); a reading call
--- only gets its number; the result is delivered before the sync.
local around = require("flemma_sandbox.tools.around")
local calls = require("flemma_sandbox.api.calls")
local workspaces = require("flemma_sandbox.api.clone_mode")
local notice = require("flemma_sandbox.base.notice")

describe("tools.around", function()
  local real, log, clone, said

  before_each(function()
    real = {
      start = calls.start,
      ended = calls.ended,
      is_clone = workspaces.is_clone,
      ensure = workspaces.ensure,
      sync = workspaces.sync,
      say = notice.say,
    }
    log, clone, said = {}, false, {}
    calls.start = function(bufnr, tool, label, checkpoint, done)
      log[#log + 1] = { "start", bufnr, tool, label, checkpoint }
      done({ n = 1, tool = tool }, log.checkpoint_errors or {})
    end
    calls.ended = function(call, result, extra, delivered)
      log[#log + 1] = { "ended", call, result, extra }
      delivered()
    end
    workspaces.is_clone = function()
      return clone
    end
    workspaces.ensure = function(_, done)
      log[#log + 1] = { "ensure" }
      done(log.ensure_errors or {})
    end
    workspaces.sync = function(_, done)
      log[#log + 1] = { "sync" }
      done(log.sync_errors or {})
    end
    notice.say = function(message, level)
      said[#said + 1] = { message, level }
    end
  end)

  after_each(function()
    calls.start, calls.ended = real.start, real.ended
    workspaces.is_clone, workspaces.ensure, workspaces.sync = real.is_clone, real.ensure, real.sync
    notice.say = real.say
  end)

  it("starts a writing call in direct mode with a checkpoint, labelled by its first line", function()
    local ran
    around.before("write", { lines = { "write src/a.lua", "more" } }, 4, function(call)
      ran = call
    end)
    assert.are.same({ { "start", 4, "write", "write: write src/a.lua", true } }, log)
    assert.are.same({ n = 1, tool = "write" }, ran)
  end)

  it("cuts the label at 200 characters and takes a request without lines", function()
    around.before("bash", { lines = { string.rep("x", 300) } }, 1, function() end)
    assert.are.equal("bash: " .. string.rep("x", 200), log[1][4])
    around.before("read", {}, 1, function() end)
    assert.are.equal("read: ", log[2][4])
  end)

  it("runs the call even when the checkpoint failed, saying so once per session", function()
    -- a fresh copy of the module: it keeps whether it said so
    local loaded = package.loaded["flemma_sandbox.tools.around"]
    package.loaded["flemma_sandbox.tools.around"] = nil
    local fresh = require("flemma_sandbox.tools.around")
    package.loaded["flemma_sandbox.tools.around"] = loaded
    log.checkpoint_errors = { "git is not installed" }
    local runs = 0
    for _ = 1, 2 do
      fresh.before("edit", { lines = { "edit x" } }, 1, function()
        runs = runs + 1
      end)
    end
    assert.are.equal(2, runs)
    assert.are.same({
      { "no checkpoint before this call (undo cannot go back past it): git is not installed", vim.log.levels.WARN },
    }, said)
  end)

  it("in clone mode makes the copies first and takes no checkpoint of the real tree", function()
    clone = true
    local ran = false
    around.before("bash", { lines = { "make" } }, 2, function()
      ran = true
    end)
    assert.is_true(ran)
    assert.are.same({ { "ensure" }, { "start", 2, "bash", "bash: make", false } }, log)
  end)

  it("in clone mode says why the copies could not be made, and runs the call", function()
    clone, log.ensure_errors = true, { "cannot make the copy" }
    local ran = false
    around.before("git", { lines = { "git commit" } }, 2, function()
      ran = true
    end)
    assert.is_true(ran)
    assert.are.same({ { "cannot make the copy", vim.log.levels.WARN } }, said)
  end)

  it("does not make copies for a reading call in clone mode", function()
    clone = true
    around.before("read", { lines = { "read a" } }, 2, function() end)
    assert.are.same({ { "start", 2, "read", "read: read a", true } }, log)
  end)

  it("after a call delivers its result, then syncs a writing call's copies in clone mode", function()
    clone = true
    local result = { content = "ok", sandbox_runs = { "r" } }
    around.after("bash", 2, { n = 1 }, result, function()
      log[#log + 1] = { "delivered" }
    end)
    assert.are.same({ { "ended", { n = 1 }, result, { "r" } }, { "delivered" }, { "sync" } }, log)
  end)

  it("syncs nothing in direct mode or for a reading call, and says a failed sync", function()
    around.sync("bash", 1)
    clone = true
    around.sync("read", 1)
    assert.are.same({}, log)
    log.sync_errors = { "sync failed" }
    around.sync("write", 1)
    assert.are.same({ { "sync failed", vim.log.levels.WARN } }, said)
  end)
end)
