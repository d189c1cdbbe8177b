-- The first start of a checkout nobody ran `make` in (a plugin manager
-- without a build step): the plugin never raises, builds the C core in the
-- background, says so, and is fully there once the build ends; help tags are
-- written on that start.
local h = require("support.helpers")

describe("first start without a built core", function()
  local t
  before_each(function()
    t = h.tmpdir()
  end)
  after_each(function()
    h.rmdir(t)
  end)

  it("builds the core in the background, then defines :FlemmaSandbox; help tags exist", function()
    h.sh("mkdir -p " .. t .. "/src " .. t .. "/home")
    h.copy_tree(t .. "/src")
    h.write(
      t .. "/init.lua",
      [[
vim.opt.rtp:prepend(os.getenv("T") .. "/src")
-- setup() in init.lua, before any plugin file and before the core exists
local kept = require("flemma_sandbox")
kept.setup({ policy = { network = false, limits = { processes = 77 } } })
local notes = {}
vim.notify = function(msg) notes[#notes + 1] = msg end
vim.api.nvim_create_autocmd("VimEnter", { callback = function()
  local t = os.getenv("T")
  local out = { "core_at_start=" .. tostring(pcall(require, "flemma_sandbox.core")) }
  -- until the plugin says the build ended (either way)
  local built = vim.wait(180000, function()
    local all = table.concat(notes, "\n")
    return all:find("built the C core", 1, true) ~= nil or all:find("building the C core failed", 1, true) ~= nil
  end, 100)
  out[#out + 1] = "built=" .. tostring(built)
  local ok, err = pcall(vim.cmd, "FlemmaSandbox status")
  out[#out + 1] = "status=" .. tostring(ok) .. " " .. tostring(err or "")
  -- the setup() of init.lua holds, through the module it got then and a new require
  local cfg_ok, cfg = pcall(kept.resolve_config)
  out[#out + 1] = "kept=" .. tostring(cfg_ok and cfg.policy.network)
    .. " " .. tostring(cfg_ok and cfg.policy.limits.processes)
  out[#out + 1] = "required=" .. tostring(require("flemma_sandbox").resolve_config().policy.limits.processes)
  out[#out + 1] = "notes=" .. table.concat(notes, " | ")
  local f = assert(io.open(t .. "/result", "w"))
  f:write(table.concat(out, "\n") .. "\n")
  f:close()
  vim.cmd("qa!")
end })
]]
    )
    local env = { HOME = t .. "/home", T = t, XDG_DATA_HOME = t .. "/home/.local/share" }
    local argv = { "timeout", "300", "nvim", "--headless", "-i", "NONE", "-u", t .. "/init.lua" }
    local r = h.run(argv, env, t)
    local result = h.read(t .. "/result") or ("no result:\n" .. r.stderr .. r.stdout)
    assert.matches("core_at_start=false\n", result)
    assert.matches("built=true\n", result)
    assert.matches("status=true", result)
    assert.matches("kept=false 77\n", result)
    assert.matches("required=77\n", result)
    assert.is_nil(result:find("setup(): ", 1, true), result)
    assert.matches("building the C core in the background", result)
    assert.matches("built the C core in " .. t:gsub("%p", "%%%0") .. "/src", result)
    assert.truthy(h.read(t .. "/src/doc/tags"), "no help tags")
    assert.truthy(h.read(t .. "/src/lua/flemma_sandbox/core.so"))
  end)
end)
