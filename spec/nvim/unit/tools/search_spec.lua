--- tools/search.lua (run in Neovim): find, grep and ls build GNU find and
--- grep command lines and shape their answers: sorted, cut at the limit
--- with a line saying how many were left out, the depth clamped, grep's
--- exit codes read. Here the command runs on the spec's own folder
--- without a sandbox (bash.run_argv stood in for): the sandboxed path is
--- spec/nvim/tools_spec.lua's.
local search = require("flemma_sandbox.tools.search")
local bash = require("flemma_sandbox.tools.bash")
local h = require("support.helpers")

describe("tools.search", function()
  local dir, real_run_argv, ran

  --- Runs a tool and returns its result.
  local function run(tool, input)
    local got
    search[tool].run(input, { cwd = dir }, function(result)
      got = result
    end)
    return got
  end

  local function touch(path, text)
    vim.fn.mkdir(vim.fn.fnamemodify(dir .. "/" .. path, ":h"), "p")
    h.write(dir .. "/" .. path, text or "")
  end

  before_each(function()
    dir = h.tmpdir()
    ran = {}
    real_run_argv = bash.run_argv
    bash.run_argv = function(argv, _, extra, adjust, done)
      ran[#ran + 1] = { argv = argv, cwd = extra.cwd }
      local words = {}
      for i, a in ipairs(argv) do
        words[i] = h.shell_quote(a)
      end
      local err = os.tmpname()
      local stdout = h.capture(
        "cd " .. h.shell_quote(extra.cwd) .. " && " .. table.concat(words, " ") .. " 2>" .. err .. '; echo "=$?"'
      )
      local code = tonumber(stdout:match("=(%d+)\n$"))
      local result = { stdout = stdout:gsub("=%d+\n$", ""), stderr = h.read(err) or "", exit_code = code }
      os.remove(err)
      adjust(result, {}, {})
      done(result)
    end
  end)

  after_each(function()
    bash.run_argv = real_run_argv
    h.rmdir(dir)
  end)

  describe("find", function()
    it("matches names at any depth, sorted, and never looks into .git", function()
      touch("b.lua")
      touch("a/c.lua")
      touch(".git/x.lua")
      touch("a/readme.md")
      assert.are.equal("a/c.lua\nb.lua", run("find", { pattern = "*.lua" }).content)
    end)

    it("matches a path glob, ** as any folders", function()
      touch("src/x/y/z.tsx")
      touch("src/w.tsx")
      touch("other/v.tsx")
      assert.are.equal("src/w.tsx\nsrc/x/y/z.tsx", run("find", { pattern = "src/**/*.tsx" }).content)
      assert.are.equal("src/w.tsx", run("find", { pattern = "./src/*.tsx" }).content:match("^[^\n]+"))
    end)

    it("cuts at the limit and says how many more there are", function()
      for i = 1, 5 do
        touch("f" .. i .. ".txt")
      end
      assert.are.equal(
        "f1.txt\nf2.txt\n[3 more files; narrow the search or raise limit]",
        run("find", { pattern = "*.txt", limit = 2 }).content
      )
      assert.are.equal(
        "f1.txt\n[4 more files; narrow the search or raise limit]",
        run("find", { pattern = "*.txt", limit = 0.5 }).content
      )
    end)

    it("says when nothing matches, and when the folder is not there", function()
      assert.are.equal("No files found matching *.rs", run("find", { pattern = "*.rs" }).content)
      local before = #ran
      assert.are.equal("no such folder: " .. dir .. "/nope", run("find", { pattern = "*", path = "nope" }).error)
      assert.are.equal(before, #ran, "nothing ran")
    end)

    it("searches the folder given, relative to the working directory", function()
      touch("sub/a.c")
      touch("b.c")
      assert.are.equal("a.c", run("find", { pattern = "*.c", path = "sub" }).content)
      assert.are.equal(dir .. "/sub", ran[1].cwd)
    end)
  end)

  describe("grep", function()
    it("answers path:line:text, only in the files the glob names", function()
      touch("a.lua", "x\nneedle here\n")
      touch("b.txt", "needle\n")
      assert.are.equal("a.lua:2:needle here", run("grep", { pattern = "needle", glob = "*.lua" }).content)
    end)

    it("reads an extended regular expression, and a pattern that starts with -", function()
      touch("a", "foo123\n-flag\n")
      assert.are.equal("a:1:foo123", run("grep", { pattern = "fo+[0-9]{3}" }).content)
      assert.are.equal("a:2:-flag", run("grep", { pattern = "-flag" }).content)
    end)

    it("says No matches found for exit 1, as a success", function()
      touch("a", "x\n")
      local r = run("grep", { pattern = "absent" })
      assert.are.equal("No matches found", r.content)
      assert.are.equal(0, r.exit_code)
    end)

    it("cuts at the limit, in grep's order", function()
      touch("a", "n1\nn2\nn3\n")
      assert.are.equal(
        "a:1:n1\n[2 more matches; narrow the search or raise limit]",
        run("grep", { pattern = "n", limit = 1 }).content
      )
    end)

    it("answers around files it cannot read, with their errors", function()
      if vim.loop.getuid() == 0 then
        return pending("root reads every file")
      end
      touch("ok", "needle\n")
      touch("locked", "needle\n")
      vim.loop.fs_chmod(dir .. "/locked", 0)
      local r = run("grep", { pattern = "needle" })
      assert.matches("^ok:1:needle\n%[stderr%]\n.*locked: Permission denied", r.content)
      r = run("grep", { pattern = "absent" })
      assert.matches("^No matches found\n%[stderr%]\n.*locked: Permission denied", r.content)
      assert.are.equal(0, r.exit_code)
    end)
  end)

  describe("ls", function()
    it("lists one level, folders with /, sorted", function()
      touch("z")
      touch("a/b/c")
      touch(".hidden")
      assert.are.equal(".hidden\na/\nz", run("ls", { path = "." }).content)
      assert.are.equal(".hidden\na/\na/b/\nz", run("ls", { path = ".", max_depth = 2 }).content)
    end)

    it("clamps the depth to 1..10", function()
      touch("x")
      run("ls", { path = ".", max_depth = 0 })
      run("ls", { path = ".", max_depth = 99 })
      assert.are.equal("1", ran[1].argv[6])
      assert.are.equal("10", ran[2].argv[6])
    end)

    it("says an empty folder is empty, and cuts at the limit", function()
      vim.fn.mkdir(dir .. "/empty", "p")
      assert.are.equal("(empty folder)", run("ls", { path = "empty" }).content)
      touch("e/1")
      touch("e/2")
      touch("e/3")
      assert.are.equal(
        "1\n[2 more entries; narrow the search or raise limit]",
        run("ls", { path = "e", limit = 1 }).content
      )
    end)
  end)

  describe("prepare", function()
    it("shows what runs, in which folder, in the sandbox", function()
      local ctx = { cwd = dir }
      assert.are.same(
        { lines = { "find *.lua", "folder: " .. dir, "runs in the sandbox" } },
        search.find.prepare({ pattern = "*.lua" }, ctx)
      )
      assert.are.same(
        { lines = { "grep /x/ in *.c", "folder: " .. dir .. "/sub", "runs in the sandbox" } },
        search.grep.prepare({ pattern = "x", glob = "*.c", path = "sub" }, ctx)
      )
      assert.are.equal("ls .", search.ls.prepare({ path = "." }, ctx).lines[1])
    end)
  end)
end)
