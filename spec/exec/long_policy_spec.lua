--- Policies longer than one argument list may be: bwrap's options go
--- through "--args FD"; past bwrap's own cap the error says so.
local h = require("support.helpers")
local surroundings = require("flemma_sandbox.base.surroundings")
local sandbox = require("flemma_sandbox")

describe("a very long policy (real bwrap)", function()
  local dir
  before_each(function()
    dir = h.tmpdir()
    h.sh("mkdir " .. dir .. "/hide " .. dir .. "/proj && cd " .. dir .. "/hide && touch $(seq -f 'f%g' 1 3000)")
    h.write(dir .. "/hide/f1", "SECRET\n")
    surroundings.use({
      cwd = function()
        return dir .. "/proj"
      end,
    })
  end)
  after_each(function()
    surroundings.use(nil)
    sandbox.setup()
    h.rmdir(dir)
  end)

  local function hide(n)
    local list = {}
    for i = 1, n do
      list[i] = dir .. "/hide/f" .. i
    end
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { "$CWD" }, deny_read = list } })
  end

  it("passes 2,500 hidden files through --args FD, and every one is hidden", function()
    hide(2500)
    local argv = assert(sandbox.wrap_command({ "sh", "-c", "cat " .. dir .. "/hide/f1 " .. dir .. "/hide/f2500" }))
    assert.is_true(#argv < 100, "the options went into a file")
    local file
    for i, word in ipairs(argv) do
      if word == "--args-file" then
        file = argv[i + 1]
      end
    end
    assert.truthy(file and h.read(file):find(dir .. "/hide/f2499\0", 1, true))
    local r = h.run(argv)
    assert.are_not.equal(0, r.code)
    assert.is_nil(r.stdout:find("SECRET", 1, true))
    assert.matches("f2500: Permission denied", r.stderr)
    assert.is_nil(h.read(file), "the helper removed the file once bwrap had it")
  end)

  it("keeps bwrap's environment empty in --args-file mode: /proc/1/environ holds no key", function()
    hide(2500)
    local secret = "FLEMMA-ARGS-SECRET-" .. tostring(os.time())
    local cmd = { "sh", "-c", "tr '\\0' '\\n' < /proc/1/environ && echo done" }
    -- control first: bwrap started with the caller's environment shows the
    -- key there (each wrap makes a fresh argument file; the helper removes it)
    local words = {}
    for i, word in ipairs(assert(sandbox.wrap_command(cmd))) do
      if word ~= "--clearenv" or i > 3 then
        words[#words + 1] = word
      end
    end
    local r = h.run(words, { OPENAI_API_KEY = secret })
    if r.stderr:match("Permission denied") then
      return pending("bwrap's pid 1 is not readable to the command here (root)")
    end
    assert.truthy(r.stdout:find(secret, 1, true), "without --clearenv bwrap's pid 1 has the key")
    local argv = assert(sandbox.wrap_command(cmd))
    assert.are.equal("--clearenv", argv[2])
    assert.are.equal("--args-file", argv[3])
    r = h.run(argv, { OPENAI_API_KEY = secret })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("done", r.stdout)
    assert.is_nil(r.stdout:find(secret, 1, true))
  end)

  it("keeps a short policy on the command line", function()
    hide(10)
    local argv = assert(sandbox.wrap_command({ "true" }))
    for _, word in ipairs(argv) do
      assert.are_not.equal("--args-file", word)
    end
    assert.are.equal(0, h.run(argv).code)
  end)

  it("refuses a policy past bwrap's argument cap with a clear error", function()
    hide(3000)
    local argv, err = sandbox.wrap_command({ "true" })
    assert.is_nil(argv)
    assert.matches("policy too large: %d+ bwrap arguments %(bwrap accepts at most 9000%); hidden paths: 300%d", err)
    assert.are.equal(9000, require("flemma_sandbox.backends.helper").MAX_ARGS)
  end)
end)
