--- backends/workspace_shown.lua (run in Neovim, real bwrap and git): what
--- a copy's view shows of the user's tree besides the copy: the folders
--- git ignores at the repository's top (not copied) are the user's own,
--- read-only, or copy-on-write where bwrap mounts overlays; a name that
--- is no plain folder of the user's is not shown.
local copies = require("flemma_sandbox.backends.workspace_copies")
local clone_plan = require("flemma_sandbox.policy.clone_plan")
local h = require("support.helpers")
local shown = require("flemma_sandbox.backends.workspace_shown")

describe("backends.workspace_shown", function()
  local dir, top, space

  before_each(function()
    dir = h.tmpdir()
    top = dir .. "/proj"
    h.sh(
      "mkdir -p "
        .. h.shell_quote(top .. "/build")
        .. " "
        .. h.shell_quote(dir .. "/chat")
        .. " && cd "
        .. h.shell_quote(top)
        .. " && git init -q . && printf 'build/\\nlinked/\\n' > .gitignore && printf 'one\\n' > a.txt"
        .. " && git add -A && git -c user.name=u -c user.email=u@e commit -qm init"
        .. " && printf 'built\\n' > build/out.bin && ln -s /etc linked"
    )
    space = { top = top, clone = clone_plan.clone_for(dir .. "/chat", top) }
    local spec = copies.spec(space, { deny_paths = {} }, vim.fn.exepath("bwrap"))
    assert.is_true(copies.ensure_now(spec))
  end)

  after_each(function()
    h.rmdir(dir)
  end)

  it("shows the user's ignored folder read-only, or copy-on-write with overlays; a link is not shown", function()
    assert.is_nil(h.read(space.clone .. "/build/out.bin"), "control: the ignored folder is not copied")
    assert.are.same({ "--ro-bind", top .. "/build", top .. "/build" }, shown.view_options(space, false))
    assert.are.same(
      { "--overlay-src", top .. "/build", "--tmp-overlay", top .. "/build" },
      shown.view_options(space, true)
    )
  end)

  it("lets a command in the view read the ignored folder and never write it (real bwrap)", function()
    local argv = { "bwrap" }
    vim.list_extend(argv, copies.view_options({ space }, false))
    local script = "cat build/out.bin; echo changed > build/out.bin; echo rc=$?"
    vim.list_extend(argv, { "--chdir", top, "--", "sh", "-c", script })
    local out = vim.fn.system(argv)
    assert.matches("^built\n", out)
    assert.matches("rc=[1-9]", out)
    assert.are.equal("built\n", h.read(top .. "/build/out.bin"))
  end)
end)
