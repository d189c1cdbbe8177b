--- The get_policy + wrap_command row of make bench-calls alone (issue 42),
--- for a loop on policy work: hot (median of 200 calls) and right after a
--- new file in the project root (median of 21), at
--- FLEMMA_SANDBOX_BENCH_SOCKETS host sockets (default 0), in a project of
--- FLEMMA_SANDBOX_BENCH_FILES empty files (default 1, main.c; more:
--- repo_fixture.make_tree). FLEMMA_SANDBOX_BENCH_CALLS=N first makes N
--- calls of a chat opened in the project (its live sandbox running, as in
--- make bench-calls). With FLEMMA_SANDBOX_BENCH_COUNT=1 it also prints the
--- core calls of a hot call and, for one call right after a new file, the
--- core calls made and the time in each step.
--- nvim --headless -u NONE -i NONE -c "luafile bench/policy_row.lua" -c "qa!"
vim.opt.runtimepath:prepend(vim.fn.getcwd())
package.path = vim.fn.getcwd() .. "/bench/?.lua;" .. package.path
local fixture = require("repo_fixture")
local anchors_of = require("calls_anchors")
local repo = vim.fn.getcwd()
local scratch = vim.fn.trim(vim.fn.system("mktemp -d /var/tmp/flemma-bench-policy.XXXXXX"))
vim.env.XDG_STATE_HOME = scratch .. "/state"
vim.env.XDG_CACHE_HOME = scratch .. "/cache"

local sandbox = require("flemma_sandbox")
local core = require("flemma_sandbox.core")
local policy = require("flemma_sandbox.policy")
sandbox.setup({ policy = { network = false }, approval = { bash = "allow" }, sandboxes = { max_running = 64 } })

local project = scratch .. "/small"
vim.fn.mkdir(project .. "/chats", "p")
vim.fn.writefile({ "int main(void) { return 0; }" }, project .. "/main.c")
local files = tonumber(vim.env.FLEMMA_SANDBOX_BENCH_FILES or "1")
if files > 1 then
  fixture.make_tree(project, files)
  vim.wait(2500) -- folders changed within two seconds of a scan are read again by the next
end
vim.cmd("cd " .. vim.fn.fnameescape(project))
local sockets = tonumber(vim.env.FLEMMA_SANDBOX_BENCH_SOCKETS or "0")
local stop = anchors_of.hold_sockets(sockets, repo)
local held = #vim.fn.readfile("/proc/net/unix") - 1
assert(held >= sockets, string.format("%d host sockets held, %d asked for", held, sockets))

local calls = tonumber(vim.env.FLEMMA_SANDBOX_BENCH_CALLS or "0")
if calls > 0 then
  require("flemma_sandbox.nvim.autocmds").setup_common()
  vim.fn.writefile({ "@You:", "build it" }, project .. "/chats/c1.chat")
  vim.cmd("edit " .. vim.fn.fnameescape(project .. "/chats/c1.chat"))
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].filetype = "chat"
  for _ = 1, calls do
    anchors_of.chat_call(buf)
  end
end

local hot, fresh = anchors_of.policy_us(sandbox, project)
print(
  string.format(
    "get_policy + wrap_command, %d files, %d sockets, %d chat calls before: hot %.0f us / after a new entry %.0f us",
    files,
    sockets,
    calls,
    hot,
    fresh
  )
)

if vim.env.FLEMMA_SANDBOX_BENCH_COUNT == "1" then
  local counts, spent = {}, {}
  local originals = {}
  for name, fn in pairs(core) do
    if type(fn) == "function" then
      originals[name] = fn
      core[name] = function(...)
        counts[name] = (counts[name] or 0) + 1
        return fn(...)
      end
    end
  end
  -- the steps, timed: each function's time is added up under its name
  local steps = {
    { policy, "resolve", "policy.resolve" },
    { require("flemma_sandbox.backends.call_plan"), "make", "call_plan.make" },
    { require("flemma_sandbox.backends.bwrap_prepare"), "prepare", "bwrap_prepare.prepare" },
    { require("flemma_sandbox.backends.bwrap"), "wrap", "bwrap.wrap" },
    { require("flemma_sandbox.backends.check_plan"), "words_for", "check_plan.words_for" },
  }
  for _, step in ipairs(steps) do
    local fn = step[1][step[2]]
    step[4] = fn
    step[1][step[2]] = function(...)
      local t0 = fixture.now_ms()
      local out = { fn(...) }
      spent[step[3]] = (spent[step[3]] or 0) + (fixture.now_ms() - t0) * 1000
      return unpack(out, 1, table.maxn(out))
    end
  end
  sandbox.get_policy(nil)
  sandbox.wrap_command({ "true" })
  local hot_calls = 0
  for _, n in pairs(counts) do
    hot_calls = hot_calls + n
  end
  print(string.format("core calls of a hot call: %d", hot_calls))
  counts, spent = {}, {}
  anchors_of.new_file(project)
  local t0 = fixture.now_ms()
  sandbox.get_policy(nil)
  local t1 = fixture.now_ms()
  sandbox.wrap_command({ "true" })
  local t2 = fixture.now_ms()
  print(
    string.format("after a new entry: get_policy %.0f us, wrap_command %.0f us", (t1 - t0) * 1000, (t2 - t1) * 1000)
  )
  local timed = {}
  for _, step in ipairs(steps) do
    timed[#timed + 1] = string.format("%s %.0f us", step[3], spent[step[3]] or 0)
    step[1][step[2]] = step[4]
  end
  print("of it (both calls): " .. table.concat(timed, ", "))
  local names, total = {}, 0
  for name, n in pairs(counts) do
    names[#names + 1] = name
    total = total + n
  end
  table.sort(names, function(a, b)
    return counts[a] > counts[b]
  end)
  local parts = {}
  for _, name in ipairs(names) do
    parts[#parts + 1] = name .. " x" .. counts[name]
  end
  print(string.format("core calls: %d (%s)", total, table.concat(parts, ", ")))
  for name, fn in pairs(originals) do
    core[name] = fn
  end
end
if calls > 0 then
  require("flemma_sandbox.backends.live").stop_all(require("flemma_sandbox.backends.helper").helper())
end
stop()
vim.fn.delete(scratch, "rf")
