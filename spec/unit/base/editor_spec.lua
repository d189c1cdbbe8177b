--- base/editor.lua, and the editor gate (scripts/check_editor.lua, run by
--- make lint): under plain LuaJIT there is no Neovim, JSON comes from
--- lua-cjson; a `vim` a spec sets up is seen at the next question. The
--- gate passes the real tree and fails on each way another module tests
--- for vim, with its line.
local h = require("support.helpers")
local editor = require("flemma_sandbox.base.editor")

local checker = io.popen("pwd"):read("*l") .. "/scripts/check_editor.lua"

describe("editor", function()
  after_each(function()
    _G.vim = nil
  end)

  it("says no Neovim under LuaJIT, decodes JSON and words values without it", function()
    assert.is_false(editor.present())
    assert.are.same({ a = { 1, 2 } }, editor.json_decode('{"a":[1,2]}'))
    assert.are.equal("x", editor.inspect("x"))
  end)

  it("sees a vim set up after it was loaded", function()
    _G.vim = {
      api = {},
      fn = {},
      inspect = function(v)
        return "<" .. tostring(v) .. ">"
      end,
    }
    assert.is_true(editor.present())
    assert.are.equal("<x>", editor.inspect("x"))
  end)
end)

describe("the editor gate", function()
  local t
  before_each(function()
    t = h.tmpdir()
    h.sh("mkdir -p " .. t .. "/lua/flemma_sandbox/base " .. t .. "/lua/flemma_sandbox/run")
    h.write(t .. "/lua/flemma_sandbox/base/editor.lua", "return { p = type(vim) == 'table' }\n")
  end)
  after_each(function()
    h.rmdir(t)
  end)

  --- Runs the checker on a tree; returns its exit code and what it said.
  local function check(root)
    local r = h.run({ "luajit", checker, root })
    return r.code, r.stdout .. r.stderr
  end

  it("passes the real tree, and reads from vim elsewhere", function()
    local code, out = check(".")
    assert.are.equal(0, code, out)
    h.write(
      t .. "/lua/flemma_sandbox/run/job.lua",
      "-- type(vim)\nreturn { vim.fn.getcwd(), vim['api'], 'vim', { vim = 1 }, _G['vim'].api }\n"
    )
    code, out = check(t)
    assert.are.equal(0, code, out)
  end)

  it("fails on each test for vim outside base/editor.lua, with its line", function()
    for _, case in ipairs({
      "local ok = type(vim) == 'table'",
      "if vim then end",
      "local x = vim and vim.json",
      "local v = _G.vim",
      "local v = rawget(_G, 'vim')",
      "local ok = type(_G['vim']) == 'table'",
    }) do
      h.write(t .. "/lua/flemma_sandbox/run/job.lua", "local M = {}\n" .. case .. "\nreturn M\n")
      local code, out = check(t)
      assert.are.equal(1, code, case)
      assert.matches("lua/flemma_sandbox/run/job%.lua:2 tests for vim", out, 1, case)
    end
  end)
end)
