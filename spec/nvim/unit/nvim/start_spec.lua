--- nvim/start.lua (run in Neovim): what the plugin file does at start-up:
--- the plugin's folder, help tags written where missing (and only
--- there), the core's presence, a build with real make in the background
--- that says how it went, and a start that defines :FlemmaSandbox.
local h = require("support.helpers")
local start = require("flemma_sandbox.nvim.start")

describe("nvim.start", function()
  local dir

  --- A plugin folder at dir/name with doc/flemma-sandbox.txt (one tag).
  local function plugin_folder(name)
    local folder = dir .. "/" .. name
    h.sh("mkdir -p " .. h.shell_quote(folder .. "/doc"))
    h.write(folder .. "/doc/flemma-sandbox.txt", "*flemma-sandbox.txt*  a spec's help\n\n*flemma-sandbox-x*  x\n")
    return folder
  end

  --- Runs start.build(root) and waits: ok, message.
  local function build(root)
    local ok, message
    start.build(root, function(o, m)
      ok, message = o, m
    end)
    assert.is_true(vim.wait(30000, function()
      return message ~= nil
    end, 20))
    return ok, message
  end

  before_each(function()
    dir = h.tmpdir()
  end)

  after_each(function()
    h.rmdir(dir)
  end)

  it("knows the plugin's folder, and that its core is there and loads", function()
    assert.are.equal(vim.fn.getcwd(), start.root())
    assert.is_true(start.core_present(start.root()))
    assert.are.same({ true, nil }, { start.core_loads() })
  end)

  it("writes help tags where they are missing, in each folder given, and keeps tags that are there", function()
    local a, b, kept = plugin_folder("a"), plugin_folder("b"), plugin_folder("kept")
    h.write(kept .. "/doc/tags", "the user's tags\n")
    local none = dir .. "/none"
    h.sh("mkdir -p " .. h.shell_quote(none .. "/doc"))
    start.ensure_helptags({ a, nil, b, kept, none })
    for _, folder in ipairs({ a, b }) do
      assert.matches("flemma%-sandbox%-x\tflemma%-sandbox%.txt\t", h.read(folder .. "/doc/tags") or "")
    end
    assert.are.equal("the user's tags\n", h.read(kept .. "/doc/tags"))
    assert.is_nil(h.read(none .. "/doc/tags"), "no help file: no tags")
  end)

  it("builds with make in the background and says how it went (real make)", function()
    local root = dir .. "/plugin"
    h.sh("mkdir -p " .. h.shell_quote(root))
    h.write(root .. "/Makefile", "all:\n\techo built > built.txt\n")
    local ok, message = build(root)
    assert.is_true(ok, message)
    assert.are.equal("built the C core in " .. root, message)
    assert.are.equal("built\n", h.read(root .. "/built.txt"))

    h.write(root .. "/Makefile", "all:\n\techo the compiler said no >&2; exit 3\n")
    ok, message = build(root)
    assert.is_false(ok)
    assert.matches("^building the C core failed %(make %-C " .. vim.pesc(root) .. "%):\n", message)
    assert.matches("the compiler said no", message)
  end)

  it("starts: help tags in the plugin file's folder, and :FlemmaSandbox defined", function()
    local folder = plugin_folder("rock")
    pcall(vim.api.nvim_del_user_command, "FlemmaSandbox")
    assert.are.equal(0, vim.fn.exists(":FlemmaSandbox"), "control: the command is gone")
    start.run(folder)
    assert.are.equal(2, vim.fn.exists(":FlemmaSandbox"))
    assert.matches("flemma%-sandbox%-x", h.read(folder .. "/doc/tags") or "")
  end)
end)
