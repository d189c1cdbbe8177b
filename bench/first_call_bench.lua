--- make bench, part 4 (a headless Neovim of its own, so nothing is warm
--- but what a session warms): the first tool call of a session in a
--- project of 200,000 files. A chat buffer is opened there (its FileType
--- starts the scan index, the test sandbox and the probes in the
--- background, nvim/autocmds.lua), the model answers (a second here), and
--- its first bash call runs in the chat's sandbox. Printed: the longest
--- pause of the main thread while that call starts, runs and ends (a 1 ms
--- timer's longest gap; goal 16 ms, one frame), next to a later call's.
vim.opt.runtimepath:prepend(vim.fn.getcwd())
package.path = vim.fn.getcwd() .. "/bench/?.lua;" .. package.path
local scratch = vim.fn.trim(vim.fn.system("mktemp -d /var/tmp/flemma-bench-first.XXXXXX"))
vim.env.XDG_STATE_HOME = scratch .. "/state"
vim.env.XDG_CACHE_HOME = scratch .. "/cache"
local big = scratch .. "/proj"
vim.fn.system(
  "mkdir -p "
    .. vim.fn.shellescape(big)
    .. " && cd "
    .. vim.fn.shellescape(big)
    .. " && mkdir -p .git/hooks && for d in $(seq 200); do mkdir d$d; for s in $(seq 10); do mkdir d$d/s$s;"
    .. " (cd d$d/s$s && touch $(seq -f 'f%g.c' 1 100)); done; done"
)
-- folders changed within two seconds of a scan are read again by the next
-- one (csrc/shared/tree_index.h): a project is older than that
vim.wait(2500)

local sandbox = require("flemma_sandbox")
local repo = vim.fn.getcwd()
vim.cmd("cd " .. vim.fn.fnameescape(big))
sandbox.setup({ policy = { network = false }, approval = { bash = "allow" } })
require("flemma_sandbox.nvim.autocmds").setup_common()
local chat = big .. "/first.chat"
vim.fn.writefile({ "@You:", "build it" }, chat)
vim.cmd("edit " .. vim.fn.fnameescape(chat))
local buf = vim.api.nvim_get_current_buf()
vim.bo[buf].filetype = "chat" -- what Flemma's ftdetect does
vim.wait(1000) -- the model's answer

local tools = require("flemma_sandbox.tools")

local pause = require("pause")

--- The longest main-thread pause while a bash call of the chat runs, the
--- time it took to start, and its whole time.
local function call(command)
  local result, longest, start_ms, total = pause.measure(function(done)
    tools.run("bash", { command = command }, { bufnr = buf }, done)
  end)
  assert(result and not result.error, vim.inspect(result))
  return longest, start_ms, total
end

local first, first_sync, first_total = call("true")
local later, later_sync, later_total = call("true")
print(
  string.format(
    "200,000 files, a session's first bash call in a chat: longest main-thread pause %.1f ms (%.1f ms to start it,"
      .. " %.0f ms in all; goal 16 ms); a later call %.1f ms (%.1f ms to start, %.0f ms in all)",
    first,
    first_sync,
    first_total,
    later,
    later_sync,
    later_total
  )
)

require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
vim.cmd("silent! %bwipeout!")
vim.cmd("cd " .. vim.fn.fnameescape(repo))
vim.fn.delete(scratch, "rf")
