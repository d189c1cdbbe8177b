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

--- The modules kept: the C core, and the loader's guard (a fresh one
--- would put itself in package.loaders again).
local KEPT = { ["flemma_sandbox.core"] = true, ["flemma_sandbox.base.installed"] = true }

--- Whether fresh_plugin makes a new copy of the module name.
---@param name string
---@return boolean
local function renewed(name)
  return name:match("^flemma_sandbox") ~= nil and not KEPT[name]
end

--- Fresh copies of the plugin's Lua (but KEPT), with empty caches and
--- the backend's settings; put back by the returned function.
local function fresh_plugin()
  local saved = {}
  for name, mod in pairs(package.loaded) do
    if renewed(name) then
      saved[name], package.loaded[name] = mod, nil
    end
  end
  return function()
    for name in pairs(package.loaded) do
      if renewed(name) then
        package.loaded[name] = nil
      end
    end
    for name, mod in pairs(saved) do
      package.loaded[name] = mod
    end
  end
end

--- A bash call of a chat in a new project made at once, with io.popen
--- noting its commands (and running them): the result and the commands
--- that were a probe (bwrap's test sandbox, --help, the helper's --info).
---@param before fun(sandbox: table) run first, in the fresh plugin
local function first_call(before)
  local restore = fresh_plugin()
  local sandbox = require("flemma_sandbox")
  sandbox.setup({ policy = { network = false }, approval = { bash = "allow" } })
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/proj", "p")
  local path = dir .. "/proj/p.chat"
  vim.fn.writefile({ "@You:", "go" }, path)
  -- no autocommand: the chat's own background work (nvim/autocmds.lua)
  -- would start the probes in both cases
  vim.cmd("noautocmd edit " .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  before(sandbox)
  local real, probes, result = io.popen, {}, nil
  io.popen = function(cmd, ...) -- luacheck: ignore 122
    if cmd:match("%-%-help") or cmd:match("%-%-info") or cmd:match("%-%-unshare%-all") then
      probes[#probes + 1] = cmd
    end
    return real(cmd, ...)
  end
  local ok, err = pcall(function()
    require("flemma_sandbox.tools").run("bash", { command = "true" }, { bufnr = buf }, function(r)
      result = r
    end)
    vim.wait(30000, function()
      return result ~= nil
    end, 5)
  end)
  io.popen = real -- luacheck: ignore 122
  vim.cmd("bwipeout! " .. buf)
  restore()
  vim.fn.delete(dir, "rf")
  assert(ok, err)
  return result, probes
end

describe("a chat's first call made while the background probes run", function()
  it("waits for them in the main loop: it runs none of them on the editor's thread", function()
    local result, probes = first_call(function(sandbox)
      local cfg = sandbox.resolve_config(vim.api.nvim_get_current_buf())
      require("flemma_sandbox.backends.bwrap").check_in_background(cfg.backends.bwrap, function() end)
    end)
    assert.is_table(result)
    assert.is_nil(result.error, vim.inspect(result))
    assert.are.same({}, probes)
  end)

  it("control: with none started before it, the call runs them itself", function()
    local result, probes = first_call(function() end)
    assert.is_nil(result.error, vim.inspect(result))
    assert.are.equal(3, #probes, vim.inspect({ probes, result }))
  end)
end)
