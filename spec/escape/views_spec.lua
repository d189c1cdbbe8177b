--- Escape suite: one rule set for the sandbox and the host-side tools. The
--- host-side read refuses what the sandbox cannot see (the host's /dev/shm
--- among the private views); saved outputs are one folder per project, and
--- a project's sandbox sees its own only. Each with its control.
local f = require("escape.fixture")
local files = require("flemma_sandbox.tools.files")
local h = require("support.helpers")

local q = h.shell_quote

describe("escape: the host-side view equals the sandbox's", function()
  local w, cache
  setup(function()
    w = f.create()
    cache = w.home .. "/.cache/nvim" -- in the home folder, as Neovim's is
    f.use_host(w, {
      stdpath = function(name)
        return name == "cache" and cache or nil
      end,
    })
  end)
  teardown(function()
    f.destroy(w)
  end)
  before_each(function()
    f.policy()
  end)

  --- read's run() from the host side, as the chat runs it.
  local function read_file(path)
    local got
    local ctx = { cwd = w.proj, config = require("flemma_sandbox.config").resolve(nil) }
    files.read.run({ path = path }, ctx, function(result)
      got = result
    end)
    return got
  end

  it("read refuses a file in the host's /dev/shm, which no sandbox sees", function()
    local shm = "/dev/shm/flemma-escape-" .. tostring(math.random(1e9))
    h.write(shm, f.SECRET .. "\n") -- a password manager's decrypted entry
    local r = f.attack(w, "cat " .. q(shm))
    assert.is_nil(r.stdout:find(f.SECRET, 1, true), "the sandbox has its own /dev/shm")
    local got = read_file(shm)
    assert.is_nil((got.content or ""):find(f.SECRET, 1, true))
    assert.matches("private /dev", tostring(got.error))
    -- control: without the private /dev rule, read hands the file over
    local private = require("flemma_sandbox.policy.private")
    local saved = private.DEV
    private.DEV = { path = "/nonexistent-dev", rule = saved.rule }
    f.policy() -- a fresh policy, not the cached one
    got = read_file(shm)
    private.DEV = saved
    assert.truthy((got.content or ""):find(f.SECRET, 1, true), tostring(got.error))
    os.remove(shm)
  end)

  it("a project's sandbox reads its own saved outputs, never another project's or an unsandboxed run's", function()
    local util = require("flemma_sandbox.base.util")
    local own = util.outputs_dir(cache, w.proj)
    local other = util.outputs_dir(cache, w.outside .. "/other-project")
    local unsandboxed = util.unsandboxed_outputs_dir(cache)
    for _, dir in ipairs({ own, other, unsandboxed }) do
      h.sh("mkdir -p " .. q(dir))
    end
    h.write(own .. "/output-1.txt", "OWN-OUTPUT\n")
    h.write(other .. "/output-2.txt", f.SECRET .. "-other\n")
    h.write(unsandboxed .. "/output-3.txt", f.SECRET .. "-unsandboxed\n")
    local r = f.attack(
      w,
      "cat "
        .. q(own .. "/output-1.txt")
        .. " "
        .. q(other .. "/output-2.txt")
        .. " "
        .. q(unsandboxed .. "/output-3.txt")
        .. "; ls -R "
        .. q(cache)
    )
    -- control: the project's own output is there to read
    assert.matches("OWN%-OUTPUT", r.stdout)
    assert.is_nil(r.stdout:find(f.SECRET, 1, true))
    assert.is_nil(r.stdout:find("output-2", 1, true))
    assert.is_nil(r.stdout:find("output-3", 1, true))
    h.sh("rm -rf " .. q(cache))
  end)
end)
