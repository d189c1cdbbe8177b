--- installed.lua (run in Neovim): module names of ours, Flemma's and the
--- optional libraries are found where they are installed (the
--- runtimepath, absolute entries of package.path and package.cpath),
--- never in the working directory, which a sandboxed command writes. The
--- control shows that package.path's own "./?.lua" would find the planted
--- file.
local installed = require("flemma_sandbox.base.installed")
local h = require("support.helpers")

describe("installed", function()
  describe("guarded", function()
    it("answers for our names, Flemma's, cjson and health, and their submodules", function()
      local names = { "flemma", "flemma.sandbox", "flemma_sandbox", "flemma_sandbox.core", "cjson", "health" }
      for _, name in ipairs(names) do
        assert.is_true(installed.guarded(name), name)
      end
    end)

    it("leaves other names alone, prefixes that are not a dot apart too", function()
      for _, name in ipairs({ "flemmax", "flemma_sandboxes", "cjson2", "healthy", "lpeg", "vim.lsp" }) do
        assert.is_false(installed.guarded(name), name)
      end
    end)
  end)

  describe("absolute_entries", function()
    it("keeps only absolute entries, in order", function()
      assert.are.equal(
        "/usr/share/lua/5.1/?.lua;/opt/?/init.lua",
        installed.absolute_entries("./?.lua;/usr/share/lua/5.1/?.lua;?.lua;~/lua/?.lua;lua/?.lua;/opt/?/init.lua")
      )
      assert.are.equal("", installed.absolute_entries("./?.so;;"))
    end)
  end)

  describe("in a project with planted modules", function()
    local dir, old_cwd

    before_each(function()
      dir = h.tmpdir()
      old_cwd = vim.fn.getcwd()
      vim.fn.mkdir(dir .. "/flemma", "p")
      vim.fn.mkdir(dir .. "/flemma_sandbox/base", "p")
      h.write(dir .. "/flemma/planted_by_spec.lua", "_G.FLEMMA_SPEC_PLANTED = true return {}\n")
      h.write(dir .. "/flemma_sandbox/base/util.lua", "_G.FLEMMA_SPEC_PLANTED = true return {}\n")
      vim.cmd("cd " .. vim.fn.fnameescape(dir))
      _G.FLEMMA_SPEC_PLANTED = nil
    end)

    after_each(function()
      vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
      package.loaded["flemma.planted_by_spec"] = nil
      _G.FLEMMA_SPEC_PLANTED = nil
      h.rmdir(dir)
    end)

    it("control: package.path's own ./?.lua finds the planted file", function()
      assert.is_truthy(package.path:find("./?.lua", 1, true))
      assert.are.equal("./flemma/planted_by_spec.lua", package.searchpath("flemma.planted_by_spec", package.path))
    end)

    it("finds an installed module where it is installed, and a planted one nowhere", function()
      local path, kind = installed.find("flemma_sandbox.base.util")
      assert.are.equal("lua", kind)
      -- where the runtimepath has it (the directory the suite started in may
      -- be another spec's by now)
      local want = vim.api.nvim_get_runtime_file("lua/flemma_sandbox/base/util.lua", false)[1]
      assert.are.equal(vim.fn.resolve(vim.fn.fnamemodify(want, ":p")), vim.fn.resolve(path))
      assert.are.same({ nil, nil }, { installed.find("flemma.planted_by_spec") })
      local so, so_kind = installed.find("flemma_sandbox.core")
      assert.are.equal("so", so_kind)
      assert.are.equal("/", so:sub(1, 1))
      assert.is_true(installed.present("flemma_sandbox.base.util"))
      assert.is_false(installed.present("flemma.planted_by_spec"))
    end)

    it("is in package.loaders once, however often it is put there", function()
      installed.guard()
      installed.guard()
      assert.is_true(installed.guarded_now())
      local count = 0
      for _, loader in ipairs(package.loaders) do
        local info = debug.getinfo(loader, "S")
        if info.source:find("installed%.lua$") then
          count = count + 1
        end
      end
      assert.are.equal(1, count)
    end)

    it("makes require refuse the planted module, naming why, again and again, and never runs it", function()
      installed.guard()
      for _ = 1, 2 do
        local ok, err = pcall(require, "flemma.planted_by_spec")
        assert.is_false(ok)
        assert.matches(
          "module 'flemma%.planted_by_spec' not found: not installed %(never looked up in the working directory%)",
          err
        )
      end
      assert.is_nil(_G.FLEMMA_SPEC_PLANTED)
    end)

    it("loads the installed module, not the planted one of the same name", function()
      installed.guard()
      local saved = package.loaded["flemma_sandbox.base.util"]
      package.loaded["flemma_sandbox.base.util"] = nil
      local ok, util = pcall(require, "flemma_sandbox.base.util")
      package.loaded["flemma_sandbox.base.util"] = saved
      assert.is_true(ok, util)
      assert.is_function(util.contains)
      assert.is_nil(_G.FLEMMA_SPEC_PLANTED)
    end)
  end)
end)
