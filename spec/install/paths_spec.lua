-- The install paths the README names besides lazy.nvim (lazy_spec.lua) and
-- a checkout nobody built (first_start_spec.lua): a rock whose folder alone
-- is on 'runtimepath' (what `luarocks --local make` and one rtp line give),
-- and `make install PREFIX=...` into a package folder. Each in a fresh HOME,
-- checked as a user would check it: command, help, health, a wrapped command.
local h = require("support.helpers")

describe("install paths", function()
  local t
  before_each(function()
    t = h.tmpdir()
    h.copy_tree(t .. "/src")
    h.sh("mkdir -p " .. t .. "/home " .. t .. "/project")
  end)
  after_each(function()
    h.rmdir(t)
  end)

  it("a rock's folder alone on 'runtimepath' finds its tree (luarocks --local), help tags made", function()
    if h.run({ "sh", "-c", "command -v luarocks" }).code ~= 0 then
      return pending("luarocks is not installed")
    end
    local rockspec = (h.capture("ls *.rockspec"):gsub("%s+$", ""))
    local r = h.run(
      { "luarocks", "--lua-version=5.1", "--tree", t .. "/rocks", "make", rockspec },
      { HOME = t .. "/home" },
      t .. "/src"
    )
    assert(r.code == 0, r.stdout .. r.stderr)
    local rock_dir = h.capture("ls -d " .. t .. "/rocks/lib/luarocks/rocks-5.1/flemma-sandbox/*/"):gsub("%s+$", "")
    assert.truthy(h.read(rock_dir .. "doc/tags"), "the rock has no help tags")
    -- no package.path or cpath line: the plugin file adds the tree
    h.check_install(t, "vim.opt.runtimepath:append(" .. string.format("%q", rock_dir) .. ")\n")
  end)

  it("make install PREFIX=... installs a package with help tags", function()
    local r = h.run({ "make", "-s", "install", "PREFIX=" .. t .. "/site" }, { HOME = t .. "/home" }, t .. "/src")
    assert(r.code == 0, r.stdout .. r.stderr)
    assert.truthy(h.read(t .. "/site/pack/flemma-sandbox/start/flemma-sandbox/doc/tags"), "no help tags")
    h.check_install(t, "vim.opt.packpath:prepend(" .. string.format("%q", t .. "/site") .. ")\n")
  end)
end)
