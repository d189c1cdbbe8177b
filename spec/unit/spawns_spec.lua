--- The process gate (scripts/check_spawns.lua, run by make lint): the real
--- tree passes; each way to start a process planted outside
--- lua/flemma_sandbox/base/process.lua fails with its file and line; the same
--- in the runner, in a comment or in a string passes.
local h = require("support.helpers")

local checker = io.popen("pwd"):read("*l") .. "/scripts/check_spawns.lua"

--- Runs the checker on a tree; returns its exit code and what it said.
local function check(root)
  local r = h.run({ "luajit", checker, root })
  return r.code, r.stdout .. r.stderr
end

describe("the process gate", function()
  local t
  before_each(function()
    t = h.tmpdir()
    h.sh("mkdir -p " .. t .. "/lua/flemma_sandbox/run " .. t .. "/lua/flemma_sandbox/base")
    h.write(t .. "/lua/flemma_sandbox/base/util.lua", "local M = {}\nreturn M\n")
    h.write(
      t .. "/lua/flemma_sandbox/base/process.lua",
      "local M = {}\nfunction M.run(argv)\n  return vim.fn.system(argv), vim.v.shell_error\nend\n"
        .. "function M.spawn(a, o, cb)\n  return (vim.uv or vim.loop).spawn(a[1], o, cb)\nend\nreturn M\n"
    )
  end)
  after_each(function()
    h.rmdir(t)
  end)

  it("passes the real tree, and a planted tree whose runner starts processes", function()
    local code, out = check(".")
    assert.are.equal(0, code, out)
    code, out = check(t)
    assert.are.equal(0, code, out)
    assert.matches("spawns: ok %(2 files", out)
  end)

  it("fails on each way to start a process outside the runner, with its line", function()
    for _, case in ipairs({
      { "vim.fn.system({ 'true' })", "fn%.system" },
      { "vim.fn.systemlist({ 'true' })", "fn%.systemlist" },
      { "vim.fn.jobstart({ 'true' })", "fn%.jobstart" },
      { "vim.fn.termopen({ 'true' })", "fn%.termopen" },
      { "vim.loop.spawn('true', {}, function() end)", "loop%.spawn" },
      { "vim.uv.spawn('true', {}, function() end)", "uv%.spawn" },
      { "local uv = vim.uv\nlocal h = uv.spawn('true', {})", "uv%.spawn" },
      { "local f = io.popen('true')", "io%.popen" },
      { "os.execute('true')", "os%.execute" },
      { "vim.system({ 'true' })", "vim%.system" },
      { "local s = vim.fn['system']", "fn%.system" },
      { "local run = vim.fn.system", "fn%.system" },
      { "vim.call('system', 'true')", 'call%("system"%)' },
      { "vim.api.nvim_call_function(\n  'jobstart',\n  { 'true' }\n)", 'nvim_call_function%("jobstart"%)' },
    }) do
      h.write(t .. "/lua/flemma_sandbox/run/job.lua", "local M = {}\n" .. case[1] .. "\nreturn M\n")
      local code, out = check(t)
      assert.are.equal(1, code, case[1])
      assert.matches("lua/flemma_sandbox/run/job%.lua:%d+ " .. case[2] .. " starts a process outside", out, 1, case[1])
    end
  end)

  it("fails on an alias of what holds those functions, and on names it cannot read", function()
    for _, case in ipairs({
      { "local f = vim.fn\nf.system({ 'true' })", "fn taken as a value" },
      { "local l = vim.loop\nl.spawn('true', {})", "loop taken as a value" },
      { "local u = vim.uv or vim.loop", "uv taken as a value" },
      { "local o = os\no.execute('true')", "os taken as a value" },
      { "local o = _G.os\no.execute('true')", "os taken as a value" },
      { "local v = vim\nv.system({ 'true' })", "vim taken as a value" },
      { "local g = _G.vim.fn", "fn taken as a value" },
      { "local u = require('flemma_sandbox.base.process').uv()\nu.spawn('true', {})", "spawn read from" },
      { "local name = 'system'\nvim.fn[name]('true')", "fn%[%.%.%.%] with a name" },
      { "local c = vim.call\nc('system', 'true')", "call with a name the code does not spell" },
      { "vim.fn.call(vim.g.x, {})", "call with a name the code does not spell" },
      { "local luv = require('luv')", 'require%("luv"%)' },
      { "local u = require('flemma_sandbox.base.process').uv()\nu['spawn']('true', {})", "spawn read from" },
      { "vim['fn'].system('ls')", "fn%.system" },
      { "vim.api['nvim_call_function'](name, {})", "nvim_call_function with a name" },
      { "require('ffi').C.system('ls')", 'require%("ffi"%)' },
      { "vim.cmd('!ls')", 'cmd%("!ls"%)' },
      { "vim.cmd('silent! r !ls')", "cmd%(" },
      { "vim.cmd('terminal')", "cmd%(" },
      { "vim.api.nvim_command('silent make')", "nvim_command%(" },
      { "vim.fn.execute('!ls')", "execute%(" },
      { "vim.fn.eval(\"system('ls')\")", "eval%(" },
      { "vim.api.nvim_exec2('%!sort', {})", "nvim_exec2%(" },
    }) do
      h.write(t .. "/lua/flemma_sandbox/run/job.lua", "local M = {}\n" .. case[1] .. "\nreturn M\n")
      local code, out = check(t)
      assert.are.equal(1, code, case[1])
      assert.matches("lua/flemma_sandbox/run/job%.lua:%d+ " .. case[2], out, 1, case[1])
    end
  end)

  it("passes tests of those holders, type(vim), fields and keys of the same names, plain Ex commands", function()
    h.write(
      t .. "/lua/flemma_sandbox/run/job.lua",
      "local M = {}\n"
        .. "local in_nvim = type(vim) == 'table' and type(vim.fn) == 'table'\n"
        .. "local linux = jit and jit.os == 'Linux'\n"
        .. "local loop_name = vim.uv and 'vim.uv' or 'vim.loop'\n"
        .. "local function each(list, fn) for _, x in ipairs(list) do fn(x) end end\n"
        .. "local uv = require('flemma_sandbox.base.process').uv()\n"
        .. "local h = require('flemma_sandbox.base.process').spawn({ 'true' }, {}, function() end)\n"
        .. "M.t = { in_nvim, linux, loop_name, each, uv.new_timer(), h, vim.fn.call('getcwd', {}) }\n"
        .. "M.keys = { os = 'linux', vim = 1, io = 2 }\n"
        .. "vim.cmd('silent! %bwipeout!')\nvim.cmd('if 1 != 2 | qall! | endif')\nvim.cmd('edit x')\n"
        .. "return M\n"
    )
    local code, out = check(t)
    assert.are.equal(0, code, out)
  end)

  it("passes the same names in comments and strings, and the runner's own calls", function()
    h.write(
      t .. "/lua/flemma_sandbox/run/job.lua",
      "local process = require('flemma_sandbox.base.process')\n"
        .. "-- vim.fn.system and io.popen start processes; uv.spawn too\n"
        .. "local s = 'os.execute(\"x\")'\n"
        .. "local h = process.spawn({ 'true' }, {}, function() end)\n"
        .. "return { s, h, process.run({ 'true' }) }\n"
    )
    local code, out = check(t)
    assert.are.equal(0, code, out)
  end)
end)
