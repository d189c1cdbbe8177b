--- cli/sandbox.lua and cli/log.lua (run in Neovim): a command line
--- sandbox's name is a plain folder name, its project is the git
--- repository the working directory is in (or the folder), and
--- `flemma-sandbox log` refuses its wrong arguments naming them, with exit
--- code 2, before it opens anything.
local sandbox = require("flemma_sandbox.cli.sandbox")
local log = require("flemma_sandbox.cli.log")
local h = require("support.helpers")

--- The command line failure fn raises: its message (code 2).
local function failure(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  assert.are.equal("table", type(err), tostring(err))
  assert.are.equal(2, err.code)
  return err.cli_message
end

describe("cli.sandbox", function()
  describe("check_name", function()
    it("takes letters, digits, '.', '_' and '-', starting with a letter or digit, at most 60", function()
      for _, name in ipairs({ "a", "demo", "my-box_2.0", "0day", string.rep("x", 60) }) do
        assert.are.equal(name, sandbox.check_name(name))
      end
    end)

    it("refuses anything else, quoting it", function()
      for _, name in ipairs({ "", ".", "..", ".hidden", "-opt", "a/b", "a b", "a'b", "é", string.rep("x", 61) }) do
        assert.are.equal(
          "NAME: expected a sandbox name of letters, digits, '.', '_' and '-' (at most 60), got '" .. name .. "'",
          failure(sandbox.check_name, name)
        )
      end
      assert.matches("got none$", failure(sandbox.check_name, nil))
    end)
  end)

  describe("enter_project", function()
    local dir, old_cwd

    before_each(function()
      dir = h.tmpdir()
      old_cwd = vim.fn.getcwd()
    end)

    after_each(function()
      vim.cmd("cd " .. vim.fn.fnameescape(old_cwd))
      h.rmdir(dir)
    end)

    it("goes to the top of the repository the working directory is in", function()
      vim.fn.mkdir(dir .. "/repo/.git", "p")
      vim.fn.mkdir(dir .. "/repo/src/deep", "p")
      vim.cmd("cd " .. vim.fn.fnameescape(dir .. "/repo/src/deep"))
      assert.are.same({ dir .. "/repo", true }, { sandbox.enter_project() })
      assert.are.equal(dir .. "/repo", vim.fn.getcwd())
    end)

    it("takes a .git file (a worktree) as a repository too", function()
      vim.fn.mkdir(dir .. "/wt/sub", "p")
      h.write(dir .. "/wt/.git", "gitdir: /elsewhere\n")
      vim.cmd("cd " .. vim.fn.fnameescape(dir .. "/wt/sub"))
      assert.are.same({ dir .. "/wt", true }, { sandbox.enter_project() })
    end)

    it("is the folder itself outside git, and stays there", function()
      vim.fn.mkdir(dir .. "/plain/sub", "p")
      vim.cmd("cd " .. vim.fn.fnameescape(dir .. "/plain/sub"))
      local project, in_git = sandbox.enter_project()
      -- a repository above the spec's temporary folder would be found: there is none under /var/tmp
      assert.are.same({ dir .. "/plain/sub", false }, { project, in_git })
      assert.are.equal(dir .. "/plain/sub", vim.fn.getcwd())
    end)
  end)

  describe("wait", function()
    it("returns what done was called with, once the loop called it", function()
      assert.are.same({ 1, "two" }, {
        sandbox.wait(function(done)
          vim.defer_fn(function()
            done(1, "two")
          end, 20)
        end),
      })
    end)
  end)

  it("shows the user's shell config read-only and keeps fish's state", function()
    assert.is_true(vim.tbl_contains(sandbox.SHELL_CONFIG, "~/.bashrc"))
    assert.is_true(vim.tbl_contains(sandbox.SHELL_CONFIG, "~/.config/fish/config.fish"))
    assert.is_false(vim.tbl_contains(sandbox.SHELL_CONFIG, "~/.config/fish"))
    assert.are.same({ "~/.local/share/fish", "~/.config/fish" }, sandbox.SHELL_STATE)
  end)
end)

describe("cli.log", function()
  it("refuses an option, naming it", function()
    assert.are.equal("log: unknown option '--all' (flemma-sandbox help)", failure(log.log, { "demo", "--all" }))
    assert.are.equal("log: unknown option '-n' (flemma-sandbox help)", failure(log.log, { "-n", "demo" }))
  end)

  it("asks which sandbox without a name", function()
    assert.are.equal("log: which sandbox? flemma-sandbox log NAME (flemma-sandbox list)", failure(log.log, {}))
  end)

  it("refuses a third argument, naming it", function()
    assert.are.equal("log: unexpected argument 'x' (flemma-sandbox help)", failure(log.log, { "demo", "1", "x" }))
  end)

  it("refuses an N that is no call's number, quoting it", function()
    for _, n in ipairs({ "0", "1.5", "two", "1e400", "0x" }) do
      assert.are.equal(
        "log: N must be a call's number (flemma-sandbox log NAME lists them), not '" .. n .. "'",
        failure(log.log, { "demo", n })
      )
    end
  end)

  it("refuses a bad name before it opens anything", function()
    assert.matches("^NAME: expected a sandbox name", failure(log.log, { "../x" }))
  end)
end)
