--- make bench (also alone: `make bench-calls`), every row of issue 42's
--- table in one run (a headless Neovim of its own). Each row is measured
--- in rounds with the anchors (calls_anchors.lua: a bare bwrap start,
--- Flemma's bare bwrap argv when FLEMMA_DIR names a checkout, `srt true`
--- when installed), the order rotated each round, and printed as its
--- median, the medians of its per-round ratios to each anchor, the goal
--- and met / NOT met. Rows: a chat's warm call, its floor (bench/floor:
--- a static client that only attaches) and the live wire alone to the
--- chat's supervisor (no host-side work); the same right after a
--- file was made in the project root or the chat's folder; a call with no
--- chat (cold); at 0 and 1000 host sockets. A warm call in projects of
--- FLEMMA_SANDBOX_BENCH_SIZES files (default 1000,50000,200000; made and
--- removed here). The first call of a chat opened a second before
--- (prestart). get_policy + wrap_command hot and right after a new entry
--- in the project root (us). The longest main-thread pause of a chat's
--- first call made at once (a 1 ms timer's longest gap). The command
--- line's `run NAME -- true`, warm, clone mode and --direct.
--- FLEMMA_SANDBOX_BENCH_ROUNDS sets the rounds (default 11).
vim.opt.runtimepath:prepend(vim.fn.getcwd())
package.path = vim.fn.getcwd() .. "/bench/?.lua;" .. package.path
local fixture = require("repo_fixture")
local anchors_of = require("calls_anchors")
local pause = require("pause")
local repo = vim.fn.getcwd()
local scratch = vim.fn.trim(vim.fn.system("mktemp -d /var/tmp/flemma-bench-calls.XXXXXX"))
vim.env.XDG_STATE_HOME = scratch .. "/state"
vim.env.XDG_CACHE_HOME = scratch .. "/cache"

local sandbox = require("flemma_sandbox")
local tools = require("flemma_sandbox.tools")
local OPTS = { policy = { network = false }, approval = { bash = "allow" }, sandboxes = { max_running = 64 } }
sandbox.setup(OPTS)
require("flemma_sandbox.nvim.autocmds").setup_common()

local chats = 0

--- A new chat in folder, its buffer shown (FileType chat, as Flemma sets
--- it: the index, the probes and its sandbox start in the background).
local function open_chat(folder)
  chats = chats + 1
  local file = string.format("%s/c%d.chat", folder, chats)
  vim.fn.writefile({ "@You:", "build it" }, file)
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].filetype = "chat"
  return buf
end

local call = anchors_of.chat_call

local function print_policy(project)
  local hot, fresh = anchors_of.policy_us(sandbox, project)
  print(
    string.format(
      "  %-58s %8.0f us / %.0f us  goal <= 100 us / <= 1000 us %s / %s",
      "get_policy + wrap_command, hot / after a new entry in the root",
      hot,
      fresh,
      hot <= 100 and "met" or "NOT met",
      fresh <= 1000 and "met" or "NOT met"
    )
  )
end

--- The longest main-thread pause while a chat opened just now makes its
--- first bash call (tools.run, as a session does).
local function first_call_pause(folder, what)
  local buf = open_chat(folder)
  local result, longest = pause.measure(function(done)
    tools.run("bash", { command = "true" }, { bufnr = buf }, done)
  end)
  assert(result and not result.error, vim.inspect(result))
  print(
    string.format(
      "  %-58s %8.1f ms  goal <= 16 ms %s",
      "main-thread pause, a chat's first call at once, " .. what,
      longest,
      longest <= 16 and "met" or "NOT met"
    )
  )
end

--- A small project at 0 and 1000 host sockets: warm, warm after a new
--- file in the root / in the chat's folder, cold; policy us.
local function small_project()
  local project = scratch .. "/small"
  local chat_dir = project .. "/chats"
  vim.fn.mkdir(chat_dir, "p")
  vim.fn.writefile({ "int main(void) { return 0; }" }, project .. "/main.c")
  vim.cmd("cd " .. vim.fn.fnameescape(project))
  local anchors, missing = anchors_of.anchors(project)
  print("anchors not measured: " .. (missing ~= "" and missing or "none"))
  first_call_pause(chat_dir, "1 file")
  for _, sockets in ipairs({ 0, 1000 }) do
    local stop = anchors_of.hold_sockets(sockets, repo)
    local buf = open_chat(chat_dir)
    call(buf)
    local rows = {
      { label = "warm call", goal = 0.5, goal_text = "<= 0.5x" },
      {
        label = "warm, right after a file made in the project root",
        goal = 0.6,
        goal_text = "<= 0.6x",
        prep = function()
          anchors_of.new_file(project)
        end,
      },
      {
        label = "warm, right after a file made in the chat's folder",
        goal = 0.6,
        goal_text = "<= 0.6x",
        prep = function()
          anchors_of.new_file(chat_dir)
        end,
      },
      { label = "cold (no chat)", goal = 1.6, goal_text = "<= 1.6x" },
    }
    for i = 1, 3 do
      rows[i].fn = function()
        call(buf)
      end
    end
    rows[4].fn = function()
      call(nil)
    end
    -- built where they can be (the Makefile's BENCH_FLOOR)
    local stop_floor = function() end
    if vim.fn.executable(repo .. "/bench/out/floor-client") == 1 then
      local floor
      floor, stop_floor = anchors_of.floor(repo, scratch)
      table.insert(rows, 2, floor)
      table.insert(rows, 3, anchors_of.wire_row(repo, sandbox.wrapper(buf)({ "true" })))
    else
      print("floor rows skipped: bench/floor is built on x86-64 with a static C library only")
    end
    for _, row in ipairs(anchors_of.cold_floor_rows(sandbox.wrapper(nil)({ "true" }))) do
      rows[#rows + 1] = row
    end
    local results, anchor_ms = anchors_of.rounds(rows, anchors)
    anchors_of.print(string.format("a 1-file project, %d host sockets", sockets), results, anchors, anchor_ms)
    print_policy(project)
    stop_floor()
    stop()
  end
  return project, anchors
end

--- The first call of a chat opened a second before (its sandbox
--- prestarted when it was opened).
local function prestart(project, anchors)
  local buf
  local rows = {
    {
      label = "first call of a chat opened 1 s before (prestart)",
      goal = 1.0,
      goal_text = "<= 1.0x",
      prep = function()
        buf = open_chat(project)
        vim.wait(1000) -- the model's answer
      end,
      fn = function()
        call(buf)
      end,
    },
  }
  local results, anchor_ms = anchors_of.rounds(rows, anchors)
  anchors_of.print("a 1-file project, 0 host sockets", results, anchors, anchor_ms)
end

--- A warm call in a project of `files` files (made here and removed
--- after); at the largest, also the policy us and the first call's pause.
local function sized(files, largest)
  local project = string.format("%s/p%d", scratch, files)
  local t0 = fixture.now_ms()
  fixture.make_tree(project, files)
  -- folders changed within two seconds of a scan are read again by the
  -- next one (csrc/shared/tree_index.h): a project is older than that
  vim.wait(2500)
  vim.cmd("cd " .. vim.fn.fnameescape(project))
  local anchors = anchors_of.anchors(project)
  if largest then -- the project's first chat: no index yet
    first_call_pause(project, files .. " files")
  end
  local buf = open_chat(project)
  call(buf)
  local rows = {
    {
      label = string.format("warm call, %d files", files),
      goal = 0.6,
      goal_text = "<= 0.6x",
      fn = function()
        call(buf)
      end,
    },
  }
  local results, anchor_ms = anchors_of.rounds(rows, anchors)
  anchors_of.print(
    string.format("a %d-file project (made in %.0f s)", files, (fixture.now_ms() - t0 - 2500) / 1000),
    results,
    anchors,
    anchor_ms
  )
  if largest then
    print_policy(project)
  end
  require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
  vim.cmd("silent! %bwipeout!")
  vim.cmd("cd " .. vim.fn.fnameescape(scratch))
  vim.fn.delete(project, "rf")
end

--- `flemma-sandbox run NAME -- true`, warm, in a git repository (clone
--- mode) and with --direct, a saved config as a user has one.
local function command_line(anchors)
  local home = scratch .. "/home"
  local cli_repo = scratch .. "/cli-repo"
  fixture.make_repo(cli_repo, 200)
  local env = { HOME = home, XDG_STATE_HOME = home .. "/.local/state", XDG_CACHE_HOME = home .. "/.cache" }
  vim.fn.mkdir(home, "p")
  -- the user's config, saved as Neovim's setup() saves it
  local save = vim.split("nvim --headless -u NONE -i NONE -n --cmd", " ")
  local setup = "lua require('flemma_sandbox').setup({ policy = { network = false } })"
  anchors_of.run(vim.list_extend(save, { "set rtp^=" .. repo, "-c", setup, "-c", "qa!" }), { env = env })
  local bin = repo .. "/bin/flemma-sandbox"
  local function cli(extra, name)
    return function()
      anchors_of.run(vim.list_extend(vim.list_extend({ bin, "run" }, extra), { name, "--", "true" }), {
        cwd = cli_repo,
        env = env,
      })
    end
  end
  local rows = {
    { label = "run NAME -- true, warm, clone mode", goal_text = "<= 100 ms", fn = cli({}, "bench") },
    { label = "run --direct NAME -- true, warm", goal_text = "<= 100 ms", fn = cli({ "--direct" }, "benchd") },
  }
  local results, anchor_ms = anchors_of.rounds(rows, anchors)
  for _, r in ipairs(results) do
    r.goal_text = r.goal_text .. (r.ms <= 100 and " met" or " NOT met")
  end
  anchors_of.print("the command line", results, anchors, anchor_ms)
  for _, name in ipairs({ "bench", "benchd" }) do
    anchors_of.run({ bin, "delete", "--force", name }, { cwd = cli_repo, env = env })
  end
end

print(string.format("calls_bench, %s, as uid %d", os.date("!%Y-%m-%d %H:%M UTC"), vim.loop.getuid()))
local project, anchors = small_project()
prestart(project, anchors)
command_line(anchors)
require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
vim.cmd("silent! %bwipeout!")
local sizes = vim.split(vim.env.FLEMMA_SANDBOX_BENCH_SIZES or "1000,50000,200000", ",", { trimempty = true })
for i, size in ipairs(sizes) do
  sized(assert(tonumber(size), "FLEMMA_SANDBOX_BENCH_SIZES: numbers"), i == #sizes)
end
vim.cmd("cd " .. vim.fn.fnameescape(repo))
vim.fn.delete(scratch, "rf")
io.stdout:write("\n")
