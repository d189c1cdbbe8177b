--- The scripts git runs in its bwrap (lua/flemma_sandbox/libexec/): each
--- one the Lua names is there, each one there is named, shellcheck reads
--- them all in make lint (a planted finding fails it: the control), and
--- their answers are read as JSON lines by one parser (git_box.answers).
local LIBEXEC = "lua/flemma_sandbox/libexec"

---@param cmd string
---@return string out, boolean ok
local function run(cmd)
  local f = assert(io.popen(cmd .. ' 2>&1; echo "rc=$?"'))
  local out = f:read("*a")
  f:close()
  local rc = out:match("rc=(%d+)%s*$")
  return out, rc == "0"
end

--- The files under dir whose name matches; with shallow, of dir itself
--- only (not of its folders).
---@param dir string
---@param pattern string a find -name pattern
---@param shallow? boolean
---@return string[]
local function files_in(dir, pattern, shallow)
  local out = {}
  local depth = shallow and " -maxdepth 1" or ""
  local list = assert(io.popen("find " .. dir .. depth .. " -type f -name '" .. pattern .. "' | LC_ALL=C sort"))
  for path in list:lines() do
    out[#out + 1] = path
  end
  list:close()
  return out
end

--- Whether a shell command succeeded: LuaJIT's os.execute gives the status
--- (0), or true with Lua 5.2's results where it is built so (sid's).
---@param command string
---@return boolean
local function succeeds(command)
  local first = os.execute(command)
  return first == 0 or first == true
end

describe("libexec scripts", function()
  it("are the ones the Lua names, each a POSIX sh file that stops at the first error", function()
    local named = {}
    for _, path in ipairs(files_in("lua", "*.lua")) do
      local f = assert(io.open(path, "r"))
      local text = f:read("*a")
      f:close()
      -- cli/prompt.lua names the interactive shell's files (the next test)
      for name in (path:match("cli/prompt%.lua$") and "" or text):gmatch('"([%w_]+%.sh)"') do
        named[name] = path
      end
    end
    local present = {}
    for _, path in ipairs(files_in(LIBEXEC, "*.sh", true)) do
      local name = path:match("([^/]+)$")
      present[name] = true
      assert.is_truthy(named[name], name .. " is named by no Lua file")
      local f = assert(io.open(path, "r"))
      local text = f:read("*a")
      f:close()
      assert.are.equal("#!/bin/sh\n", text:sub(1, 10), name)
      assert.is_truthy(text:find("\nset %-eu\n"), name .. " has no set -eu")
    end
    for name, by in pairs(named) do
      assert.is_true(present[name] == true, by .. " names " .. name .. ", which is not in " .. LIBEXEC)
    end
    assert.is_true(next(present) ~= nil)
  end)

  it("of the interactive shell (libexec/shell/) are the ones cli/prompt.lua names", function()
    local f = assert(io.open("lua/flemma_sandbox/cli/prompt.lua", "r"))
    local text = f:read("*a")
    f:close()
    local named, present = {}, {}
    for name in text:gmatch('"([%w_]+_[%w]+%.[%w]+)"') do
      named[name] = true
    end
    for _, path in ipairs(files_in(LIBEXEC .. "/shell", "*", true)) do
      local name = path:match("([^/]+)$")
      present[name] = true
      assert.is_true(named[name] == true, name .. " is named by no Lua file")
    end
    for name in pairs(named) do
      assert.is_true(present[name] == true, "prompt.lua names " .. name .. ", which is not there")
    end
    assert.is_true(present["bash_rc.bash"] and present["sh_launch.sh"])
  end)

  it("pass shellcheck in make lint, which fails on a planted finding (control)", function()
    local _, has = run("command -v shellcheck")
    if not has then
      return pending("no shellcheck here")
    end
    local out, ok = run("make -s lint-sh")
    assert.is_true(ok, out)
    local dir = os.tmpname()
    os.remove(dir)
    assert(succeeds("mkdir -p " .. dir))
    local planted = dir .. "/planted.sh"
    local f = assert(io.open(planted, "w"))
    f:write('#!/bin/sh\nset -eu\nfor f in $(ls "$1"); do rm $f; done\n')
    f:close()
    out, ok = run("make -s lint-sh SH_SCRIPTS=" .. planted)
    os.execute("rm -rf " .. dir)
    assert.is_false(ok, out)
    assert.matches("SC2045", out)
  end)

  it("make JSON strings of odd names in sh (each script's own json function, run)", function()
    local cjson = require("cjson")
    local dir = os.tmpname()
    os.remove(dir)
    assert(succeeds("mkdir -p " .. dir))
    -- a name: quotes, backslashes, a tab and a control character (as ?);
    -- shadow_restore.sh's strings are encoded paths ([A-Za-z0-9._/-] and \0ooo)
    local cases = {
      name = { 'a"b\\c\td\1e', 'a"b\\c\td?e' },
      encoded = { "src/a\\0040b.txt", "src/a\\0040b.txt" },
    }
    local seen = 0
    for _, path in ipairs(files_in(LIBEXEC, "*.sh", true)) do
      local f = assert(io.open(path, "r"))
      local line = f:read("*a"):match("\n(json%(%) {[^\n]*)\n")
      f:close()
      if line then
        seen = seen + 1
        local case = path:match("shadow_restore") and cases.encoded or cases.name
        f = assert(io.open(dir .. "/value", "w"))
        f:write(case[1])
        f:close()
        f = assert(io.open(dir .. "/json.sh", "w"))
        f:write(line .. '\nprintf \'"%s"\' "$(json "$(cat "$1")")"\n')
        f:close()
        local out = run("sh " .. dir .. "/json.sh " .. dir .. "/value")
        local ok, value = pcall(cjson.decode, (out:gsub("rc=%d+%s*$", "")))
        assert.is_true(ok, path .. ": " .. out)
        assert.are.equal(case[2], value, path)
      end
    end
    os.execute("rm -rf " .. dir)
    assert.are.equal(4, seen)
  end)

  it("answer in JSON lines, read once: other lines left out, strings as JSON has them", function()
    local git_box = require("flemma_sandbox.backends.git_box")
    local out = table.concat({
      "warning: a line of git's",
      '{"answer":"held","ref":"refs/remotes/sandbox-a/x\\"y","commit":"abc","files":["a\\tb","c\\\\d"]}',
      "{not json",
      '{"no_answer":1}',
      '{"answer":"synced"}',
    }, "\n") .. "\n"
    local answers = git_box.answers(out)
    assert.are.equal(2, #answers)
    assert.are.same({ "a\tb", "c\\d" }, answers[1].files)
    assert.are.equal('refs/remotes/sandbox-a/x"y', answers[1].ref)
    assert.is_truthy(git_box.answer(out, "synced"))
    assert.is_nil(git_box.answer(out, "created"))
    assert.is_nil(git_box.answer(nil, "created"))
  end)
end)
