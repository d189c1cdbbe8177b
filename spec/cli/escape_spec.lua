--- The escape suite's core attacks through the command line: what a
--- command run with flemma-sandbox run cannot do (read secrets, write
--- outside the project or to what runs later on the host, signal host
--- processes, reach a host server). Each has its control: the same
--- command run without the sandbox does it.
local cli = require("support.cli")
local h = require("support.helpers")
local net = require("support.net")

local SECRET = "FLEMMA-CLI-SECRET-" .. os.time() .. "-" .. math.random(1e6)

--- Makes w the attacks' world: a home with secrets and a shell config, a
--- project with secrets and a .git, a folder outside.
local function plant(w)
  w.outside = w.base .. "/outside"
  for _, rel in ipairs({ ".ssh/id_rsa", ".aws/credentials", ".config/gh/hosts.yml" }) do
    vim.fn.mkdir(vim.fn.fnamemodify(w.home .. "/" .. rel, ":h"), "p")
    h.write(w.home .. "/" .. rel, SECRET .. "\n")
  end
  h.write(w.home .. "/.bashrc", "# original\n")
  h.write(w.proj .. "/.env", "KEY=" .. SECRET .. "\n")
  vim.fn.mkdir(w.outside, "p")
  h.write(w.outside .. "/keep.txt", "original\n")
end

--- Every file of the home (but our state and cache), the project's .git
--- and the outside folder, with mode and content hash.
local function snapshot(w)
  local q = h.shell_quote
  return h.capture(
    "cd "
      .. q(w.base)
      .. " && find home outside proj/.git proj/.env"
      .. " \\( -path home/.cache -o -path home/.local/state \\) -prune"
      .. " -o -type f -print0 | sort -z | xargs -0 -r md5sum;"
      .. " find home outside proj -maxdepth 1 ! -path home/.cache ! -path home/.local | sort"
  )
end

--- Runs cmd with bash in sandbox "attack" of w (direct mode: the user's
--- own tree), the secret in the environment; asserts the host unchanged.
local function attack(w, cmd)
  local before = snapshot(w)
  local r = cli.run(
    w,
    { "run", "--direct", "attack", "--", "bash", "-c", cmd },
    { env = { ANTHROPIC_API_KEY = SECRET } }
  )
  assert.are.equal(before, snapshot(w), "the host changed after: " .. cmd)
  return r
end

--- The control: cmd run by bash on the host, as the same user, in w.
local function unsandboxed(w, cmd)
  return h.run({ "bash", "-c", cmd }, cli.env(w, { ANTHROPIC_API_KEY = SECRET }), w.proj)
end

describe("escape through the command line", function()
  local w
  cli.each_world(function(world)
    w = world
    plant(w)
  end)

  it("cannot read the home's and the project's secrets, nor the secret environment", function()
    local cmd = "cat ~/.ssh/id_rsa ~/.aws/credentials ~/.config/gh/hosts.yml .env; env; cat a.txt"
    local r = attack(w, cmd)
    assert.is_nil((r.stdout .. r.stderr):find(SECRET, 1, true))
    assert.matches("original", r.stdout) -- the rest of the project is readable
    -- control
    local c = unsandboxed(w, cmd)
    local _, count = c.stdout:gsub(vim.pesc(SECRET), "")
    assert.are.equal(5, count)
  end)

  it("cannot write the shell's config, a folder outside, .git hooks or .envrc", function()
    local cmd = "echo evil >> ~/.bashrc; echo evil > ../outside/keep.txt; echo evil > .git/hooks/pre-commit;"
      .. " chmod +x .git/hooks/pre-commit; echo evil > .envrc; true"
    attack(w, cmd)
    assert.are.equal("# original\n", h.read(w.home .. "/.bashrc"))
    assert.is_nil(h.read(w.proj .. "/.git/hooks/pre-commit"))
    assert.is_nil(h.read(w.proj .. "/.envrc"))
    -- the project itself stays writable
    local r = cli.run(w, { "run", "--direct", "attack", "--", "sh", "-c", "echo fine > ok.txt" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("fine\n", h.read(w.proj .. "/ok.txt"))
    -- control
    assert.are.equal(0, unsandboxed(w, cmd).code)
    assert.matches("evil", h.read(w.home .. "/.bashrc"))
    assert.are.equal("evil\n", h.read(w.outside .. "/keep.txt"))
    assert.are.equal("evil\n", h.read(w.proj .. "/.git/hooks/pre-commit"))
  end)

  it("cannot write the sandbox's own folder (its notes, its copies)", function()
    assert.are.equal(0, cli.run(w, { "run", "--direct", "attack", "--", "true" }).code)
    local note = cli.folder(w, "attack") .. "/.project"
    local before = h.read(note)
    assert.truthy(before)
    local cmd = "echo "
      .. h.shell_quote(w.base)
      .. " > "
      .. h.shell_quote(note)
      .. "; ls -a "
      .. h.shell_quote(cli.folder(w, "attack"))
    local r = attack(w, cmd)
    assert.are.equal(before, h.read(note))
    assert.is_nil(r.stdout:find(".project", 1, true), r.stdout)
    -- control
    assert.are.equal(0, unsandboxed(w, cmd).code)
    assert.are.equal(w.base .. "\n", h.read(note))
  end)

  it("cannot signal a host process", function()
    local marker = string.format("sleep 77.%06d", math.random(0, 999999))
    local job = vim.fn.jobstart({ "sh", "-c", "exec " .. marker })
    finally(function()
      vim.fn.jobstop(job)
    end)
    local pid = cli.eventually(function()
      local p = cli.host_pids(marker)
      return p ~= "" and p
    end)
    assert.truthy(pid, "the host process did not start")
    -- (kill -1 ends the sandbox itself: its own processes are all it sees)
    attack(w, "kill -9 " .. pid .. "; kill -9 -1; true")
    assert.are.equal(pid, cli.host_pids(marker))
    -- control
    assert.are.equal(0, unsandboxed(w, "kill -9 " .. pid).code)
    assert.are.equal("", cli.eventually(function()
      return cli.host_pids(marker) == "" and ""
    end) or "still there")
  end)

  it("cannot reach a server on the host's loopback with the default network", function()
    local server = net.listen_kind("tcp4")
    local cmd = "exec 3<>/dev/tcp/127.0.0.1/" .. server.port .. " && echo connected"
    local r = attack(w, cmd)
    assert.are_not.equal(0, r.code)
    assert.is_false(server.accepted())
    -- control
    assert.are.equal("connected\n", unsandboxed(w, cmd).stdout)
    assert.is_true(server.accepted())
    server.close()
  end)
end)
