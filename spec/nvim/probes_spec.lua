--- What the first tool call would wait for on the main thread (the options
--- bwrap knows, what the helper can do) is read in the background when
--- the first chat buffer opens (bwrap.check_in_background).
local MODULES = {
  "flemma_sandbox.backends.bwrap_probe",
  "flemma_sandbox.backends.helper",
  "flemma_sandbox.backends.bwrap",
}

--- Fresh copies of the probe, the helper's client and the backend, with
--- empty caches; the loaded ones are put back by restore().
local function fresh()
  local saved = {}
  for _, name in ipairs(MODULES) do
    saved[name] = package.loaded[name]
    package.loaded[name] = nil
  end
  local mods = {
    probe = require("flemma_sandbox.backends.bwrap_probe"),
    helper = require("flemma_sandbox.backends.helper"),
    bwrap = require("flemma_sandbox.backends.bwrap"),
  }
  function mods.restore()
    for _, name in ipairs(MODULES) do
      package.loaded[name] = saved[name]
    end
  end
  return mods
end

--- Calls each of fns with io.popen noting its command and failing (so no
--- cache is filled from it); returns the commands.
local function popens(...)
  local real, calls = io.popen, {}
  io.popen = function(cmd) -- luacheck: ignore 122
    calls[#calls + 1] = cmd
    error("popen")
  end
  for _, fn in ipairs({ ... }) do
    pcall(fn)
  end
  io.popen = real -- luacheck: ignore 122
  return calls
end

describe("the first chat's background probes", function()
  it("leave nothing for the first tool call to run on the main thread", function()
    local m = fresh()
    local done
    m.bwrap.check_in_background({}, function(ok)
      done = ok
    end)
    assert.is_true(vim.wait(10000, function()
      return done ~= nil
    end, 5))
    assert.is_true(done)
    -- the --help and --info answers come after their process ends
    local features, info
    local function ask()
      return popens(function()
        features = m.probe.features({})
      end, function()
        info = m.helper.helper_info()
      end)
    end
    vim.wait(5000, function()
      return #ask() == 0
    end, 5)
    local calls = ask()
    m.restore()
    assert.are.same({}, calls)
    assert.is_true(features["unshare-user"], "bwrap --help was read")
    assert.are.equal("number", type(info.landlock))
    assert.is_true(info.seccomp ~= nil, "the helper's --info was read")
  end)

  it("control: without them, the first call runs bwrap --help and the helper's --info itself", function()
    local m = fresh()
    local calls = popens(function()
      m.probe.features({})
    end, function()
      m.helper.helper_info()
    end)
    m.restore()
    assert.are.equal(2, #calls)
    assert.matches("%-%-help", calls[1])
    assert.matches("%-%-info", calls[2])
  end)
end)
