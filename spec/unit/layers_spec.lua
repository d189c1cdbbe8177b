--- The layer checker (scripts/check_layers.lua, run by make lint): the real
--- tree passes; a planted upward require, a planted cycle, a tool reaching
--- past the public API and a stale allowlist entry each fail.
local h = require("support.helpers")

local checker = io.popen("pwd"):read("*l") .. "/scripts/check_layers.lua"

--- Runs the checker on a tree; returns its exit code and what it said.
local function check(root, allow)
  local r = h.run({ "luajit", checker, root, allow or (root .. "/none.allow") })
  return r.code, r.stdout .. r.stderr
end

describe("the layer checker", function()
  local t
  before_each(function()
    t = h.tmpdir()
    h.sh(
      "mkdir -p "
        .. t
        .. "/lua/flemma_sandbox/base "
        .. t
        .. "/lua/flemma_sandbox/policy "
        .. t
        .. "/lua/flemma_sandbox/tools"
    )
    h.write(t .. "/lua/flemma_sandbox/base/util.lua", "local M = {}\nreturn M\n")
    h.write(t .. "/lua/flemma_sandbox/init.lua", 'local util = require("flemma_sandbox.base.util")\nreturn util\n')
    h.write(t .. "/lua/flemma_sandbox/policy/a.lua", 'local u = require("flemma_sandbox.base.util")\nreturn u\n')
    h.write(t .. "/lua/flemma_sandbox/policy/b.lua", 'local a = require("flemma_sandbox.policy.a")\nreturn a\n')
    h.write(t .. "/lua/flemma_sandbox/tools/x.lua", 'local api = require("flemma_sandbox")\nreturn api\n')
  end)
  after_each(function()
    h.rmdir(t)
  end)

  it("passes the real tree with its allowlist, and a clean planted tree", function()
    local code, out = check(".", "./scripts/layers.allow")
    assert.are.equal(0, code, out)
    code, out = check(t)
    assert.are.equal(0, code, out)
    assert.matches("layers: ok %(5 modules, 0 allowed", out)
  end)

  it("fails on an upward require, inline ones included, with the line", function()
    h.write(
      t .. "/lua/flemma_sandbox/base/util.lua",
      'local M = {}\nfunction M.f()\n  return require("flemma_sandbox.policy.a")\nend\nreturn M\n'
    )
    local code, out = check(t)
    assert.are.equal(1, code)
    assert.matches("flemma_sandbox.base.util %-> flemma_sandbox.policy.a %(line 3%): upward", out)
  end)

  it("fails on a module in no layer: a stray one at the top, or in a folder the map lacks", function()
    -- the control: the same module in a layer's folder passes
    h.write(t .. "/lua/flemma_sandbox/policy/stray.lua", "local M = {}\nreturn M\n")
    local code, out = check(t)
    assert.are.equal(0, code, out)
    for _, path in ipairs({ "stray.lua", "odd/stray.lua" }) do
      h.sh("rm -f " .. t .. "/lua/flemma_sandbox/policy/stray.lua; mkdir -p " .. t .. "/lua/flemma_sandbox/odd")
      h.write(t .. "/lua/flemma_sandbox/" .. path, "local M = {}\nreturn M\n")
      code, out = check(t)
      assert.are.equal(1, code, path)
      local name = "flemma_sandbox." .. path:gsub("%.lua$", ""):gsub("/", ".")
      assert.matches(name:gsub("%.", "%%.") .. ": module outside the layer map", out)
      os.remove(t .. "/lua/flemma_sandbox/" .. path)
    end
  end)

  it("fails on a cycle inside a layer", function()
    h.write(
      t .. "/lua/flemma_sandbox/policy/a.lua",
      'local M = {}\nfunction M.f() return require("flemma_sandbox.policy.b") end\nreturn M\n'
    )
    local code, out = check(t)
    assert.are.equal(1, code)
    assert.matches(
      "require cycle: flemma_sandbox.policy.a %-> flemma_sandbox.policy.b %-> flemma_sandbox.policy.a",
      out
    )
  end)

  it("fails on a tool reaching past the public API, unless allowed; a stale allowance fails", function()
    h.write(t .. "/lua/flemma_sandbox/tools/x.lua", 'local p = require("flemma_sandbox.policy.a")\nreturn p\n')
    local code, out = check(t)
    assert.are.equal(1, code)
    assert.matches("tools past the public API into policy", out)
    h.write(t .. "/ok.allow", "flemma_sandbox.tools.x -> flemma_sandbox.policy.a  # for now\n")
    code, out = check(t, t .. "/ok.allow")
    assert.are.equal(0, code, out)
    assert.matches("1 allowed violations left", out)
    -- fixed: the allowance must go
    h.write(t .. "/lua/flemma_sandbox/tools/x.lua", 'local api = require("flemma_sandbox")\nreturn api\n')
    code, out = check(t, t .. "/ok.allow")
    assert.are.equal(1, code)
    assert.matches("no longer a violation: remove it", out)
  end)

  it("fails on pcall(require, ...) and xpcall(require, ...) upward; the old line patterns passed them", function()
    for _, code in ipairs({
      'local ok, s = pcall(require, "flemma_sandbox.policy.a")',
      'local ok, s = xpcall(require, function(e) return e end, "flemma_sandbox.policy.a")',
      'local ok, s = pcall(\n  require,\n  "flemma_sandbox.policy.a"\n)',
      'local s = require(\n  "flemma_sandbox.policy.a"\n)',
      "local s = package.loaded.flemma_sandbox",
      'local s = _G.require("flemma_sandbox.policy.a")',
    }) do
      h.write(t .. "/lua/flemma_sandbox/base/util.lua", "local M = {}\n" .. code .. "\nreturn M\n")
      local out = select(2, check(t))
      assert.are.equal(1, (check(t)), code)
      assert.matches("flemma_sandbox.base.util %-> flemma_sandbox[%w_.]* %(line [23]%): upward", out, nil, code)
    end
    -- a string or a comment holding the same text is no require
    h.write(
      t .. "/lua/flemma_sandbox/base/util.lua",
      'local M = {}\nM.s = [[pcall(require, "flemma_sandbox.policy.a")]]\n'
        .. '--[[ require("flemma_sandbox.tools.x") ]]\nreturn M\n'
    )
    local code, out = check(t)
    assert.are.equal(0, code, out)
  end)

  it("fails on a require whose module is not a literal name, and on dofile and loadfile", function()
    for _, code in ipairs({
      'local name = "flemma_sandbox.policy.a"\nlocal s = require(name)',
      'local r = require\nlocal s = r("flemma_sandbox.policy.a")',
      'local ok, s = pcall(require, "flemma_sandbox." .. "policy.a")',
      'local s = package.loaded["flemma_sandbox." .. "policy.a"]',
      'local s = rawget(package.loaded, "flemma_sandbox.policy.a")',
      'local s = dofile("lua/flemma_sandbox/policy/a.lua")',
      'local s = loadfile("lua/flemma_sandbox/policy/a.lua")()',
    }) do
      h.write(t .. "/lua/flemma_sandbox/policy/a.lua", code .. "\nreturn s\n")
      local rc, out = check(t)
      assert.are.equal(1, rc, code)
      assert.matches("flemma_sandbox.policy.a %(line %d%): [^\n]*: the checker cannot read it", out, nil, code)
    end
  end)

  describe("hooks", function()
    local ROW = "| `asker` | tools | policy | up |\n"
    local function architecture(rows)
      h.write(
        t .. "/ARCHITECTURE.md",
        "# A\n\n### Hooks\n\n| hook | set by | called by | direction |\n|---|---|---|---|\n" .. rows
      )
    end
    before_each(function()
      h.write(t .. "/lua/flemma_sandbox/base/hooks.lua", "local M = {}\nM.asker = nil\nreturn M\n")
      h.write(
        t .. "/lua/flemma_sandbox/policy/a.lua",
        'local hooks = require("flemma_sandbox.base.hooks")\nlocal M = {}\n'
          .. "function M.f() return hooks.asker and hooks.asker() end\nreturn M\n"
      )
      h.write(
        t .. "/lua/flemma_sandbox/tools/x.lua",
        'require("flemma_sandbox.base.hooks").asker = function() end\nreturn require("flemma_sandbox")\n'
      )
    end)

    it("pass when declared with their direction, and fail when not declared", function()
      architecture(ROW)
      local code, out = check(t)
      assert.are.equal(0, code, out)
      h.rmdir(t .. "/ARCHITECTURE.md")
      code, out = check(t)
      assert.are.equal(1, code)
      assert.matches("flemma_sandbox.policy.a %(line 3%): hooks.asker is not declared", out)
      assert.matches("flemma_sandbox.tools.x %(line 1%): hooks.asker is not declared", out)
      assert.matches("hook asker: in hooks.lua but not declared", out)
    end)

    it("fail on a setter or caller the row does not name, a wrong direction, a stale row", function()
      architecture("| `asker` | chat | policy | up |\n")
      local code, out = check(t)
      assert.are.equal(1, code)
      assert.matches(
        "tools.x %(line 1%): sets hooks.asker, which ARCHITECTURE.md's Hooks table does not let tools",
        out
      )
      assert.matches("hook asker: ARCHITECTURE.md says chat sets it; none does", out)
      architecture("| `asker` | tools | backends | up |\n")
      code, out = check(t)
      assert.are.equal(1, code)
      assert.matches("policy.a %(line 3%): calls hooks.asker, which", out)
      architecture("| `asker` | tools | policy | sideways |\n")
      code, out = check(t)
      assert.are.equal(1, code)
      assert.matches('hook asker: the direction column lacks "up"', out)
      assert.matches('hook asker: the direction column says "sideways"', out)
      architecture(ROW .. "| `gone` | tools | policy | up |\n")
      code, out = check(t)
      assert.are.equal(1, code)
      assert.matches("hook gone: declared in ARCHITECTURE.md but not a field of hooks.lua", out)
    end)

    it("fail on the hooks table handed on or indexed by a variable", function()
      architecture(ROW)
      for _, code in ipairs({
        'local hooks = require("flemma_sandbox.base.hooks")\nlocal h = hooks\nreturn h',
        'local hooks = require("flemma_sandbox.base.hooks")\nlocal k = "asker"\nreturn hooks[k]',
        'local h = require("flemma_sandbox.base.hooks")\nreturn h',
      }) do
        h.write(t .. "/lua/flemma_sandbox/policy/b.lua", code .. "\n")
        local rc, out = check(t)
        assert.are.equal(1, rc, code)
        assert.matches("policy.b %(line %d%): the hooks table used other than as hooks.NAME", out, nil, code)
      end
    end)
  end)

  it("a comment naming a module is not a require; package.loaded reads are", function()
    h.write(
      t .. "/lua/flemma_sandbox/base/util.lua",
      '-- see require("flemma_sandbox.policy.a")\nlocal M = {}\nreturn M\n'
    )
    assert.are.equal(0, (check(t)))
    h.write(t .. "/lua/flemma_sandbox/base/util.lua", 'local M = package.loaded["flemma_sandbox.tools.x"]\nreturn M\n')
    local code, out = check(t)
    assert.are.equal(1, code)
    assert.matches("upward", out)
  end)
end)

describe("the size gate", function()
  local sizes = io.popen("pwd"):read("*l") .. "/scripts/check_sizes.lua"

  it("passes the real tree and fails on a 401-line module", function()
    local r = h.run({ "luajit", sizes, "." })
    assert.are.equal(0, r.code, r.stderr)
    local t = h.tmpdir()
    h.sh("mkdir -p " .. t .. "/lua/x " .. t .. "/csrc")
    h.write(t .. "/lua/x/ok.lua", string.rep("-- line\n", 400))
    assert.are.equal(0, h.run({ "luajit", sizes, t }).code)
    h.write(t .. "/lua/x/big.lua", string.rep("-- line\n", 401))
    r = h.run({ "luajit", sizes, t })
    h.rmdir(t)
    assert.are.equal(1, r.code)
    assert.matches("lua/x/big.lua: 401 lines %(at most 400%)", r.stderr)
  end)
end)

describe("the function-length gate", function()
  local gate = io.popen("pwd"):read("*l") .. "/scripts/check_functions.lua"
  local t
  before_each(function()
    t = h.tmpdir()
    h.sh("mkdir -p " .. t .. "/lua/x " .. t .. "/csrc/y")
  end)
  after_each(function()
    h.rmdir(t)
  end)

  --- A Lua function of n lines from its header to its end, both counted,
  --- whose body holds what looks like block words to a line-based count:
  --- "end" and "function" in strings and comments.
  local function lua_function(header, n)
    local kinds = {
      [0] = '  local s = "end function do if" -- end end',
      "  local y = 1",
      "  --[[ end function",
      "  end ]] local x = [[end]]",
    }
    local body = { header }
    for i = 2, n - 1 do
      body[#body + 1] = kinds[i % 4]
    end
    assert(n % 4 ~= 3, "the long comment closes")
    body[#body + 1] = "end"
    return table.concat(body, "\n")
  end

  local function c_function(name, n)
    local body = { "static int " .. name .. "(int a,", "                int b)", "{" }
    for _ = 4, n - 1 do
      body[#body + 1] = "    a += b; /* } */"
    end
    body[#body + 1] = "}"
    return table.concat(body, "\n") .. "\n"
  end

  it("passes the real tree, its C included (as make lint runs it)", function()
    local r = h.run({ "luajit", gate, "." })
    assert.are.equal(0, r.code, r.stderr)
  end)

  it("passes 100-line functions and fails a 101-line one with file:line name length", function()
    h.write(t .. "/lua/x/a.lua", "local M = {}\n" .. lua_function("function M.ok()", 100) .. "\n" .. "return M\n")
    h.write(t .. "/csrc/y/a.c", "#include <stdio.h>\n\n" .. c_function("ok", 100))
    local r = h.run({ "luajit", gate, t })
    assert.are.equal(0, r.code, r.stderr)
    h.write(
      t .. "/lua/x/a.lua",
      "local M = {}\n"
        .. lua_function("function M.ok()", 100)
        .. "\n"
        .. lua_function("M.big = function(a)", 101)
        .. "\n"
        .. "return M\n"
    )
    r = h.run({ "luajit", gate, t })
    assert.are.equal(1, r.code)
    assert.matches("lua/x/a.lua:102 M.big 101 lines %(at most 100%)", r.stderr)
    assert.is_nil(r.stderr:find("M.ok", 1, true))
  end)

  it("fails a 101-line C function; --c-report-only lists it and passes", function()
    h.write(t .. "/csrc/y/a.c", "#include <stdio.h>\n\n" .. c_function("ok", 100) .. "\n" .. c_function("big", 101))
    local r = h.run({ "luajit", gate, t })
    assert.are.equal(1, r.code)
    assert.matches("csrc/y/a.c:104 big 101 lines %(at most 100%)", r.stderr)
    assert.is_nil(r.stderr:find(" ok ", 1, true))
    r = h.run({ "luajit", gate, "--c-report-only", t })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("csrc/y/a.c:104 big 101 lines %(at most 100%) %[C: reported only%]", r.stderr)
    -- the body's "{" on the header's line is a function too
    h.write(
      t .. "/csrc/y/a.c",
      (c_function("big", 101):gsub("%(int a,\n +int b%)\n{\n", "(int a, int b) {\n    a++;\n    b++;\n"))
    )
    r = h.run({ "luajit", gate, t })
    assert.are.equal(1, r.code)
    assert.matches("csrc/y/a.c:1 big 101 lines", r.stderr)
    -- the Lua part is enforced with it
    h.write(t .. "/lua/x/b.lua", lua_function("local function big()", 101) .. "\nreturn big\n")
    r = h.run({ "luajit", gate, "--c-report-only", t })
    assert.are.equal(1, r.code)
    assert.matches("lua/x/b.lua:1 big 101 lines", r.stderr)
  end)
end)

describe("the vimdoc's config defaults", function()
  local gen = io.popen("pwd"):read("*l") .. "/scripts/config_doc.lua"

  it("match the schema, and a default changed in the schema alone fails the check", function()
    local r = h.run({ "luajit", gen, "--check", "." })
    assert.are.equal(0, r.code, r.stderr)
    local t = h.tmpdir()
    h.sh("cp -R lua doc " .. t)
    assert.are.equal(0, h.run({ "luajit", gen, "--check", t }).code, "the copy matches too")
    local schema = t .. "/lua/flemma_sandbox/config/defaults.lua"
    local text = h.read(schema)
    h.write(schema, (text:gsub("timeout_ms = 120000", "timeout_ms = 90000")))
    r = h.run({ "luajit", gen, "--check", t })
    assert.are.equal(1, r.code)
    assert.matches("differs from the schema", r.stderr)
    -- make doc brings the doc in line
    assert.are.equal(0, h.run({ "luajit", gen, t }).code)
    assert.are.equal(0, h.run({ "luajit", gen, "--check", t }).code)
    assert.truthy(h.read(t .. "/doc/flemma-sandbox.txt"):find("timeout_ms = 90000", 1, true))
    h.rmdir(t)
  end)
end)
