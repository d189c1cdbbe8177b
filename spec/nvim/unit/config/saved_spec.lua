--- config/saved.lua (run in Neovim): the config the command line applies,
--- saved as JSON in $XDG_STATE_HOME/flemma-sandbox/config.json when a
--- layer changes, written whole (aside, then renamed), never by the
--- command line itself; a broken file is reported naming its path.
local saved = require("flemma_sandbox.config.saved")
local h = require("support.helpers")

describe("config.saved", function()
  local path

  before_each(function()
    path = assert(saved.path())
    os.remove(path)
    saved.frozen = false
  end)

  after_each(function()
    os.remove(path)
    saved.frozen = false
  end)

  it("is config.json in the state folder", function()
    assert.are.equal(os.getenv("XDG_STATE_HOME") .. "/flemma-sandbox/config.json", path)
  end)

  it("reads as empty without the file", function()
    assert.are.same({ {}, nil }, { saved.read() })
  end)

  it("writes each layer with a version and reads them back", function()
    saved.write("setup", { policy = { network = "host" } })
    saved.write("flemma", { policy = { deny_domains = { "x.test" } } })
    local got = saved.read()
    assert.are.equal(1, got.version)
    assert.are.same({ policy = { network = "host" } }, got.setup)
    assert.are.same({ policy = { deny_domains = { "x.test" } } }, got.flemma)
    assert.are.same(
      { "config.json" },
      vim.fn.readdir(vim.fn.fnamemodify(path, ":h"), function(name)
        return name:find("^config%.json") and 1 or 0
      end)
    )
  end)

  it("does not write a layer that did not change", function()
    saved.write("setup", { tools = { timeout_ms = 5 } })
    os.execute("touch -d @1000000000 " .. h.shell_quote(path))
    saved.write("setup", { tools = { timeout_ms = 5 } })
    assert.are.equal(1000000000, vim.loop.fs_stat(path).mtime.sec)
    saved.write("setup", { tools = { timeout_ms = 6 } })
    assert.are_not.equal(1000000000, vim.loop.fs_stat(path).mtime.sec)
  end)

  it("removes a layer set to nil", function()
    saved.write("setup", { enabled = false })
    saved.write("setup", nil)
    assert.is_nil(saved.read().setup)
  end)

  it("does not save a layer that is not JSON (a function) and keeps the old one", function()
    saved.write("setup", { enabled = false })
    saved.write("setup", { hook = function() end })
    assert.are.same({ enabled = false }, saved.read().setup)
  end)

  it("writes nothing when frozen (the command line)", function()
    saved.frozen = true
    saved.write("setup", { enabled = false })
    assert.is_nil(h.read(path))
  end)

  it("reports a broken file naming its path, and reads it as empty", function()
    vim.fn.mkdir(vim.fn.fnamemodify(path, ":h"), "p")
    h.write(path, "{ not json")
    local got, err = saved.read()
    assert.are.same({}, got)
    assert.are.equal(path .. ": not the JSON the command line writes; delete it and start Neovim again", err)
    h.write(path, '"a string"')
    got, err = saved.read()
    assert.are.same({}, got)
    assert.is_truthy(err)
  end)
end)
