--- run/spill.lua: a job's spill file keeps both streams up to a cap and,
--- when it was cut, ends with one line saying how much of how much was kept.
local spill = require("flemma_sandbox.run.spill")
local h = require("support.helpers")

describe("run.spill", function()
  local dir

  before_each(function()
    dir = h.tmpdir()
  end)

  after_each(function()
    h.rmdir(dir)
  end)

  it("keeps everything under the cap, with no line added", function()
    local s = spill.new(dir .. "/out", 100)
    s:write("one\n")
    s:write("two\n")
    assert.are.same({ kept = 8, total = 8 }, s:close())
    assert.are.equal("one\ntwo\n", h.read(dir .. "/out"))
  end)

  it("keeps everything at exactly the cap, with no line added", function()
    local s = spill.new(dir .. "/out", 4)
    s:write("abcd")
    assert.are.same({ kept = 4, total = 4 }, s:close())
    assert.are.equal("abcd", h.read(dir .. "/out"))
  end)

  it("cuts a write that crosses the cap and says so on a new line", function()
    local s = spill.new(dir .. "/out", 10)
    s:write("hello ")
    s:write("world, and more")
    s:write("never kept")
    assert.are.same({ kept = 10, total = 31 }, s:close())
    assert.are.equal(
      "hello worl\n[flemma-sandbox: output cut here: the first 10 of 31 bytes were kept"
        .. " (tools.output_file_max_bytes)]\n",
      h.read(dir .. "/out")
    )
  end)

  it("adds no blank line when the kept part ends with a newline", function()
    local s = spill.new(dir .. "/out", 6)
    s:write("line1\nline2\n")
    s:close()
    assert.are.equal(
      "line1\n[flemma-sandbox: output cut here: the first 6 of 12 bytes were kept (tools.output_file_max_bytes)]\n",
      h.read(dir .. "/out")
    )
  end)

  it("with a cap of 0 holds only the line", function()
    local s = spill.new(dir .. "/out", 0)
    s:write("x")
    assert.are.same({ kept = 0, total = 1 }, s:close())
    assert.are.equal(
      "[flemma-sandbox: output cut here: the first 0 of 1 bytes were kept (tools.output_file_max_bytes)]\n",
      h.read(dir .. "/out")
    )
  end)

  it("has no cap without a max", function()
    local s = spill.new(dir .. "/out")
    local chunk = string.rep("x", 65536)
    for _ = 1, 4 do
      s:write(chunk)
    end
    assert.are.same({ kept = 262144, total = 262144 }, s:close())
    assert.are.equal(262144, #h.read(dir .. "/out"))
  end)

  it("without a path counts nothing to a file and closes to nil", function()
    local s = spill.new(nil, 10)
    s:write("data")
    assert.is_nil(s.file)
    assert.is_nil(s:close())
  end)

  it("is nil when the file cannot be opened, and never raises", function()
    local s = spill.new(dir .. "/no/such/folder/out", 10)
    s:write("data")
    assert.is_nil(s:close())
  end)

  it("closes once: a second close is nil", function()
    local s = spill.new(dir .. "/out", 10)
    s:write("a")
    assert.is_truthy(s:close())
    assert.is_nil(s:close())
  end)

  it("truncates a file that was there before", function()
    h.write(dir .. "/out", "old contents that are long")
    local s = spill.new(dir .. "/out", 100)
    s:write("new")
    s:close()
    assert.are.equal("new", h.read(dir .. "/out"))
  end)
end)
