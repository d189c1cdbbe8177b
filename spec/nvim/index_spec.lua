--- The background build of the current folder's ".git" scan index
--- (autocmds.warm_index, flemma-sandbox-tool --index-repos): the policy's
--- own scan then finds the same index, and what it says is right.
local h = require("support.helpers")
local autocmds = require("flemma_sandbox.nvim.autocmds")
local core = require("flemma_sandbox.core")
local sandbox = require("flemma_sandbox")

describe("scan index built at start", function()
  local dir, cwd, index
  before_each(function()
    dir = h.tmpdir()
    cwd = vim.fn.getcwd()
    index = require("flemma_sandbox.base.surroundings").state_dir("index")
    h.sh("rm -f " .. index .. "/*.idx")
    h.sh("cd " .. dir .. " && mkdir -p .git a/b/c vendor/lib && git init -q vendor/lib")
    vim.cmd("cd " .. vim.fn.fnameescape(dir))
    sandbox.setup({ policy = { network = false } })
  end)
  after_each(function()
    vim.cmd("cd " .. vim.fn.fnameescape(cwd))
    sandbox.clear()
    sandbox.setup()
    h.rmdir(dir)
  end)

  local function indexes()
    return vim.fn.glob(index .. "/*.idx", false, true)
  end

  it("is the one the policy's .git scan uses, and the policy sees a repository made after it", function()
    assert.is_true(autocmds.warm_index())
    vim.wait(10000, function()
      return #indexes() == 1
    end, 10)
    local built = indexes()
    assert.are.equal(1, #built)
    local id = core.node_id(built[1])
    h.sh("sleep 2.2") -- past the time in which a recorded folder is read anyway
    h.sh("cd " .. dir .. " && git init -q a/b/c")
    local ro = table.concat(sandbox.get_policy().ro_paths, "\n")
    assert.truthy(ro:find(dir .. "/vendor/lib/.git", 1, true))
    assert.truthy(ro:find(dir .. "/a/b/c/.git", 1, true))
    assert.are.same(built, indexes(), "no second index for the same scan")
    assert.are_not.equal(id, core.node_id(built[1]), "the change was recorded")
  end)

  it("the first chat's policy is resolved once it is built: its first tool call resolves none", function()
    local cache = require("flemma_sandbox.policy.cache")
    local put, puts = cache.put, 0
    cache.put = function(...)
      puts = puts + 1
      return put(...)
    end
    local n = require("support.nvim")
    local ok, err = pcall(function()
      sandbox.setup({ policy = { network = false }, approval = { bash = "allow" } })
      local chat = n.open_chat(dir .. "/first.chat", { "@You:", "hi" })
      vim.wait(10000, function()
        return #indexes() == 1 and puts > 0
      end, 10)
      assert.are.equal(1, puts, "resolved once the index was built")
      local r = n.run_tool("bash", { command = "echo ran" }, { bufnr = chat })
      assert.are.equal("ran", r.stdout, vim.inspect(r))
      assert.are.equal(1, puts, "the first call found the policy resolved")
      -- control: a buffer that is no chat resolves at its first call
      local plain = vim.api.nvim_create_buf(true, false)
      n.run_tool("bash", { command = "true" }, { bufnr = plain })
      assert.are.equal(2, puts)
    end)
    cache.put = put
    vim.cmd("silent! %bwipeout!")
    assert(ok, err)
  end)

  it("a chat's first call made at once waits for it in the main loop: the one resolution finds it built", function()
    local cache = require("flemma_sandbox.policy.cache")
    local put, built_at = cache.put, {}
    cache.put = function(...)
      built_at[#built_at + 1] = #indexes()
      return put(...)
    end
    local n = require("support.nvim")
    local ok, err = pcall(function()
      sandbox.setup({ policy = { network = false }, approval = { bash = "allow" } })
      h.write(dir .. "/first.chat", "@You:\nhi\n")
      vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/first.chat"))
      -- at once: the index is being built
      local r = n.run_tool("bash", { command = "echo ran" }, { bufnr = vim.api.nvim_get_current_buf() })
      assert.are.equal("ran", r.stdout, vim.inspect(r))
      assert.are.same({ 1 }, built_at, "resolved once, after the index was built")
    end)
    cache.put = put
    vim.cmd("silent! %bwipeout!")
    assert(ok, err)
  end)

  it("is not built for the root folder, and a bad index folder is refused by the helper", function()
    vim.cmd("cd /")
    assert.is_false(autocmds.warm_index())
    local helper = require("flemma_sandbox.backends.helper").helper()
    local r = h.run({ helper, "--index-repos", "relative", dir })
    assert.are.equal(2, r.code)
    assert.are.same({}, vim.fn.glob(dir .. "/*.idx", false, true))
  end)
end)
