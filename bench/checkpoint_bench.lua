--- make bench, direct mode's checkpoints (inside headless Neovim): in
--- repositories of 2,600 and 60,000 files with a few files changed per
--- call, the checkpoint a call waits for, next to the same git work
--- (`git add -A` and `git write-tree` on a warm shadow index) run bare on
--- the host; the first checkpoint of a chat; an undo of a few files.
vim.opt.runtimepath:prepend(vim.fn.getcwd())

local checkpoints = require("flemma_sandbox.api.checkpoints")

local fixture = dofile("bench/repo_fixture.lua")
local ROUNDS = 9
local now_ms, median, sh, make_repo, change_three =
  fixture.now_ms, fixture.median, fixture.sh, fixture.make_repo, fixture.change_three

local function bench(files)
  local base = vim.fn.tempname() .. "-cp"
  local dir = base .. "/proj"
  local t0 = now_ms()
  make_repo(dir, files)
  local made = now_ms() - t0
  vim.cmd("cd " .. vim.fn.fnameescape(dir))
  vim.cmd("edit " .. vim.fn.fnameescape(base .. "/bench.chat"))
  local bufnr = vim.api.nvim_get_current_buf()

  -- the anchor: the same git work bare on the host, on a warm index
  local plain = base .. "/plain.git"
  sh("git init -q --bare " .. plain .. " && echo " .. dir .. "/.git/objects > " .. plain .. "/objects/info/alternates")
  local env = "GIT_DIR=" .. plain .. " GIT_WORK_TREE=" .. dir .. " GIT_INDEX_FILE=" .. plain .. "/index "
  sh("cp " .. dir .. "/.git/index " .. plain .. "/index && cd " .. dir .. " && " .. env .. "git add -A")
  local bare, ours = {}, {}
  t0 = now_ms()
  assert(#checkpoints.take_now(bufnr, "first") == 0)
  local first = now_ms() - t0
  for round = 1, ROUNDS do
    change_three(dir, round)
    t0 = now_ms()
    sh("cd " .. dir .. " && " .. env .. "git add -A && " .. env .. "git write-tree >/dev/null")
    bare[#bare + 1] = now_ms() - t0
    t0 = now_ms()
    local errors = checkpoints.take_now(bufnr, "round " .. round)
    ours[#ours + 1] = now_ms() - t0
    assert(#errors == 0, table.concat(errors, "\n"))
  end
  -- a last call: its checkpoint before, three files changed, the one after
  assert(#checkpoints.take_now(bufnr, "last") == 0)
  local specs = checkpoints.scope(bufnr).specs
  local last = require("flemma_sandbox.run.shadow").list(specs[1])[1].n
  change_three(dir, 99)
  local recorded = false
  checkpoints.finish(specs, last, function()
    recorded = true
  end)
  vim.wait(60000, function()
    return recorded
  end, 1)
  local call_undo = require("flemma_sandbox.api.call_undo")
  local undone
  t0 = now_ms()
  call_undo.prepare(bufnr, { n = last }, function(prep, err)
    if not prep then
      undone = false
      return print("undo: " .. tostring(err))
    end
    call_undo.carry_out(prep, function(report)
      undone = #report.errors == 0 and #report.written == 3
    end)
  end)
  vim.wait(60000, function()
    return undone ~= nil
  end, 1)
  local undo_ms = now_ms() - t0
  assert(undone, "undo failed")
  local b, o = median(bare), median(ours)
  print(string.format("checkpoints, %d files (made in %.0f ms), 3 changed per call:", files, made))
  print(string.format("  bare git add -A + write-tree on the host  %8.1f ms  1.00x", b))
  print(string.format("  a call's checkpoint (own bwrap, waited)   %8.1f ms  %.2fx (goal <= 30 ms)", o, o / b))
  print(string.format("  a chat's first checkpoint                 %8.1f ms  %.2fx", first, first / b))
  print(string.format("  undo of the last call (3 files)           %8.1f ms  %.2fx", undo_ms, undo_ms / b))
  fixture.leave(base)
end

fixture.run_sizes({ backend = "bwrap", policy = { rw_paths = { "$CWD" }, network = false } }, bench)
