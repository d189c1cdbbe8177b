--- What a tool's command and its output tell, and the `[sandbox]` notes a
--- result gives the model from them and from the run's records: is the
--- command simple, which paths it was refused, which limit it may have hit,
--- what was moved to the quarantine. Pure functions (no Neovim here).
local M = {}

--- Shell syntax that makes a command more than one program with arguments.
local COMPLEX = { "&&", "||", "|", ";", "$(", "`", ">", "<", "(", ")", "&", "\n", "\r" }

--- A simple command is one program with arguments: no pipes, lists,
--- redirections, substitutions, subshells or variable assignments.
---@param command string
---@return boolean simple, string|nil why not
function M.classify(command)
  for _, token in ipairs(COMPLEX) do
    if command:find(token, 1, true) then
      return false, "contains " .. (token == "\n" and "a newline" or token)
    end
  end
  local first = command:match("^%s*(%S+)")
  if not first then
    return false, "is empty"
  end
  if first:match("^[%a_][%w_]*=") then
    return false, "sets a variable"
  end
  return true, nil
end

--- Programs whose arguments name other programs to run or code to run:
--- shells, interpreters, launchers, build tools and privilege tools.
M.RUNS_PROGRAMS = {}
for _, name in ipairs({
  "sh",
  "bash",
  "dash",
  "zsh",
  "fish",
  "ksh",
  "csh",
  "tcsh",
  "busybox",
  "env",
  "xargs",
  "find",
  "exec",
  "command",
  "builtin",
  "eval",
  "source",
  "nice",
  "nohup",
  "timeout",
  "watch",
  "time",
  "setsid",
  "stdbuf",
  "ionice",
  "chrt",
  "taskset",
  "flock",
  "unshare",
  "nsenter",
  "chroot",
  "script",
  "expect",
  "parallel",
  "strace",
  "ltrace",
  "gdb",
  "sudo",
  "doas",
  "su",
  "pkexec",
  "runuser",
  "systemd-run",
  "python",
  "python2",
  "python3",
  "pypy",
  "pypy3",
  "node",
  "nodejs",
  "deno",
  "bun",
  "perl",
  "ruby",
  "php",
  "lua",
  "luajit",
  "nvim",
  "vim",
  "vi",
  "emacs",
  "ed",
  "awk",
  "gawk",
  "mawk",
  "sed",
  "tclsh",
  "wish",
  "R",
  "Rscript",
  "julia",
  "java",
  "jshell",
  "scala",
  "kotlin",
  "groovy",
  "osascript",
  "pwsh",
  "make",
  "gmake",
  "cmake",
  "ninja",
  "meson",
  "just",
  "rake",
  "gradle",
  "mvn",
  "ant",
  "npx",
  "npm",
  "pnpm",
  "yarn",
  "pip",
  "pip3",
  "pipx",
  "uv",
  "uvx",
  "poetry",
  "cargo",
  "go",
  "dotnet",
  "docker",
  "podman",
  "kubectl",
  "ssh",
  "git",
  "tmux",
  "screen",
}) do
  M.RUNS_PROGRAMS[name] = true
end

--- Whether a program (a name or a path) runs what its arguments say; a
--- versioned name counts as its base (python3.12, perl5.36).
---@param program string
---@return boolean
function M.runs_programs(program)
  local base = program:match("([^/]+)$") or program
  return M.RUNS_PROGRAMS[base] == true or M.RUNS_PROGRAMS[(base:gsub("[%d.%-]+$", ""))] == true
end

--- The first word of a simple command, unquoted.
---@param command string
---@return string|nil
function M.program(command)
  local first = command:match("^%s*(%S+)")
  return first and (first:gsub("^['\"](.*)['\"]$", "%1")) or nil
end

--- Removes ANSI escape sequences (colours, cursor movement, titles).
---@param text string
---@return string
function M.strip_ansi(text)
  text = text:gsub("\27%][^\7\27]*\7", ""):gsub("\27%][^\7\27]*\27\\", "")
  text = text:gsub("\27%[[%d;?]*[ -/]*[@-~]", ""):gsub("\27[@-Z\\-_]", "")
  return text
end

--- Removes trailing white space from every line and from the end.
---@param text string
---@return string
function M.trim(text)
  return (text:gsub("[ \t\r]+\n", "\n"):gsub("%s+$", ""))
end

--- The optional `label` every Flemma tool takes: shown to the user, never used.
M.LABEL = { type = "string", nullable = true, description = "a short label for the user (e.g. 'running tests')" }

--- How curl, wget, git, ssh, pip and npm say the network failed.
local NETWORK_FAILURES = {
  "Could not resolve host", -- curl, git over http
  "Could not resolve proxy", -- curl
  "Failed to connect to", -- curl
  "Couldn't connect to server", -- curl
  "unable to resolve host address", -- wget
  "Temporary failure in name resolution", -- wget, pip, glibc
  "Name or service not known",
  "Network is unreachable",
  "Connection refused",
  "unable to access", -- git
  "unable to connect to", -- git://
  "Could not resolve hostname", -- ssh
  "Failed to establish a new connection", -- pip
  "NewConnectionError", -- pip
  "getaddrinfo ENOTFOUND", -- npm
  "getaddrinfo EAI_AGAIN", -- npm
  "ECONNREFUSED", -- npm
  "ENETUNREACH", -- npm
}

--- Whether output reads like a failed network access.
---@param text string
---@return boolean
function M.looks_like_network_failure(text)
  for _, needle in ipairs(NETWORK_FAILURES) do
    if text:find(needle, 1, true) then
      return true
    end
  end
  return false
end

--- The rule part of a reason from is_path_writable/is_path_readable:
--- "/p/.envrc is protected (deny_write .envrc)" -> "protected (deny_write .envrc)".
---@param why string
---@return string
function M.rule_of(why)
  return why:match("^.* is (.-)$") or why
end

local DENIALS = {
  { text = "Read-only file system", errno = "EROFS" },
  { text = "Permission denied", errno = "EACCES" },
  { text = "Operation not permitted", errno = "EPERM" },
  { text = "No such file or directory", errno = "ENOENT" }, -- inside a hidden folder
}

--- Paths that error messages name with EROFS, EACCES, EPERM or ENOENT, from the
--- usual shapes: "X: Read-only file system", "cannot create X: ...",
--- "cannot touch 'X': ...". Paths may be relative. Our programs' own lines
--- are about the host, not about what the command met, so they are skipped.
---@param text string
---@return { path: string, errno: string }[]
function M.denied_paths(text)
  local out, seen = {}, {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    for _, d in ipairs(DENIALS) do
      if line:find(d.text, 1, true) and not line:find("^flemma%-sandbox%-%l+: ") then
        local path = line:match("'([^']+)'")
          or line:match("cannot create ([^:]+):")
          or line:match("([^%s:']+):%s*" .. d.text:gsub("%-", "%%-"))
        if path and path ~= "" and not seen[path] then
          seen[path] = true
          out[#out + 1] = { path = path, errno = d.errno }
        end
      end
    end
  end
  return out
end

-- What a command prints (or how it dies) when it hits each limit.
local LIMIT_SIGNS = {
  {
    key = "memory_mb",
    unit = " MiB",
    text = { "ReserveShadowMemoryRange failed", "Cannot allocate memory", "out of memory" },
  },
  { key = "file_size_mb", unit = " MiB", text = { "File too large" }, signal = 25 },
  { key = "cpu_seconds", unit = " s", text = { "CPU time limit exceeded" }, signal = 24 },
  { key = "open_files", unit = "", text = { "Too many open files" } },
  { key = "processes", unit = "", text = { "fork: Resource temporarily unavailable", "fork: retry" } },
}

--- Lines naming the resource limit a failed command most likely hit.
---@param r { exit_code: integer, signal: integer|nil, stdout: string, stderr: string }
---@param limits flemma_sandbox.Limits
---@return string[]
function M.limit_notes(r, limits)
  local notes = {}
  if r.exit_code == 0 then
    return notes
  end
  local text = (r.stdout .. "\n" .. r.stderr):lower()
  for _, sign in ipairs(LIMIT_SIGNS) do
    local value = limits[sign.key]
    local hit = value and r.signal ~= nil and r.signal == sign.signal
    for _, t in ipairs(sign.text) do
      hit = hit or (value and text:find(t:lower(), 1, true) ~= nil)
    end
    if hit then
      local extra = sign.key == "memory_mb" and " (sanitizers such as ASan reserve terabytes: use false for them)" or ""
      notes[#notes + 1] = string.format(
        "[sandbox] the command may have hit policy.limits.%s = %d%s; raise it or set it to false%s",
        sign.key,
        value,
        sign.unit,
        extra
      )
    end
  end
  return notes
end

--- What the run moved to the quarantine (the helper says where on stderr):
--- why only the user may put it back.
---@param moved flemma_sandbox.Quarantined[]
---@return string[] notes
function M.quarantine_notes(moved)
  local notes = {}
  for _, q in ipairs(moved or {}) do
    notes[#notes + 1] = string.format(
      "[sandbox] %s was created at a protected name and moved to the quarantine (%s): "
        .. "the host could run it later, so only the user may put it back",
      q.from,
      q.path
    )
  end
  return notes
end

--- Why the helper stopped a command, from the run's "stopped" records
--- (the time limit has its own note, made by the caller).
---@param records flemma_sandbox.Record[]|nil
---@param say? boolean a restart, an end of the chat's sandbox or a stop for a replaced protected
--- file is also one notice for the user
---@param set_by_frontmatter? flemma_sandbox.SetByFrontmatter a restart names what the chat's frontmatter sets
---@return string[]
function M.stop_notes(records, say, set_by_frontmatter)
  local notes = {}
  for _, s in ipairs(records or {}) do
    if s.type == "stopped" and s.reason == "disk_reserve" then
      notes[#notes + 1] = string.format(
        "[sandbox] stopped: only %s MiB were free on the disk of %s (policy.limits.disk_reserve_mb = %s); "
          .. "free space, then run it again",
        s.free_mb,
        s.root,
        s.reserve_mb
      )
    elseif s.type == "stopped" and s.reason == "protection_changed" then
      notes[#notes + 1] = "[sandbox] stopped: "
        .. s.why
        .. " (so the sandbox could not see it unprotected); run it again"
      if say then
        -- what ran in the sandbox went with it: the user hears it too
        require("flemma_sandbox.base.notice").say("stopped: " .. tostring(s.why), vim.log.levels.WARN)
      end
    elseif s.type == "restarted" or s.reason == "sandbox_ended" then
      notes[#notes + 1] = "[sandbox] " .. require("flemma_sandbox.tools.live_notes").text(s, say, set_by_frontmatter)
    end
  end
  return notes
end

--- What the allowlist proxy refused, and allowed hosts it could not reach
--- (it answered 502), from the run's records.
---@param records flemma_sandbox.Record[]|nil
---@return string[]
function M.network_notes(records)
  local notes = {}
  for _, rec in ipairs(records or {}) do
    if rec.type == "blocked" then
      notes[#notes + 1] =
        string.format("[sandbox] blocked %s: %s (the user can add it to policy.allow_domains)", rec.host, rec.why)
    elseif rec.type == "unreachable" then
      notes[#notes + 1] = string.format(
        "[sandbox] %s is allowed, but could not be reached from this machine: %s (502 from the proxy)",
        rec.host,
        rec.why
      )
    end
  end
  return notes
end

--- A git that failed because the repository is read-only in the sandbox:
--- repository writes go through the git tool.
---@param text string stdout and stderr
---@return boolean
function M.looks_like_git_write(text)
  for line in text:gmatch("[^\n]+") do
    -- git's own "fatal: Unable to create '.../.git/index.lock': Read-only file system"
    if line:match("^fatal: ") or line:match("^error: ") then
      if line:find(".git", 1, true) and line:find("Read-only file system", 1, true) then
        return true
      end
    end
  end
  return false
end

M.GIT_HINT = "[sandbox] The repository is read-only inside the sandbox: git can read (status, log, diff, show) "
  .. "but add, commit, branch, checkout, stash, merge and rebase go through the git tool, "
  .. "which runs them outside the sandbox after the user agrees."

--- The line added to a result that failed for want of network (only
--- policy.network = false leaves a command without any).
M.NETWORK_HINT = "[sandbox] This command ran without network access, and this sandbox does not allow it "
  .. "(policy.network = false); ask the user to change that if the task needs the network."

return M
