--- What taking a change back (undo) or again (redo) does to each of its
--- paths, from the shadow store's "plan" step (run/shadow.lua): a path goes
--- to the change's other end only while it is still exactly as the change
--- left it. One changed since, by the user, another chat or a formatter,
--- is a conflict and stays as it is; one already at the other end is left
--- alone; a path no call may write (a protected or hidden name, a chat
--- file, what the quarantine took) is never written.
local M = {}

---@class flemma_sandbox.PathChange
---@field path string relative to the repository's top
---@field from_mode string the mode at the change's start here ("0": no file)
---@field from_oid string
---@field to_mode string the mode it goes to ("0": the file is removed)
---@field to_oid string
---@field status "A"|"M"|"D" what it does to the tree now: adds, changes, removes
---@field why string|nil why it is left as it is (a conflict or a skipped path)

---@class flemma_sandbox.ChangePlan
---@field now string the tree now
---@field save string the commit keeping the tree now (refs/undo-saves)
---@field apply flemma_sandbox.PathChange[] written
---@field conflicts flemma_sandbox.PathChange[] changed since: kept as they are
---@field skipped flemma_sandbox.PathChange[] never written by undo or redo
---@field already integer paths already at the other end

--- The fields of NUL-separated output, split into sections at empty ones.
---@param out string
---@return string[][]
local function sections(out)
  local list, cur = {}, {}
  local pos = 1
  while pos <= #out do
    local stop = out:find("\0", pos, true) or (#out + 1)
    local field = out:sub(pos, stop - 1)
    if field == "" then
      list[#list + 1] = cur
      cur = {}
    else
      cur[#cur + 1] = field
    end
    pos = stop + 1
  end
  if #cur > 0 then
    list[#list + 1] = cur
  end
  return list
end

---@param fields string[]
---@return table<string, boolean>
local function set_of(fields)
  local set = {}
  for _, f in ipairs(fields or {}) do
    set[f] = true
  end
  return set
end

---@class flemma_sandbox.ParsedPlan
---@field now string
---@field save string
---@field changes flemma_sandbox.PathChange[] the change, path by path
---@field moved table<string, boolean> paths that differ now from the change's start
---@field off_end table<string, boolean> paths that differ now from its end

--- Reads the "plan" step's output (run/shadow.lua).
---@param out string
---@return flemma_sandbox.ParsedPlan|nil plan, string|nil err
function M.parse(out)
  local start = out:find("now ", 1, true)
  if not start then
    return nil, (out:match("[^\n%z]+") or "the store gave no plan")
  end
  local parts = sections(out:sub(start))
  local now, save = (parts[1] and parts[1][1] or ""):match("^now (%x+) (%x+)$")
  if not now then
    return nil, "the store's plan is not readable"
  end
  local changes, raw = {}, parts[2] or {}
  for i = 1, #raw - 1, 2 do
    local fm, tm, fo, to = raw[i]:match("^:(%d+) (%d+) (%x+) (%x+) %a")
    if fm then
      fm, tm = fm:gsub("^0+$", "0"), tm:gsub("^0+$", "0")
      local status = fm == "0" and "A" or (tm == "0" and "D" or "M")
      changes[#changes + 1] =
        { path = raw[i + 1], from_mode = fm, from_oid = fo, to_mode = tm, to_oid = to, status = status }
    end
  end
  return { now = now, save = save, changes = changes, moved = set_of(parts[3]), off_end = set_of(parts[4]) }
end

--- Why a path is never written by undo or redo, or nil.
---@param path string
---@param refused fun(path: string): string|nil the policy's word on a write there
---@return string|nil
local function never_written(path, refused)
  for part in path:gmatch("[^/]+") do
    if part == ".." or part == "." or part:lower() == ".git" then
      return "a path git could never have checked out"
    end
    if part:find(".flemma-quarantine-", 1, true) then
      return "moved to the quarantine"
    end
  end
  if path:match("%.chat$") then
    return "a chat's file"
  end
  return refused(path)
end

--- Decides each path of a parsed plan.
---@param parsed flemma_sandbox.ParsedPlan
---@param refused fun(path: string): string|nil the policy's word on a write there
---@param unsaved fun(path: string): boolean whether Neovim holds unsaved changes of it
---@param shared? fun(path: string): integer|nil a call that ran at the same time and changed it too
---@return flemma_sandbox.ChangePlan
function M.decide(parsed, refused, unsaved, shared)
  local plan = { now = parsed.now, save = parsed.save, apply = {}, conflicts = {}, skipped = {}, already = 0 }
  for _, c in ipairs(parsed.changes) do
    local never = never_written(c.path, refused)
    if c.from_mode == "160000" or c.to_mode == "160000" then
      never = "a submodule"
    end
    if never then
      c.why = never
      plan.skipped[#plan.skipped + 1] = c
    elseif not parsed.moved[c.path] then
      local other = shared and shared(c.path)
      if unsaved(c.path) then
        c.why = "unsaved changes in Neovim"
        plan.conflicts[#plan.conflicts + 1] = c
      elseif other then
        -- which of the two changed it cannot be told apart
        c.why = "call " .. other .. ", which ran at the same time, changed it too"
        plan.conflicts[#plan.conflicts + 1] = c
      else
        plan.apply[#plan.apply + 1] = c
      end
    elseif not parsed.off_end[c.path] then
      plan.already = plan.already + 1
    else
      c.why = "changed since"
      plan.conflicts[#plan.conflicts + 1] = c
    end
  end
  return plan
end

--- A path as the restore step reads it (printf's %b): every byte but
--- letters, digits and ._/- as \0ooo, so a name may hold any byte.
---@param path string
---@return string
function M.encode(path)
  return (path:gsub("[^A-Za-z0-9%._/%-]", function(c)
    return string.format("\\0%03o", c:byte())
  end))
end

---@param enc string
---@return string
local function decode(enc)
  return (enc:gsub("\\0(%d%d%d)", function(o)
    return string.char(tonumber(o, 8))
  end))
end

--- The lines of $store/apply for the paths a plan writes: removals first,
--- so that a folder a file takes the place of (or the other way round) is
--- gone before what replaces it is written.
---@param list flemma_sandbox.PathChange[]
---@return string
function M.apply_text(list)
  local lines, ordered = {}, {}
  for _, c in ipairs(list) do
    if c.to_mode == "0" then
      ordered[#ordered + 1] = c
    end
  end
  for _, c in ipairs(list) do
    if c.to_mode ~= "0" then
      ordered[#ordered + 1] = c
    end
  end
  for _, c in ipairs(ordered) do
    lines[#lines + 1] = table.concat({ c.from_mode, c.from_oid, c.to_mode, c.to_oid, M.encode(c.path) }, " ")
  end
  return table.concat(lines, "\n") .. (#lines > 0 and "\n" or "")
end

--- What the restore step answered (libexec/shadow_restore.sh, its JSON
--- lines as git_box.answers reads them): the paths written (as
--- $store/written's NUL-ended records for git update-index -z
--- --index-info) and the conflicts it found; whether it went through to
--- the end.
---@param answers table[]
---@param zero_oid string
---@return string written, string[] written_paths, { path: string, why: string }[] conflicts, boolean finished
function M.read_applied(answers, zero_oid)
  local written, paths, conflicts, finished = {}, {}, {}, false
  for _, a in ipairs(answers) do
    local enc = type(a.path) == "string" and a.path or nil
    if a.answer == "done" and enc and tostring(a.mode):match("^%d+$") and tostring(a.oid):match("^%x+$") then
      local path = decode(enc)
      local mode = a.mode == "0" and ("0 " .. zero_oid) or (a.mode .. " " .. a.oid)
      written[#written + 1] = mode .. "\t" .. path .. "\0"
      paths[#paths + 1] = path
    elseif a.answer == "conflict" and enc then
      conflicts[#conflicts + 1] = { path = decode(enc), why = tostring(a.why) }
    elseif a.answer == "applied" then
      finished = true
    end
  end
  return table.concat(written), paths, conflicts, finished
end

return M
