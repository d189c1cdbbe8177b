-- The rock: `luarocks make` into a tree, then Neovim set up the way
-- rocks.nvim sets it up (the tree's share/lua and lib/lua on package.path
-- and package.cpath, every rock's folder on 'runtimepath'); and `luarocks
-- pack` of the rockspec, its source taken from a git repository of this tree
-- tagged as the rockspec says, then built again from the packed rock.
local h = require("support.helpers")

local function have(program)
  return h.run({ "sh", "-c", "command -v " .. program }).code == 0
end

local function extend(list, more)
  for _, v in ipairs(more) do
    list[#list + 1] = v
  end
  return list
end

local function pesc(s)
  return (s:gsub("%p", "%%%0"))
end

local rockspec = (h.capture("ls *.rockspec"):gsub("%s+$", ""))

describe("the rock", function()
  if not have("luarocks") then
    pending("skipped: luarocks is not installed")
    return
  end
  local t
  before_each(function()
    t = h.tmpdir()
  end)
  after_each(function()
    h.rmdir(t)
  end)

  local function luarocks(args, cwd)
    local argv = { "luarocks", "--lua-version=5.1", "--tree", t .. "/rocks" }
    extend(argv, args)
    local r = h.run(argv, { HOME = t .. "/home" }, cwd)
    assert(r.code == 0, table.concat(argv, " ") .. ":\n" .. r.stdout .. r.stderr)
    return r
  end

  it("installed with luarocks make, brings the command, help, health check, and wraps commands", function()
    h.copy_tree(t .. "/src")
    h.sh("mkdir -p " .. t .. "/home " .. t .. "/project")
    luarocks({ "make", rockspec }, t .. "/src")
    local rock_dir = h.capture("ls -d " .. t .. "/rocks/lib/luarocks/rocks-5.1/flemma-sandbox/*/"):gsub("%s+$", "")
    local copied = {
      "plugin/flemma_sandbox.lua",
      "doc/flemma-sandbox.txt",
      "autoload/health/flemma_sandbox.vim",
      "syntax/chat.vim",
    }
    for _, file in ipairs(copied) do
      assert.truthy(h.read(rock_dir .. file), "the rock has no " .. file)
    end
    h.check_install(
      t,
      [[
local t = os.getenv("T")
package.path = t .. "/rocks/share/lua/5.1/?.lua;" .. t .. "/rocks/share/lua/5.1/?/init.lua;" .. package.path
package.cpath = t .. "/rocks/lib/lua/5.1/?.so;" .. package.cpath
for _, dir in ipairs(vim.fn.glob(t .. "/rocks/lib/luarocks/rocks-5.1/*/*", true, true)) do
  vim.opt.runtimepath:append(dir)
end
]]
    )
  end)

  it("packs from the tagged source the rockspec names, and the packed rock builds", function()
    local version = rockspec:match("%-([%d.]+)%-%d+%.rockspec$")
    h.copy_tree(t .. "/src")
    h.sh("mkdir -p " .. t .. "/home " .. t .. "/out")
    h.sh(
      "cd "
        .. t
        .. "/src && git init -q && git add -A && "
        .. "git -c user.name=t -c user.email=t@t -c commit.gpgsign=false commit -qm tree && git tag v"
        .. version
    )
    -- the published rockspec, its source pointed at this machine's repository
    local spec = assert(h.read(rockspec))
    assert.matches('tag = "v' .. pesc(version) .. '"', spec)
    local url = spec:match('url = "(git%+https://[^"]+)"')
    assert.truthy(url, "the rockspec names no public git+https repository")
    h.write(t .. "/out/" .. rockspec, (spec:gsub(pesc(url), "git+file://" .. t .. "/src")))
    luarocks({ "pack", rockspec }, t .. "/out")
    local packed = h.capture("ls " .. t .. "/out/*.src.rock"):gsub("%s+$", "")
    assert.truthy(packed ~= "", "no .src.rock written")
    luarocks({ "install", packed }, t .. "/out")
    assert.truthy(h.read(t .. "/rocks/lib/lua/5.1/flemma_sandbox/core.so"))
    assert.truthy(h.read(t .. "/rocks/share/lua/5.1/flemma_sandbox/health.lua"))
  end)
end)
