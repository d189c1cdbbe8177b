--- make bench, clone mode's copies (inside headless Neovim): making a
--- chat's copy of repositories of 2,600 and 60,000 files next to
--- `git clone --shared` with its checkout alone, and the sync after a call
--- that changed three files.
vim.opt.runtimepath:prepend(vim.fn.getcwd())

local workspaces = require("flemma_sandbox.api.clone_mode")
local fixture = dofile("bench/repo_fixture.lua")
local now_ms, median, sh = fixture.now_ms, fixture.median, fixture.sh

local function wait_for(start)
  local done
  start(function()
    done = true
  end)
  vim.wait(600000, function()
    return done
  end, 1)
end

local function bench(files)
  local base = vim.fn.tempname() .. "-ws"
  local dir = base .. "/proj"
  fixture.make_repo(dir, files)
  local t0 = now_ms()
  sh("git clone -q --shared " .. dir .. " " .. base .. "/plain")
  local plain = now_ms() - t0
  vim.cmd("cd " .. vim.fn.fnameescape(dir))
  vim.cmd("edit " .. vim.fn.fnameescape(base .. "/bench.chat"))
  local bufnr = vim.api.nvim_get_current_buf()
  t0 = now_ms()
  wait_for(function(done)
    workspaces.ensure(bufnr, function(errors)
      assert(#errors == 0, table.concat(errors, "\n"))
      done()
    end)
  end)
  local made = now_ms() - t0
  local clone = workspaces.specs(bufnr)[1].clone
  local syncs = {}
  for round = 1, 5 do
    fixture.change_three(clone, round)
    t0 = now_ms()
    wait_for(function(done)
      workspaces.sync(bufnr, function(errors)
        assert(#errors == 0, table.concat(errors, "\n"))
        done()
      end)
    end)
    syncs[#syncs + 1] = now_ms() - t0
  end
  local sync = median(syncs)
  print(string.format("clone mode, %d files:", files))
  print(string.format("  git clone --shared with its checkout   %8.1f ms  1.00x", plain))
  print(string.format("  a chat's copy (goal <= 1.5x)          %8.1f ms  %.2fx", made, made / plain))
  print(string.format("  sync after a call, 3 files changed    %8.1f ms  (goal <= 50 ms)", sync))
  fixture.leave(base)
end

fixture.run_sizes({
  backend = "bwrap",
  policy = { rw_paths = { "$CWD" }, network = false },
  sandboxes = { workspace = "clone" },
}, bench)
