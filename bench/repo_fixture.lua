--- A committed repository of a given number of files for the benches (100
--- per folder), with one untracked file; and a way to change three.
local M = {}

function M.sh(cmd)
  local out = vim.fn.system({ "sh", "-c", cmd })
  assert(vim.v.shell_error == 0, cmd .. "\n" .. out)
  return out
end

function M.make_repo(dir, files)
  M.sh("mkdir -p " .. dir .. " && cd " .. dir .. " && git init -q .")
  local script = string.format(
    "import os\nfor i in range(%d):\n  d = 'd%%d' %% (i // 100)\n  os.makedirs(d, exist_ok=True)\n"
      .. "  open('%%s/f%%d.txt' %% (d, i), 'w').write('line %%d\\n' %% i * 20)\n",
    files
  )
  M.sh("cd " .. dir .. " && python3 -c " .. vim.fn.shellescape(script))
  M.sh(
    "cd " .. dir .. " && git add -A && git -c user.name=b -c user.email=b@b commit -qm init && echo u > untracked.txt"
  )
end

function M.change_three(dir, round)
  M.sh(string.format("cd %s && for f in d0/f1.txt d1/f101.txt d2/f201.txt; do echo %d >> $f; done", dir, round))
end

--- A folder of about `files` empty files, 100 a folder (d0/f1.c ...),
--- made fast by touch; not a git repository.
---@param dir string
---@param files integer
function M.make_tree(dir, files)
  local folders = math.max(1, math.floor(files / 100))
  M.sh(
    string.format(
      "mkdir -p %s && cd %s && for d in $(seq %d); do mkdir d$d; (cd d$d && touch $(seq -f 'f%%g.c' 1 100)); done",
      dir,
      dir,
      folders
    )
  )
end

function M.median(samples)
  table.sort(samples)
  return samples[math.floor(#samples / 2) + 1]
end

function M.now_ms()
  return (vim.uv or vim.loop).hrtime() / 1e6
end

--- After one size: the chat buffer gone, out of the project, and its
--- folder removed.
---@param base string
function M.leave(base)
  vim.cmd("bwipeout!")
  vim.cmd("cd /")
  M.sh("rm -rf " .. base)
end

--- Runs bench(files) for 2,600 and 60,000 files with setup(opts) and the
--- chats' folders in a cache of their own, removed after.
---@param opts table
---@param bench fun(files: integer)
function M.run_sizes(opts, bench)
  local cache = vim.fn.tempname() .. "-cache"
  vim.env.XDG_CACHE_HOME = cache
  require("flemma_sandbox").setup(opts)
  bench(2600)
  bench(60000)
  vim.fn.delete(cache, "rf")
  -- headless Neovim ends its last message without a newline
  io.stdout:write("\n")
end

return M
