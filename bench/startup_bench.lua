--- make bench, start-up: what flemma-sandbox adds to Neovim's start, next to
--- the same Neovim without it, in the same run (medians of alternating
--- starts, from --startuptime). Standalone with setup() in init.lua, and,
--- when FLEMMA_DIR names a Flemma checkout and Neovim is 0.11 or newer,
--- under Flemma (Flemma's setup() in both, flemma-sandbox loaded first as
--- the README's dependency spec does). Run by luajit from the repository.
local root = io.popen("pwd"):read("*l")
local RUNS = tonumber(os.getenv("STARTUP_RUNS") or "") or 21

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local scratch = io.popen("mktemp -d /tmp/flemma-startup.XXXXXX"):read("*l")

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

--- An init.lua: the plugin folders on 'runtimepath', then the setup calls.
local function init_file(name, folders, setup)
  local lines = { "vim.opt.swapfile = false", "vim.opt.shadafile = 'NONE'" }
  for _, folder in ipairs(folders) do
    lines[#lines + 1] = string.format("vim.opt.runtimepath:prepend(%q)", folder)
  end
  for _, line in ipairs(setup) do
    lines[#lines + 1] = line
  end
  local path = scratch .. "/" .. name .. ".lua"
  write(path, table.concat(lines, "\n") .. "\n")
  return path
end

--- Milliseconds from the start to the last step --startuptime records
--- (headless Neovim writes no "NVIM STARTED" line before 0.9).
local function start_ms(init)
  local log = scratch .. "/startuptime.log"
  os.remove(log)
  local cmd = string.format(
    "cd %s && nvim --headless -i NONE -u %s --startuptime %s -c 'qa!' >/dev/null 2>&1",
    shell_quote(scratch),
    shell_quote(init),
    shell_quote(log)
  )
  os.execute(cmd)
  local last
  for line in io.lines(log) do
    local ms = tonumber(line:match("^(%d+%.%d+)%s") or "")
    last = ms and math.max(last or 0, ms) or last
  end
  return assert(last, "no timed step in " .. log)
end

local function median(samples)
  table.sort(samples)
  return samples[math.floor(#samples / 2) + 1]
end

--- Alternating starts of both inits; medians and the difference.
local function compare(label, without, with)
  local a, b = {}, {}
  start_ms(without) -- warm the page cache for both
  start_ms(with)
  for _ = 1, RUNS do
    a[#a + 1] = start_ms(without)
    b[#b + 1] = start_ms(with)
  end
  local ma, mb = median(a), median(b)
  print(
    string.format("%-44s without %6.1f ms   with %6.1f ms   added %5.1f ms (%.2fx)", label, ma, mb, mb - ma, mb / ma)
  )
end

local setup = { "require('flemma_sandbox').setup({})" }
compare(
  "start-up, standalone, setup() in init.lua:",
  init_file("plain", {}, {}),
  init_file("standalone", { root }, setup)
)

local flemma = os.getenv("FLEMMA_DIR")
local version = io.popen("nvim --version"):read("*l") or ""
local major, minor = version:match("v(%d+)%.(%d+)")
if not flemma or flemma == "" then
  print("start-up under Flemma: skipped (set FLEMMA_DIR to a Flemma checkout)")
elseif tonumber(major) == 0 and tonumber(minor) < 11 then
  print("start-up under Flemma: skipped (" .. version .. "; Flemma needs 0.11)")
else
  local flemma_setup = { "require('flemma').setup({})" }
  compare(
    "start-up under Flemma, Flemma's setup():",
    init_file("flemma", { flemma }, flemma_setup),
    -- the README's spec: flemma-sandbox a dependency, so on the path first
    init_file("flemma_with", { flemma, root }, flemma_setup)
  )
end
os.execute("rm -rf " .. shell_quote(scratch))
