--- The git tool reads its arguments as git would: every spelling that git
--- takes for an option that runs a command is refused, what it lists works.
--- The control runs the real git with one of those spellings and shows the
--- command it names does run.
local git_args = require("flemma_sandbox.tools.git_args")
local h = require("support.helpers")

describe("git_args.parse", function()
  -- spellings of options that run a command on the host, or read a host
  -- file into the repository: each with the subcommand git takes it for
  local refused = {
    { "fetch", "--upload-pack=touch /tmp/x" },
    { "fetch", "--upload-pack", "touch /tmp/x", "origin" },
    { "pull", "--upload-pack=touch /tmp/x" },
    { "clone", "--upload-pa=touch /tmp/x", "https://a/b" },
    { "clone", "--upl=x", "https://a/b" },
    { "clone", "-utouch /tmp/x", "https://a/b" },
    { "clone", "-u", "touch /tmp/x", "https://a/b" },
    { "clone", "-qutouch /tmp/x", "https://a/b" },
    { "clone", "-ccore.sshCommand=touch /tmp/x", "https://a/b" },
    { "clone", "--conf=core.sshCommand=x", "https://a/b" },
    { "clone", "--config", "core.sshCommand=x", "https://a/b" },
    { "clone", "--templ=/tmp/t", "https://a/b" },
    { "clone", "--template=/tmp/t", "https://a/b" },
    { "clone", "--separate-git-dir=/tmp/g", "https://a/b" },
    { "clone", "--recurse-submodules", "https://a/b" },
    { "rebase", "-xtouch /tmp/x", "HEAD~1" },
    { "rebase", "-x", "touch /tmp/x" },
    { "rebase", "--exe=touch /tmp/x" },
    { "rebase", "--exec=touch /tmp/x" },
    { "rebase", "-i", "HEAD~2" },
    { "commit", "-F", "/home/u/.ssh/id_rsa" },
    { "commit", "-aF/home/u/.ssh/id_rsa" },
    { "commit", "--file=/home/u/.ssh/id_rsa" },
    { "commit", "--template=/home/u/.ssh/id_rsa" },
    { "merge", "-s", "ours" },
    { "merge", "--strategy=evil" },
    { "diff", "--ext-diff" },
    { "log", "--output=/tmp/x" },
    { "status", "--config-env=core.fsmonitor=X" },
    { "status", "--exec-path=/tmp" },
  }
  for _, args in ipairs(refused) do
    it("refuses git " .. table.concat(args, " "), function()
      local argv = { unpack(args) }
      local words, err = git_args.parse(args[1], argv)
      assert.is_nil(words)
      assert.matches("is not allowed", err)
    end)
  end

  local allowed = {
    { { "commit", "-qm", "a message" }, {} },
    { { "commit", "-am", "-x is the message" }, {} },
    { { "commit", "--message=fix", "--amend" }, {} },
    { { "log", "-5", "--oneline", "--", "src" }, { "src" } },
    { { "log", "-n", "3", "main" }, { "main" } },
    { { "status", "--porcelain=v2", "-sb" }, {} },
    { { "clone", "--depth", "1", "-b", "main", "https://a/b", "dest" }, { "https://a/b", "dest" } },
    { { "fetch", "--prune", "origin" }, { "origin" } },
    { { "diff", "--cached", "--stat", "HEAD~1" }, { "HEAD~1" } },
  }
  for _, case in ipairs(allowed) do
    it("takes git " .. table.concat(case[1], " "), function()
      local words, err = git_args.parse(case[1][1], case[1])
      assert.is_nil(err)
      assert.are.same(case[2], words)
    end)
  end

  it("names the option and the subcommand", function()
    local _, err = git_args.parse("clone", { "clone", "-qutouch", "https://a/b" })
    assert.are.equal(
      "git clone: option -u (in -qutouch) is not allowed (the git tool takes listed options only, by their full name)",
      err
    )
  end)

  it("the control: real git takes an abbreviated --upload-pack and runs it", function()
    local dir = h.tmpdir()
    local marker = dir .. "/ran"
    h.sh(
      "cd "
        .. h.shell_quote(dir)
        .. " && git init -q origin && git -C origin -c user.name=t -c user.email=t@t commit -q --allow-empty -m one"
        .. " && GIT_CONFIG_NOSYSTEM=1 HOME="
        .. h.shell_quote(dir)
        .. " git clone -q --upload-pa='touch "
        .. marker
        .. "; git-upload-pack' origin copy >/dev/null 2>&1; true"
    )
    assert.truthy(h.read(marker), "git ran the abbreviated option's command")
    h.rmdir(dir)
  end)
end)

describe("git_args.check_url", function()
  local function resolve(path)
    return path:sub(1, 1) == "/" and path or ("/proj/" .. path)
  end
  local roots = { "/proj", "/play" }

  it("refuses transport helpers and other protocols", function()
    for _, url in ipairs({ "ext::sh -c touch% /tmp/x", "fd::3", "EXT::sh", "foo::bar", "ftp://a/b" }) do
      assert.is_not_nil((git_args.check_url(url, resolve, roots)), url)
    end
  end)

  it("refuses a local repository outside the project and the playground", function()
    assert.matches("outside the project", git_args.check_url("file:///home/u/secretrepo", resolve, roots))
    assert.matches("outside the project", git_args.check_url("/home/u/secretrepo", resolve, roots))
    assert.matches(
      "outside the project",
      git_args.check_url("../other", function()
        return "/other"
      end, roots)
    )
  end)

  it("takes remote URLs, and local ones inside the roots as local", function()
    for _, url in ipairs({ "https://a/b.git", "http://a/b", "ssh://a/b", "git://a/b", "git@github.com:a/b.git" }) do
      local err, is_local = git_args.check_url(url, resolve, roots)
      assert.is_nil(err, url)
      assert.is_false(is_local)
    end
    local err, is_local = git_args.check_url("file:///play/r", resolve, roots)
    assert.is_nil(err)
    assert.is_true(is_local)
    err, is_local = git_args.check_url("sub/repo", resolve, roots)
    assert.is_nil(err)
    assert.is_true(is_local)
  end)
end)

describe("git_args.shown", function()
  it("keeps every argument's boundaries, as /bin/sh reads them back", function()
    local args = { "commit", "-am", "model commit", "--", "it's", "", "$HOME", "a\tb", "plain/path.txt" }
    local shown = git_args.shown(args)
    assert.are.equal("git commit -am 'model commit' -- 'it'\\''s' '' '$HOME' 'a\tb' plain/path.txt", shown)
    --- the words /bin/sh reads from a line, each in brackets
    local function words(line)
      local p = assert(io.popen("for w in " .. line .. '; do printf "[%s]" "$w"; done'))
      local out = p:read("*a")
      p:close()
      return out
    end
    local want = {}
    for i, a in ipairs(args) do
      want[i] = "[" .. a .. "]"
    end
    assert.are.equal(table.concat(want), words(shown:gsub("^git ", "")))
    -- control: joined with spaces, "model commit" reads back as two words
    assert.are.equal("[commit][-am][model][commit]", words(table.concat({ "commit", "-am", "model commit" }, " ")))
  end)
end)
