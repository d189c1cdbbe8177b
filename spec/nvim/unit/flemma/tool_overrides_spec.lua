--- flemma/tool_overrides.lua (run in Neovim, Flemma's tool registry
--- stood in for: the real Flemma's is spec/flemma's): Flemma's bash, read,
--- write, edit and ls are put in our place and every other tool that runs
--- is guarded, once; each asks the buffer's rule before anything runs (a
--- call run by hand skips the resolvers), and a call's label comes from
--- what it does.
local overrides = require("flemma_sandbox.flemma.tool_overrides")

describe("flemma.tool_overrides", function()
  local saved_tools, saved_registry, defs, ran, real_denial, real_refusal

  --- A definition of Flemma's that notes its runs.
  local function def(name, async)
    return {
      name = name,
      async = async,
      description = name .. "'s own",
      execute = function(input, _, callback)
        ran[#ran + 1] = name
        local result = { success = true, output = name .. " ran on " .. tostring(input.path) }
        if async then
          callback(result)
          return function() end
        end
        return result
      end,
    }
  end

  before_each(function()
    saved_tools, saved_registry = package.loaded["flemma.tools"], package.loaded["flemma.tools.registry"]
    real_denial, real_refusal = overrides.denial, overrides.refusal
    ran = {}
    defs = {
      bash = def("bash", true),
      read = def("read", false),
      write = def("write", true),
      edit = def("edit", true),
      ls = def("ls", false),
      grep = def("grep", false),
      custom = def("custom", true),
      doc = def("doc", false),
    }
    package.loaded["flemma.tools"] = {
      get = function(name)
        return defs[name]
      end,
      register = function(name, d)
        assert.is_nil(defs[name], "unregistered first: Flemma warns of a redefinition")
        defs[name] = d
      end,
    }
    package.loaded["flemma.tools.registry"] = {
      unregister = function(name)
        defs[name] = nil
      end,
      get_all = function()
        return defs
      end,
      is_executable = function(name)
        return name ~= "doc"
      end,
    }
  end)

  after_each(function()
    package.loaded["flemma.tools"], package.loaded["flemma.tools.registry"] = saved_tools, saved_registry
    overrides.denial, overrides.refusal = real_denial, real_refusal
  end)

  it("lists the tools it has not guarded yet, replaces and guards them once, and leaves what does not run", function()
    local doc = defs.doc
    assert.are.same({ "bash", "read", "write", "edit", "ls", "custom", "grep" }, overrides.unguarded())
    assert.is_false(overrides.is_replaced("bash"))
    overrides.install()
    assert.are.same({}, overrides.unguarded())
    for _, name in ipairs({ "bash", "read", "write", "edit", "ls", "grep", "custom" }) do
      assert.is_true(overrides.is_replaced(name), name)
      assert.are.equal(name .. "'s own", defs[name].description, "Flemma's description kept")
    end
    assert.are.equal(doc, defs.doc)
    local bash = defs.bash
    overrides.install()
    assert.are.equal(bash, defs.bash, "a second install changes nothing")
    assert.is_true(overrides.is_replaced("no-such-tool"))
  end)

  it("finds nothing to do without Flemma's tools", function()
    package.loaded["flemma.tools"] = nil
    local real = package.preload["flemma.tools"]
    package.preload["flemma.tools"] = function()
      error("no Flemma")
    end
    overrides.install()
    local list = overrides.unguarded()
    package.preload["flemma.tools"] = real
    assert.are.same({}, list)
  end)

  it("refuses every tool of a buffer the rule refuses, before it runs, sync and async", function()
    overrides.install()
    local notes, restore = require("support.nvim").capture_notify()
    overrides.denial = function(bufnr)
      return bufnr == 7 and "tool calls are off: tools.enabled = false" or nil
    end
    local ctx = { bufnr = 7, tool_id = "t1" }
    local want = { success = false, error = "flemma-sandbox: refused: tool calls are off: tools.enabled = false" }
    assert.are.same(want, defs.grep.execute({ path = "x" }, ctx))
    assert.are.same(want, defs.read.execute({ path = "x" }, ctx))
    local got = {}
    assert.is_nil(defs.custom.execute({}, ctx, function(r)
      got[#got + 1] = r
    end))
    assert.is_nil(defs.bash.execute({ command = "rm -rf ~" }, ctx, function(r)
      got[#got + 1] = r
    end))
    vim.wait(100, function()
      return #got == 2
    end, 5)
    restore()
    assert.are.same({ want, want }, got)
    assert.are.same({}, ran)
    assert.matches("tool calls are off: tools%.enabled = false", notes[1].msg)
  end)

  it("runs a guarded tool as it is when the rule lets it", function()
    overrides.install()
    overrides.denial = function()
      return nil
    end
    assert.are.same({ success = true, output = "grep ran on x" }, defs.grep.execute({ path = "x" }, { bufnr = 1 }))
    assert.are.same({ "grep" }, ran)
  end)

  describe("labels", function()
    it("say what a call does: its command's first line, its path or its git arguments, cut at 200", function()
      assert.are.equal("bash: make test ...", overrides.label_for("bash", { command = "make test\nmake lint" }))
      assert.are.equal("write: src/a.lua", overrides.label_for("write", { path = "src/a.lua" }))
      assert.are.equal("git: commit -m x", overrides.label_for("git", { args = { "commit", "-m", "x" } }))
      assert.are.equal(
        "bash: " .. string.rep("y", 200),
        overrides.label_for("bash", { command = string.rep("y", 300) })
      )
      assert.is_nil(overrides.label_for("bash", {}))
      assert.is_nil(overrides.label_for("bash", "ls"))
    end)

    it("are the resolver's when it saw the call, taken once, else made from the input or the id", function()
      overrides.labels.toolu_1 = "bash: from the resolver"
      local ctx = { tool_id = "toolu_1" }
      assert.are.equal("bash: from the resolver", overrides.label_of(ctx, "bash", { command = "ls" }))
      assert.are.equal("bash: ls", overrides.label_of(ctx, "bash", { command = "ls" }))
      assert.are.equal("bash: toolu_1", overrides.label_of(ctx, "bash", nil))
    end)
  end)
end)
