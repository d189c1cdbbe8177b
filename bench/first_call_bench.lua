--- make bench, part 4 (a headless Neovim of its own, so nothing is warm
--- but what a session warms): the first tool call of a session in a
--- project of 200,000 files. A chat buffer is opened there (its FileType
--- starts the scan index, the test sandbox and the probes in the
--- background, nvim/autocmds.lua), the model answers (a second here), and
--- its first bash call runs in the chat's sandbox. Printed: the longest
--- pause of the main thread while that call starts, runs and ends (a 1 ms
--- timer's longest gap; goal 16 ms, one frame), next to a later call's;
--- then the first call of a chat opened a second before (its sandbox
--- started when it was opened, sandboxes.prestart) as a ratio to a warm
--- call, next to the same with sandboxes.prestart = false.
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

-- the first call of a chat opened a second before: its sandbox started
-- when the chat was opened (sandboxes.prestart), next to a warm call and
-- to the same first call with sandboxes.prestart = false (a whole start)
local function first_of(name, prestart)
  sandbox.setup({ policy = { network = false }, approval = { bash = "allow" }, sandboxes = { prestart = prestart } })
  local path = big .. "/" .. name .. ".chat"
  vim.fn.writefile({ "@You:", "build it" }, path)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].filetype = "chat"
  vim.wait(1000) -- the model's answer
  local _, _, total = call("true")
  local _, _, warm = call("true")
  return total, warm
end
local opened, warm = first_of("opened", true)
local cold, warm_cold = first_of("cold", false)
print(
  string.format(
    "first call of a chat opened 1 s before: %.0f ms with sandboxes.prestart = %.1fx a warm call (%.0f ms);"
      .. " with prestart = false %.0f ms = %.1fx a warm call (%.0f ms)",
    opened,
    opened / warm,
    warm,
    cold,
    cold / warm_cold,
    warm_cold
  )
)

require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
vim.cmd("silent! %bwipeout!")
vim.cmd("cd " .. vim.fn.fnameescape(repo))
vim.fn.delete(scratch, "rf")
