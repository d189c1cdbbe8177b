--- tools/outputs.lua (run in Neovim): files that keep the whole output of
--- a cut tool result, in Neovim's cache folder: one folder per project,
--- one for runs with the sandbox off, all of them capped (oldest first).
local outputs = require("flemma_sandbox.tools.outputs")
local h = require("support.helpers")

describe("tools.outputs", function()
  local dir, old_cwd, cache

  -- prune() removes files across the whole cache: only ever in a cache
  -- folder of the run's own (spec/run.sh makes one), never the user's
  local own_cache = os.getenv("XDG_CACHE_HOME") or ""
  assert(
    own_cache:find("^/tmp/") and vim.fn.stdpath("cache"):sub(1, #own_cache) == own_cache,
    "run with XDG_CACHE_HOME set to a temporary folder (spec/run.sh does)"
  )

  --- Writes a file of size bytes with its mtime `age` seconds ago.
  local function file(path, size, age)
    vim.fn.mkdir(vim.fn.fnamemodify(path, ":h"), "p")
    h.write(path, string.rep("x", size))
    os.execute("touch -d @" .. (os.time() - age) .. " " .. h.shell_quote(path))
  end

  local function exists(path)
    return vim.loop.fs_stat(path) ~= nil
  end

  before_each(function()
    dir = h.tmpdir()
    old_cwd = vim.fn.getcwd()
    vim.fn.mkdir(dir .. "/project", "p")
    vim.cmd("cd " .. vim.fn.fnameescape(dir .. "/project"))
    cache = vim.fn.stdpath("cache") .. "/flemma-sandbox"
    vim.fn.delete(cache .. "/outputs", "rf")
    vim.fn.delete(outputs.unsandboxed_dir(), "rf")
  end)

  after_each(function()
    vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
    vim.fn.delete(cache .. "/outputs", "rf")
    vim.fn.delete(outputs.unsandboxed_dir(), "rf")
    h.rmdir(dir)
  end)

  it("has a folder per project in the cache and another for unsandboxed runs", function()
    local mine = outputs.dir()
    assert.is_true(vim.startswith(mine, cache .. "/outputs/"), mine)
    vim.cmd("cd " .. vim.fn.fnameescape(dir))
    assert.are_not.equal(mine, outputs.dir())
    assert.is_false(vim.startswith(outputs.unsandboxed_dir(), cache .. "/outputs/"))
  end)

  it("makes the project's folder and a fresh file path in it", function()
    local path = assert(outputs.new_file(1000, 100))
    assert.are.equal(1, vim.fn.isdirectory(outputs.dir()))
    assert.are.equal(outputs.dir(), vim.fn.fnamemodify(path, ":h"))
    assert.matches("/output%-%d+%-%d+%-%d+%.txt$", path)
    assert.are_not.equal(path, outputs.new_file(1000, 100))
  end)

  it("prunes the oldest files first, across projects and the unsandboxed folder, until the rest fit", function()
    local a = cache .. "/outputs/p1/output-a.txt"
    local b = outputs.unsandboxed_dir() .. "/output-b.txt"
    local c = cache .. "/outputs/p2/output-c.txt"
    local d = cache .. "/outputs/p1/output-d.txt"
    file(a, 100, 400)
    file(b, 100, 300)
    file(c, 100, 200)
    file(d, 100, 100)
    outputs.prune(250)
    assert.is_false(exists(a))
    assert.is_false(exists(b))
    assert.is_true(exists(c))
    assert.is_true(exists(d))
  end)

  it("removes nothing when all fit, and everything for a cap of 0", function()
    local a = cache .. "/outputs/p1/output-a.txt"
    file(a, 10, 10)
    outputs.prune(10)
    assert.is_true(exists(a))
    outputs.prune(0)
    assert.is_false(exists(a))
  end)

  it("looks only one folder down and leaves links alone", function()
    local deep = cache .. "/outputs/p1/deeper/output-old.txt"
    file(deep, 1000, 1000)
    local target = dir .. "/not-an-output"
    h.write(target, string.rep("y", 1000))
    vim.fn.mkdir(cache .. "/outputs/p1", "p")
    os.execute("ln -s " .. h.shell_quote(target) .. " " .. h.shell_quote(cache .. "/outputs/p1/link"))
    outputs.prune(0)
    assert.is_true(exists(deep))
    assert.is_true(exists(target))
  end)

  it("new_file makes room for one full file", function()
    local old = cache .. "/outputs/p1/output-old.txt"
    file(old, 600, 100)
    outputs.new_file(1000, 500)
    assert.is_false(exists(old))
    file(old, 400, 100)
    outputs.new_file(1000, 500)
    assert.is_true(exists(old))
  end)

  it("sets an unsandboxed run's file aside, out of the project's folder", function()
    local path = assert(outputs.new_file(1000, 100))
    h.write(path, "secret output")
    local moved = assert(outputs.set_aside(path))
    assert.are.equal(outputs.unsandboxed_dir() .. "/" .. vim.fn.fnamemodify(path, ":t"), moved)
    assert.is_false(exists(path))
    assert.are.equal("secret output", h.read(moved))
  end)

  it("has no folder and no file path when the project's folder cannot be made, and raises nothing", function()
    -- the place of the outputs folder is taken by a file
    vim.fn.mkdir(cache, "p")
    h.write(cache .. "/outputs", "")
    local ok, dir_or_err = pcall(outputs.make_dir)
    local ok_new, file_or_err = pcall(outputs.new_file, 1000, 100)
    os.remove(cache .. "/outputs")
    assert.is_true(ok, dir_or_err)
    assert.is_nil(dir_or_err)
    assert.is_true(ok_new, file_or_err)
    assert.is_nil(file_or_err)
  end)

  it("removes the file when it cannot be set aside", function()
    local path = assert(outputs.new_file(1000, 100))
    h.write(path, "secret output")
    -- the unsandboxed folder's place is taken by a file: it cannot be made
    vim.fn.delete(outputs.unsandboxed_dir(), "rf")
    h.write(outputs.unsandboxed_dir(), "")
    local ok, moved = pcall(outputs.set_aside, path)
    os.remove(outputs.unsandboxed_dir())
    assert.is_true(ok, moved)
    assert.is_nil(moved)
    assert.is_false(exists(path))
  end)
end)
