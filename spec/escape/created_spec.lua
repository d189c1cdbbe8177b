--- Escape suite: what a command creates where the host would run it later.
--- bwrap cannot mount over a name that does not exist, and a placeholder
--- would put files in the user's tree; so nothing is put there, and what
--- the command creates at a protected name, or any new ".git" in the
--- project, is moved to the quarantine when it ends.
local f = require("escape.fixture")
local h = require("support.helpers")
local sandbox = require("flemma_sandbox")

describe("escape: names created during a run", function()
  local w
  setup(function()
    w = f.create()
    f.use_host(w)
  end)
  teardown(function()
    f.destroy(w)
  end)
  before_each(function()
    f.policy()
  end)

  local function q(s)
    return h.shell_quote(s)
  end

  --- Runs git on the host in folder, as gitsigns or a prompt would, with
  --- a clean global config; returns whether the planted fsmonitor ran.
  local function host_git_runs_plant(folder)
    local marker = w.outside .. "/fsmonitor-ran"
    os.remove(marker)
    h.sh(
      "cd "
        .. q(folder)
        .. " && HOME="
        .. q(w.outside)
        .. " GIT_CONFIG_NOSYSTEM=1 GIT_CEILING_DIRECTORIES="
        .. q(w.base)
        .. " git status >/dev/null 2>&1; true"
    )
    local ran = h.read(marker) ~= nil
    os.remove(marker)
    return ran
  end

  local function fsmonitor_config()
    return '[core]\\n\\tfsmonitor = "touch ' .. w.outside .. '/fsmonitor-ran; false"\\n'
  end

  --- The control: the same plant run on the host (no sandbox) in the
  --- work folder makes host git in sub run it.
  local function plant_works_on_host(plant, sub)
    h.sh("cd " .. q(w.work) .. " && bash -c " .. q(plant) .. " >/dev/null 2>&1")
    local ran = host_git_runs_plant(w.work .. "/" .. sub)
    h.sh("rm -rf " .. q(w.work) .. " && mkdir " .. q(w.work))
    return ran
  end

  it("a missing .envrc, .nvim.lua or .vscode gets no placeholder and what is created goes to the quarantine", function()
    -- .envrc last: a name secret_files matches, made while it runs, stops it
    local r = f.attack(w, "ls -a; echo evil > .nvim.lua; mkdir -p .vscode/x; echo evil > .envrc; sleep 5", {
      keep_host = true,
    })
    assert.are.equal(137, r.code, r.stderr)
    local stopped = h.records_of(r.records, "stopped")
    assert.are.equal(1, #stopped, r.stderr)
    assert.are.equal("protection_changed", stopped[1].reason)
    assert.truthy(stopped[1].why:find(w.proj .. "/.envrc", 1, true), stopped[1].why)
    assert.is_nil(r.stdout:match("%.envrc"), "nothing stands in for the missing names while it runs")
    assert.is_nil(h.read(w.proj .. "/.envrc"))
    assert.is_nil(h.read(w.proj .. "/.nvim.lua"))
    assert.are.equal("", h.capture("ls -A " .. q(w.proj) .. " | grep -E '^(.envrc|.nvim.lua|.vscode)$'"))
    local recorded = {}
    for _, m in ipairs(h.records_of(r.records, "moved")) do
      recorded[#recorded + 1] = m.from
    end
    table.sort(recorded)
    assert.are.same({ w.proj .. "/.envrc", w.proj .. "/.nvim.lua", w.proj .. "/.vscode" }, recorded)
    local moved = table.concat(f.quarantined(w), "\n")
    for _, name in ipairs({ ".envrc", ".nvim.lua", ".vscode" }) do
      assert.truthy(moved:find(w.proj .. "/" .. name, 1, true), name)
    end
    -- control: without the rules the file stays where the command put it
    f.policy({ deny_write = { "!.envrc" }, secret_files = { "!.envrc" } })
    f.attack(w, "echo evil > .envrc", { keep_host = true })
    assert.are.equal("evil\n", h.read(w.proj .. "/.envrc"))
    os.remove(w.proj .. "/.envrc")
  end)

  it("the check runs whether its words go in the helper's argv or, for a large policy, in a file", function()
    -- the helper's client decides where the words go
    local client = require("flemma_sandbox.backends.helper")
    local runs = assert(require("flemma_sandbox.base.surroundings").state_dir("runs"))
    local saved = client.CHECK_WORDS_BYTES
    for _, limit in ipairs({ saved, 0 }) do
      client.CHECK_WORDS_BYTES = limit
      local argv, _, record = assert(sandbox.wrap_command({ "true" }))
      local mode = table.concat(argv, " "):match("%-%-check%-%a+")
      os.remove(assert(record).check_file) -- never run
      local r = f.attack(w, "echo evil > .nvim.lua", { keep_host = true })
      client.CHECK_WORDS_BYTES = saved
      assert.are.equal(limit == 0 and "--check-file" or "--check-words", mode)
      assert.are.equal(0, r.code, r.stderr)
      assert.is_nil(h.read(w.proj .. "/.nvim.lua"), mode)
      local moved = h.records_of(r.records, "moved")
      assert.are.equal(1, #moved, r.stderr)
      assert.are.same({ "this", w.proj .. "/.nvim.lua" }, { moved[1].run, moved[1].from })
      assert.are.equal("", h.capture("ls -A " .. q(runs)), "no check file is left behind")
    end
  end)

  it("a new .git anywhere in the project goes to the quarantine before host git can read it", function()
    local plant = "mkdir -p src/.git deep/a/b && printf "
      .. q(fsmonitor_config())
      .. " > src/.git/config && git init -q deep/a/b && printf "
      .. q(fsmonitor_config())
      .. " >> deep/a/b/.git/config"
    assert.is_true(plant_works_on_host(plant, "deep/a/b"), "control")
    local r = f.attack(w, plant, { keep_host = true })
    assert.are.equal(0, r.code, r.stderr)
    assert.is_nil(h.read(w.proj .. "/src/.git/config"))
    assert.is_nil(h.read(w.proj .. "/deep/a/b/.git/config"))
    assert.are.equal("directory", require("flemma_sandbox.core").file_type(w.proj .. "/deep/a/b"))
    assert.is_false(host_git_runs_plant(w.proj .. "/deep/a/b"))
    local moved = table.concat(f.quarantined(w), "\n")
    assert.truthy(moved:find(w.proj .. "/src/.git", 1, true))
    assert.truthy(moved:find(w.proj .. "/deep/a/b/.git", 1, true))
    h.sh("rm -rf " .. q(w.proj .. "/src/.git") .. " " .. q(w.proj .. "/deep"))
  end)

  it("a new .git in a folder the scan index knows is found though the command puts the mtime back", function()
    h.sh("mkdir -p " .. q(w.proj .. "/old/sub"))
    assert.are.equal(0, f.attack(w, "true").code) -- the index now records old/sub
    h.sh("sleep 2.2") -- past the 2 s in which a recorded folder is read again anyway
    local plant = "t=$(stat -c %.9Y old/sub) && git init -q old/sub && printf "
      .. q(fsmonitor_config())
      .. " >> old/sub/.git/config && touch -d @$t old/sub && echo $t && stat -c %.9Y old/sub"
    local r = f.attack(w, plant, { keep_host = true })
    assert.are.equal(0, r.code, r.stderr)
    local before, after = r.stdout:match("^(%S+)\n(%S+)\n$")
    assert.are.equal(before, after, "the command put the folder's mtime back")
    assert.is_nil(h.read(w.proj .. "/old/sub/.git/config"))
    assert.is_false(host_git_runs_plant(w.proj .. "/old/sub"))
    assert.truthy(table.concat(f.quarantined(w), "\n"):find(w.proj .. "/old/sub/.git", 1, true))
    h.sh("rm -rf " .. q(w.proj .. "/old"))
    -- control: the plant works on the host
    h.sh("mkdir -p " .. q(w.work .. "/old/sub"))
    assert.is_true(plant_works_on_host(plant, "old/sub"), "control")
  end)

  it("a .git file pointing at a gitdir the command wrote goes to the quarantine", function()
    local plant = "git init -q --separate-git-dir=evil lib && printf " .. q(fsmonitor_config()) .. " >> evil/config"
    assert.is_true(plant_works_on_host(plant, "lib"), "control")
    local r = f.attack(w, plant, { keep_host = true })
    assert.are.equal(0, r.code, r.stderr)
    assert.is_nil(h.read(w.proj .. "/lib/.git"))
    assert.is_false(host_git_runs_plant(w.proj .. "/lib"))
    h.sh("rm -rf " .. q(w.proj .. "/evil") .. " " .. q(w.proj .. "/lib"))
  end)

  it("the whole .git is read-only: commondir, modules, info, packed-refs", function()
    local plant = "echo /tmp > .git/commondir; mkdir -p .git/modules/x && printf "
      .. q(fsmonitor_config())
      .. " > .git/modules/x/config; echo x > .git/info-evil"
    local r = f.attack(w, plant)
    assert.are_not.equal(0, r.code)
    -- control: without the rule for .git the plant lands
    f.policy({ deny_write = { "!.git/" } })
    f.attack(w, plant, { keep_host = true })
    assert.are.equal("/tmp\n", h.read(w.proj .. "/.git/commondir"))
    h.sh(
      "rm -rf "
        .. q(w.proj .. "/.git/commondir")
        .. " "
        .. q(w.proj .. "/.git/modules")
        .. " "
        .. q(w.proj .. "/.git/info-evil")
    )
  end)

  it("a nested repository's .git is read-only too", function()
    h.sh("cd " .. q(w.proj) .. " && mkdir -p vendor/lib && git init -q vendor/lib")
    local r = f.attack(w, "printf " .. q(fsmonitor_config()) .. " >> vendor/lib/.git/config")
    assert.are_not.equal(0, r.code)
    assert.is_false(host_git_runs_plant(w.proj .. "/vendor/lib"))
    h.sh("rm -rf " .. q(w.proj .. "/vendor"))
  end)

  it("the folder core.hooksPath names is read-only", function()
    h.sh("mkdir -p " .. q(w.proj .. "/.husky"))
    local config = h.read(w.proj .. "/.git/config")
    local plant = "printf '#!/bin/sh\\ntouch /tmp/x\\n' > .husky/pre-commit"
    -- control: without core.hooksPath the folder is an ordinary one
    f.attack(w, plant, { keep_host = true })
    assert.truthy(h.read(w.proj .. "/.husky/pre-commit"))
    os.remove(w.proj .. "/.husky/pre-commit")
    h.write(w.proj .. "/.git/config", config .. "[core]\n\thooksPath = .husky\n")
    local r = f.attack(w, plant)
    assert.are_not.equal(0, r.code)
    h.write(w.proj .. "/.git/config", config)
    h.sh("rm -rf " .. q(w.proj .. "/.husky"))
  end)

  --- Runs cmd in the sandbox in the background; once it has touched
  --- work/started, runs on_host on the host; returns the command's output.
  --- Runs cmd (or the argv given) and, once it has started, on_host: its
  --- output and, for the wrapped command, its records.
  local function while_running(cmd, on_host, argv)
    os.remove(w.work .. "/started")
    local records = require("flemma_sandbox.run.records")
    local check
    if not argv then
      local _, record
      argv, _, record = assert(sandbox.wrap_command({ "sh", "-c", cmd }, nil))
      check = record and record.check_file
      if check then
        records.create(check)
      end
    end
    local words = {}
    for _, word in ipairs(argv) do
      words[#words + 1] = q(word)
    end
    local run = io.popen("cd " .. q(w.proj) .. " && " .. table.concat(words, " ") .. " 2>&1")
    local deadline = os.time() + 20
    while not h.read(w.work .. "/started") and os.time() < deadline do
      h.sh("sleep 0.05")
    end
    on_host()
    local output = run:read("*a")
    run:close()
    return output, check and records.take(check) or {}
  end

  --- The run was stopped, once, because path changed while it ran.
  local function assert_stopped_for(recs, path, output)
    local stopped = h.records_of(recs, "stopped")
    assert.are.equal(1, #stopped, output)
    assert.are.equal("protection_changed", stopped[1].reason)
    assert.truthy(stopped[1].why:find(path, 1, true), stopped[1].why)
  end

  --- The control's argv: plain bwrap, no helper, the project writable and
  --- `source` bound read-only over `target`, running cmd.
  local function bare_bwrap(source, target, cmd)
    return {
      "bwrap",
      "--ro-bind",
      "/",
      "/",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
      "--bind",
      w.proj,
      w.proj,
      "--ro-bind",
      source,
      target,
      "--chdir",
      w.proj,
      "sh",
      "-c",
      cmd,
    }
  end

  it(".git/config replaced by git on the host during a run stays read-only", function()
    local original = h.read(w.proj .. "/.git/config")
    local cmd = "touch work/started; sleep 2; echo '[core] fsmonitor = evil' >> .git/config"
    local function host_git_config()
      h.sh("cd " .. q(w.proj) .. " && git config --file .git/config user.name someone")
    end
    local output = while_running(cmd, host_git_config)
    assert.matches("Read%-only file system", output)
    assert.is_nil(h.read(w.proj .. "/.git/config"):find("fsmonitor", 1, true))
    -- a bind over the file alone is lost when git replaces the file: the
    -- helper sees the replacement and stops the command (fail closed)
    f.policy({ deny_write = { "!.git/", ".git/config" } })
    local recs
    output, recs = while_running(cmd, host_git_config)
    assert_stopped_for(recs, w.proj .. "/.git/config", output)
    assert.is_nil(h.read(w.proj .. "/.git/config"):find("fsmonitor", 1, true))
    -- control: bwrap with the same bind over the file alone, no helper
    local bare = bare_bwrap(w.proj .. "/.git/config", w.proj .. "/.git/config", cmd)
    while_running(cmd, host_git_config, bare)
    assert.truthy(h.read(w.proj .. "/.git/config"):find("fsmonitor", 1, true))
    h.write(w.proj .. "/.git/config", original)
  end)

  it("a secret file replaced or created by the user during a run stops the command before it can read it", function()
    h.write(w.proj .. "/.env", "API_KEY=" .. f.SECRET .. "\n")
    local reader = "touch work/started; sleep 2; cat .env config/.env.local .env.new 2>/dev/null; echo read"
    -- Neovim's :w by rename: a new file at the masked name
    local function save_by_rename()
      h.write(w.proj .. "/4913", "API_KEY=" .. f.SECRET .. "-saved\n") -- Neovim's probe name
      os.rename(w.proj .. "/4913", w.proj .. "/.env")
    end
    local output, recs = while_running(reader, save_by_rename)
    assert.is_nil(output:find(f.SECRET, 1, true), output)
    assert_stopped_for(recs, w.proj .. "/.env", output)
    -- a new secret file in the project's folder
    local function create()
      h.write(w.proj .. "/.env.new", f.SECRET .. "\n")
    end
    output, recs = while_running(reader, create)
    assert.is_nil(output:find(f.SECRET, 1, true), output)
    assert_stopped_for(recs, w.proj .. "/.env.new", output)
    os.remove(w.proj .. "/.env.new")
    -- control: bwrap with the same mask over .env, no helper: the saved file shows
    local bare = bare_bwrap("/dev/null", w.proj .. "/.env", reader)
    output = while_running(reader, save_by_rename, bare)
    assert.truthy(output:find(f.SECRET .. "-saved", 1, true), output)
    h.write(w.proj .. "/.env", "API_KEY=" .. f.SECRET .. "\n")
  end)

  it("a deny_read file in the project replaced by the user during a run stops the command", function()
    h.write(w.proj .. "/notes.txt", f.SECRET .. "\n")
    f.policy({ deny_read = { "$CWD/notes.txt" } })
    local reader = "touch work/started; sleep 2; cat notes.txt; echo read"
    local function save_by_rename()
      h.write(w.proj .. "/4913", f.SECRET .. "-saved\n")
      os.rename(w.proj .. "/4913", w.proj .. "/notes.txt")
    end
    local output, recs = while_running(reader, save_by_rename)
    assert.is_nil(output:find(f.SECRET, 1, true), output)
    assert_stopped_for(recs, w.proj .. "/notes.txt", output)
    -- control: bwrap with the same mask over the file, no helper: the saved file shows
    local bare = bare_bwrap("/dev/null", w.proj .. "/notes.txt", reader)
    output = while_running(reader, save_by_rename, bare)
    assert.truthy(output:find(f.SECRET .. "-saved", 1, true), output)
    os.remove(w.proj .. "/notes.txt")
  end)

  it("the project and the home folder are the same before, during and after a run but for its own writes", function()
    local before, during = f.snapshot(w), nil
    local output = while_running("echo mine > work/out.txt; touch work/started; sleep 2", function()
      during = f.snapshot(w)
    end)
    local after = f.snapshot(w)
    assert.are.equal("mine\n", h.read(w.work .. "/out.txt"), output)
    assert.are.equal(
      "",
      h.capture("ls -A " .. q(w.home .. "/.local/state/flemma-sandbox/runs")),
      "no check file is left"
    )
    assert.are.equal("", f.diff(before, during))
    assert.are.equal("", f.diff(before, after))
    h.sh("rm -rf " .. q(w.work) .. " && mkdir " .. q(w.work))
  end)
end)
