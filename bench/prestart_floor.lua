--- The floor of make bench-calls' row "first call of a chat opened 1 s
--- before (prestart)" (issue 42), alone: `make bench-prestart`. The row
--- opens a chat whose file is new in the project root, waits a second
--- (the model's answer) and makes its first call; the anchors run back to
--- back. Here, in the same rounds, the order rotated each round: that
--- row; the same with the chat's file made long before (no fresh entry in
--- the root); a warm call of an older chat after the same second of idle,
--- with and without a file made in the root just before; Flemma's bare
--- bwrap argv after the same second of idle; a warm call back to back.
--- Printed: each row's median, its median ratio to Flemma's argv run back
--- to back (the table's anchor) and to Flemma's argv after the same idle
--- second, and how many first calls found their chat's sandbox not
--- started by the prestart (its keeper's pid changed during the call).
--- FLEMMA_DIR names a Flemma checkout (else the bare bwrap is the anchor);
--- FLEMMA_SANDBOX_BENCH_ROUNDS sets the rounds (default 11).
vim.opt.runtimepath:prepend(vim.fn.getcwd())
package.path = vim.fn.getcwd() .. "/bench/?.lua;" .. package.path
local repo = vim.fn.getcwd()
local fixture = require("repo_fixture")
local anchors_of = require("calls_anchors")
local scratch = vim.fn.trim(vim.fn.system("mktemp -d /var/tmp/flemma-bench-prestart.XXXXXX"))
vim.env.XDG_STATE_HOME = scratch .. "/state"
vim.env.XDG_CACHE_HOME = scratch .. "/cache"
local sandbox = require("flemma_sandbox")
local live = require("flemma_sandbox.backends.live")
sandbox.setup({ policy = { network = false }, approval = { bash = "allow" }, sandboxes = { max_running = 64 } })
require("flemma_sandbox.nvim.autocmds").setup_common()
local ROUNDS = anchors_of.ROUNDS
local IDLE_MS = 1000

local project = scratch .. "/small"
local chat_dir = project .. "/chats"
vim.fn.mkdir(chat_dir, "p")
vim.fn.writefile({ "int main(void) { return 0; }" }, project .. "/main.c")
vim.cmd("cd " .. vim.fn.fnameescape(project))

local chats, olds = 0, 0
---@type number|nil when a row last made an entry in the project root
local changed_at
--- A chat in the project root, its buffer shown (FileType chat: its
--- sandbox prestarts); its file made now unless `old` (made at the start).
local function open_chat(old)
  local file
  if old then
    olds = olds + 1
    file = string.format("%s/old%d.chat", project, olds)
  else
    chats = chats + 1
    file = string.format("%s/c%d.chat", project, chats)
  end
  if not old then
    vim.fn.writefile({ "@You:", "build it" }, file)
    changed_at = fixture.now_ms()
  end
  assert(vim.fn.filereadable(file) == 1, file)
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].filetype = "chat"
  return buf
end

--- The pid line of the chat's keeper ("" when none started yet).
local function keeper(buf)
  local dir = live.dir_for(sandbox.get_policy(buf).chat)
  local f = io.open(dir .. "/pid")
  local text = f and f:read("*a") or ""
  if f then
    f:close()
  end
  return text
end

local anchors, missing = anchors_of.anchors(project)
print("anchors not measured: " .. (missing ~= "" and missing or "none"))
local flemma = anchors[#anchors > 1 and 2 or 1]
local older = open_chat(false)
anchors_of.chat_call(older)
-- the "old" chats' files: older than the index's racy seconds when opened
for i = 1, ROUNDS + 1 do
  vim.fn.writefile({ "@You:", "build it" }, string.format("%s/old%d.chat", project, i))
end
vim.wait(2500)

--- After a row that made an entry in the root, untimed: past the scan
--- index's racy seconds (csrc/shared/tree_index.h) a call of the older
--- chat, whose scans then record the root settled; else the next row's
--- call would be the one that reads it again and rewrites the index.
local function settle()
  if changed_at then
    vim.wait(math.max(0, changed_at + 2100 - fixture.now_ms()))
    anchors_of.chat_call(older)
    changed_at = nil
  end
end

local not_prestarted, not_yet = 0, 0
--- A row whose prep opens a chat (its file new, or made at the start),
--- idles a second, and whose fn is the chat's first call.
local function first_row(label, old)
  local buf, before
  return {
    label = label,
    prep = function()
      buf = open_chat(old)
      vim.wait(IDLE_MS)
      before = keeper(buf)
    end,
    fn = function()
      anchors_of.chat_call(buf)
    end,
    after = function()
      if before == "" then
        not_yet = not_yet + 1 -- the prestart's keeper was not up yet
      elseif keeper(buf) ~= before then
        not_prestarted = not_prestarted + 1 -- the call started another
        -- why, when the helper said it (csrc/exec/live_why.c)
        local why = live.dir_for(sandbox.get_policy(buf).chat) .. "/ended.why"
        local text = vim.fn.filereadable(why) == 1 and table.concat(vim.fn.readfile(why), " | ") or "not said"
        print(string.format("  %s: its keeper changed during the call; why: %s", label, text))
      end
      settle()
    end,
  }
end

--- The row with a prep that idles a second first.
local function after_idle(row)
  row.label = row.label:gsub(":.*", "") .. " after 1 s idle"
  row.prep = function()
    vim.wait(IDLE_MS)
  end
  return row
end

local rows = {
  first_row("first call, chat opened 1 s before, its file new in the root", false),
  first_row("first call, chat opened 1 s before, its file made earlier", true),
  {
    label = "warm call of an older chat after 1 s idle",
    prep = function()
      vim.wait(IDLE_MS)
    end,
    fn = function()
      anchors_of.chat_call(older)
    end,
  },
  {
    label = "the same, a file made in the root before the idle second",
    prep = function()
      anchors_of.new_file(project)
      changed_at = fixture.now_ms()
      vim.wait(IDLE_MS)
    end,
    fn = function()
      anchors_of.chat_call(older)
    end,
    after = settle,
  },
  {
    label = "warm call, back to back",
    fn = function()
      anchors_of.chat_call(older)
    end,
  },
  {
    label = flemma[1] .. " after 1 s idle",
    prep = function()
      vim.wait(IDLE_MS)
    end,
    fn = flemma[2],
  },
}

-- the floors (bench/floor, built by make bench-calls where it can be): a
-- static client that only attaches, and one sent to the older chat's real
-- supervisor with no host-side work, each after the same idle second
local stop_floor = function() end
if vim.fn.executable(repo .. "/bench/out/floor-client") == 1 then
  local floor
  floor, stop_floor = anchors_of.floor(repo, scratch)
  table.insert(rows, #rows, after_idle(floor))
  table.insert(rows, #rows, after_idle(anchors_of.wire_row(repo, sandbox.wrapper(older)({ "true" }))))
else
  print("floor rows skipped: bench/floor is built on x86-64 with a static C library only")
end

--- Each row and the anchors once per round, the order rotated each round;
--- ms[case][round].
local cases = {}
for _, a in ipairs(anchors) do
  cases[#cases + 1] = { label = a[1], fn = a[2] }
end
vim.list_extend(cases, rows)
for _, c in ipairs(cases) do -- a warm-up of each, not counted
  if c.prep then
    c.prep()
  end
  c.fn()
  settle()
  c.ms = {}
end
not_prestarted, not_yet = 0, 0
for round = 1, ROUNDS do
  for i = 0, #cases - 1 do
    local c = cases[(i + round) % #cases + 1]
    if c.prep then
      c.prep()
    end
    local t0 = fixture.now_ms()
    c.fn()
    c.ms[round] = fixture.now_ms() - t0
    if c.after then
      c.after()
    end
  end
end

local idle = cases[#cases]
local function ratio(c, to)
  local r = {}
  for round = 1, ROUNDS do
    r[round] = c.ms[round] / to.ms[round]
  end
  return fixture.median(r)
end
print(
  string.format(
    "prestart_floor, %s, as uid %d, median of %d rounds (ratios: per round, then the median)",
    os.date("!%Y-%m-%d %H:%M UTC"),
    vim.loop.getuid(),
    ROUNDS
  )
)
local anchor = cases[#anchors > 1 and 2 or 1]
local warm_idle = cases[#anchors + 3]
print(string.format("  columns: median, ratio to %s, to %s, to the %s", anchor.label, idle.label, warm_idle.label))
for _, c in ipairs(cases) do
  print(
    string.format(
      "  %-62s %6.2f ms  %.2fx  %.2fx  %.2fx",
      c.label,
      fixture.median(vim.deepcopy(c.ms)),
      ratio(c, anchor),
      ratio(c, idle),
      ratio(c, warm_idle)
    )
  )
end
print(
  string.format(
    "  first calls: %d of %d started another keeper than the prestart's; %d came before it was up",
    not_prestarted,
    2 * ROUNDS,
    not_yet
  )
)
stop_floor()
live.stop_all(require("flemma_sandbox.backends.helper").helper())
vim.cmd("silent! %bwipeout!")
vim.cmd("cd /")
vim.fn.delete(scratch, "rf")
