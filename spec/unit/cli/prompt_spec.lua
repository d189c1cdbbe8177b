--- cli/prompt.lua: the interactive shell of `flemma-sandbox run NAME` is
--- the user's own shell with its own start-up files, and "(sandbox NAME) "
--- in front of its prompt, for that shell only. Each shell that is
--- installed is started for real, its input a pipe (-i makes it
--- interactive), and what it prints is read back.
local prompt = require("flemma_sandbox.cli.prompt")
local h = require("support.helpers")

--- The path of a program, or nil.
local function which(name)
  local out = h.capture("command -v " .. name .. " 2>/dev/null"):gsub("%s+$", "")
  return out ~= "" and out or nil
end

describe("cli.prompt", function()
  local dir

  --- Runs prompt.command(shell, "demo") with `input` as its stdin, in a
  --- clean environment whose HOME and TMPDIR are in dir; both streams.
  local function run(shell, input, env)
    local words = {}
    for i, a in ipairs(prompt.command(shell, "demo")) do
      words[i] = h.shell_quote(a)
    end
    h.write(dir .. "/input", input)
    return h.capture(
      "cd "
        .. h.shell_quote(dir)
        .. " && env -i HOME="
        .. h.shell_quote(dir .. "/home")
        .. " TMPDIR="
        .. h.shell_quote(dir .. "/tmp")
        .. " PATH=/usr/bin:/bin TERM=dumb "
        .. (env or "")
        .. " "
        .. table.concat(words, " ")
        .. " <"
        .. h.shell_quote(dir .. "/input")
        .. " 2>&1"
    )
  end

  --- The files left in the run's TMPDIR (the start-up file is removed as it is read).
  local function left_in_tmp()
    return (h.capture("ls -A " .. h.shell_quote(dir .. "/tmp")):gsub("%s+$", ""))
  end

  before_each(function()
    dir = h.tmpdir()
    os.execute("mkdir -p " .. dir .. "/home " .. dir .. "/tmp")
  end)

  after_each(function()
    h.rmdir(dir)
  end)

  it("prefixes with the sandbox's name", function()
    assert.are.equal("(sandbox demo) ", prompt.prefix("demo"))
  end)

  it("starts a shell it does not know as it is", function()
    assert.are.same({ "/opt/bin/xonsh" }, prompt.command("/opt/bin/xonsh", "demo"))
  end)

  it("refuses a name a prompt would expand", function()
    for _, name in ipairs({ "a'b", "a$b", "a`b", "a\\b", "a%b" }) do
      local ok, err = pcall(prompt.command, "/bin/bash", name)
      assert.is_false(ok, name)
      assert.matches("a sandbox name a prompt would expand", err)
    end
  end)

  it("gives each shell kind its start: bash an rc file, sh-likes $ENV, zsh a ZDOTDIR, fish --init-command", function()
    for shell, second in pairs({ ["/bin/bash"] = "-c", ["/bin/dash"] = "-c", ["/bin/zsh"] = "-c" }) do
      local argv = prompt.command(shell, "demo")
      assert.are.equal(shell, argv[1])
      assert.are.equal(second, argv[2])
      assert.are.equal(shell, argv[4])
      assert.matches("(sandbox demo) ", argv[5], 1, true)
      assert.is_nil(argv[5]:find("PREFIX", 1, true))
    end
    local fish = prompt.command("/usr/bin/fish", "demo")
    assert.are.equal("--init-command", fish[2])
    assert.matches("'(sandbox demo) '", fish[3], 1, true)
  end)

  describe("bash", function()
    local bash = which("bash")

    it("reads the user's .bashrc, puts the prefix in front of its PS1 and removes its rc file", function()
      h.write(dir .. "/home/.bashrc", "PS1='mine> '\nalias hi='echo hello-from-alias'\n")
      local out = run(bash, 'echo "P=[$PS1]"\nhi\nexit\n')
      assert.matches("P=%[%(sandbox demo%) mine> %]", out)
      assert.matches("hello%-from%-alias", out)
      assert.are.equal("", left_in_tmp())
    end)

    it("puts the prefix back when the user's PROMPT_COMMAND replaces PS1", function()
      h.write(dir .. "/home/.bashrc", "PROMPT_COMMAND='PS1=\"dyn> \"'\n")
      local out = run(bash, "true\nexit\n")
      assert.matches("(sandbox demo) dyn> ", out, 1, true)
    end)

    it("never exports the prefix to what the shell runs", function()
      local out = run(bash, "bash -c 'echo \"child=[$PS1]\"'\nexit\n")
      assert.matches("child=%[%]", out)
    end)
  end)

  describe("sh", function()
    local sh = which("dash") or which("sh")

    it("reads the user's $ENV, puts the prefix in front of PS1 and unsets its own variables", function()
      h.write(dir .. "/home/envrc", "PS1='user$ '\nMARK=from-env\n")
      local out = run(
        sh,
        'echo "P=[$PS1] M=[$MARK] E=[${ENV-unset}] F=[${FLEMMA_SANDBOX_ENV-unset}]"\nexit\n',
        "ENV=" .. h.shell_quote(dir .. "/home/envrc")
      )
      assert.matches(
        "P=%[%(sandbox demo%) user%$ %] M=%[from%-env%] E=%[" .. dir:gsub("%p", "%%%0") .. "/home/envrc%] F=%[unset%]",
        out
      )
      assert.are.equal("", left_in_tmp())
    end)

    it("without $ENV leaves ENV unset and uses the default prompt", function()
      local out = run(sh, 'echo "P=[$PS1] E=[${ENV-unset}]"\nexit\n')
      assert.matches("P=%[%(sandbox demo%) [^%]]*%] E=%[unset%]", out)
      assert.are.equal("", left_in_tmp())
    end)
  end)

  describe("zsh", function()
    local zsh = which("zsh")

    it("reads the user's .zshenv and puts the prefix in front of PROMPT", function()
      if not zsh then
        return pending("zsh is not installed")
      end
      h.write(dir .. "/home/.zshenv", "MARK=from-zshenv\n")
      h.write(dir .. "/home/.zshrc", "PROMPT='z> '\n")
      local out = run(zsh, 'print -r -- "M=[$MARK] Z=[${ZDOTDIR-unset}]"\nexit\n')
      assert.matches("M=%[from%-zshenv%] Z=%[unset%]", out)
      assert.matches("(sandbox demo) z> ", out, 1, true)
      assert.are.equal("", left_in_tmp())
    end)
  end)

  describe("fish", function()
    local fish = which("fish")

    it("wraps the user's fish_prompt", function()
      if not fish then
        return pending("fish is not installed")
      end
      local out = run(fish, "fish_prompt; echo\nexit\n")
      assert.matches("(sandbox demo) ", out, 1, true)
    end)
  end)
end)
