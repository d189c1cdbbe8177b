--- The bash tool: `shell -c command` through the job runner, in the
--- buffer's sandbox and working directory.
local core = require("flemma_sandbox.core")
local outputs = require("flemma_sandbox.tools.outputs")
local sandbox = require("flemma_sandbox")
local command_notes = require("flemma_sandbox.tools.command_notes")

local M = {
  name = "bash",
  input_schema = {
    type = "object",
    properties = {
      label = command_notes.LABEL,
      command = { type = "string", description = "the shell command" },
      timeout = {
        type = "number",
        nullable = true,
        description = "stop it after this many seconds (default from config, at most tools.max_timeout_ms)",
      },
      network = {
        type = "boolean",
        nullable = true,
        description = "true when the command needs the network (shown to the user; the policy decides what it reaches)",
      },
    },
    required = { "command" },
  },
}

function M.describe(info)
  local sentences = {
    "Run a shell command with `" .. info.shell .. " -c` in " .. info.cwd .. ", inside a sandbox.",
    "The filesystem is read-only except: " .. info.writable .. ".",
    info.network_text,
    "A scratch folder that persists between calls: " .. info.playground .. ".",
  }
  if info.private and info.private ~= "" then
    sentences[#sentences + 1] = "Each command gets its own empty "
      .. info.private
      .. ": what it writes there is gone when it ends."
  end
  if info.kept and info.kept ~= "" then
    sentences[#sentences + 1] = "This chat's own "
      .. info.kept
      .. " keep what commands write there from one call to the next (until the user resets them)."
  end
  sentences[#sentences + 1] = string.format(
    "Output over %d characters per stream is cut in the middle; the whole output is then saved to a file "
      .. "named in the result, which read can read in parts. Default timeout %d seconds.",
    info.output_limit,
    math.floor(info.timeout_ms / 1000)
  )
  return table.concat(sentences, " ")
end

--- An "always" answer is remembered by the resolved program, and only for
--- simple commands: `ls -la` may reuse it, `ls | sh` never does. For a
--- program that runs other programs (an interpreter, a launcher) it is kept
--- for the exact command line only: `bash -c true` says nothing about
--- `bash -c ANYTHING`, nor `find .` about `find . -exec CMD {} +`.
function M.prepare(input, ctx)
  local simple = command_notes.classify(input.command)
  local key
  if simple then
    local program = command_notes.program(input.command)
    local found = program and core.which(program, ctx.env_path)
    local real = found and (core.resolve(found) or found)
    if real and (command_notes.runs_programs(program) or command_notes.runs_programs(real)) then
      key = "bash-line:" .. real .. " " .. input.command:gsub("^%s*%S+", "", 1):gsub("^%s+", ""):gsub("%s+$", "")
    elseif real then
      key = "bash:" .. real
    end
  end
  return {
    lines = {
      "$ " .. input.command,
      "folder: " .. ctx.cwd,
      "network: " .. M.network_line(ctx.config, input.network == true),
    },
    remember_key = key,
    wants_network = input.network == true,
  }
end

--- A failed network access to a loopback address (127.x.x.x, localhost,
--- ::1): in a sandbox with a network of its own, the host's servers there
--- are out of reach.
---@param text string stdout and stderr
---@return boolean
function M.looks_like_loopback_failure(text)
  if not command_notes.looks_like_network_failure(text) then
    return false
  end
  return text:find("127%.%d+%.%d+%.%d+") ~= nil
    or text:find("localhost", 1, true) ~= nil
    or text:find("::1", 1, true) ~= nil
end

M.LOOPBACK_HINT = "[sandbox] 127.0.0.1 in this sandbox is its own loopback (localhost and ::1 too), not the host's: "
  .. "a server on the host's loopback is out of reach, only what runs in this sandbox listens there "
  .. '(policy.network = "host" shares the host\'s; ask the user if the task needs it). '
  .. "A server an earlier call started in the chat's sandbox is held between calls and goes on with "
  .. "this one: it may need a moment to listen (retry, or wait for its port)."

--- What the command's network will be, for its question.
---@param cfg flemma_sandbox.Config
---@param asked boolean the call says it needs the network
---@return string
function M.network_line(cfg, asked)
  local said = asked and " (the call says it needs it)" or ""
  local mode = cfg.policy.network
  if not cfg.enabled then
    return "yes, the host's (the sandbox is off)" .. said
  elseif mode == false then
    return "no" .. said
  elseif mode == "host" then
    return "yes, the host's" .. said
  elseif mode == "ask" then
    return "yes, through the proxy: allow_domains, other hosts after asking" .. said
  end
  return "yes, through the proxy: allow_domains only" .. said
end

--- At most this many refused paths get a note each.
M.MAX_DENIAL_NOTES = 20

--- The line naming the rule that blocked a path a failed command names.
---@param d { path: string, errno: string }
---@param ctx table
---@param resolved flemma_sandbox.ResolvedPolicy the policy the command ran with
---@return string|nil
function M.denial_note(d, ctx, resolved)
  local real = sandbox.real_path(d.path, ctx.cwd)
  if not real then
    return nil
  end
  if d.errno ~= "EROFS" then
    local visible, why = sandbox.readable_in(real, resolved)
    if not visible then
      return "[sandbox] read of " .. real .. " blocked: " .. command_notes.rule_of(why)
    end
  end
  if d.errno == "ENOENT" then
    return nil -- only a hidden path explains a missing file
  end
  local writable, why = sandbox.writable_in(real, resolved)
  if not writable then
    return "[sandbox] write to " .. real .. " blocked: " .. command_notes.rule_of(why)
  end
end

--- A command tool's result (bash, git): what the chat writes in the
--- result block (chat/results.lua), and, for the timeline, its runs.
---@class flemma_sandbox.CommandResult
---@field stdout string
---@field stderr string
---@field exit_code integer|nil
---@field timed_out boolean|nil
---@field truncated boolean|nil
---@field notes string[]|nil the [sandbox] notes, after the output
---@field sandbox_runs flemma_sandbox.RunReport[] for calls.ended (api/timeline.lua), not the model

--- Runs argv as a tool command (bash's and git's shared path). adjust may
--- add to the result and its notes before done receives it.
---@param argv string[]
---@param ctx table the tool context
---@param extra table job.run options beyond the common ones
---@param adjust fun(result: flemma_sandbox.CommandResult, notes: string[], r: flemma_sandbox.JobResult)
---@param done fun(result: flemma_sandbox.CommandResult)
function M.run_argv(argv, ctx, extra, adjust, done)
  local opts = {
    -- under Flemma (ctx.wrap): through Flemma's wrap_command and our backend
    wrap = ctx.wrap or sandbox.wrapper(ctx.bufnr, { bufnr = ctx.bufnr }),
    cwd = ctx.cwd,
    timeout_ms = (M.timeout(nil, ctx.config.tools)),
    output_limit = ctx.config.tools.output_limit,
    on_exit = function(r)
      ctx.on_job(nil)
      local notes = {}
      if r.sandboxed then
        notes = command_notes.quarantine_notes(r.quarantined)
      end
      if r.timed_out then
        notes[#notes + 1] = "[sandbox] stopped after " .. ctx.timeout_ms_used .. " ms"
      end
      -- flemma-sandbox-host stops a command when a writable root's disk
      -- runs short, or when what its protection rests on was replaced
      vim.list_extend(notes, command_notes.stop_notes(r.records, true, ctx.set_by_frontmatter))
      if ctx.network_denied then
        notes[#notes + 1] = "[sandbox] the network is off here (policy.network = false); the command ran without it"
      end
      -- whatever the exit code: "...; echo done" must not hide a refusal
      if r.sandboxed then
        -- one policy for every note (a cache hit: the command's own), and
        -- a bounded number of them: a command refused on thousands of
        -- paths must not stall the editor or flood the model
        local resolved
        local denied = command_notes.denied_paths(r.stderr)
        for i, d in ipairs(denied) do
          if i > M.MAX_DENIAL_NOTES then
            notes[#notes + 1] = string.format("[sandbox] %d more paths were refused", #denied - M.MAX_DENIAL_NOTES)
            break
          end
          resolved = resolved or sandbox.get_policy(ctx.bufnr, ctx.config_opts)
          notes[#notes + 1] = M.denial_note(d, ctx, resolved)
        end
        if command_notes.looks_like_git_write(r.stdout .. "\n" .. r.stderr) then
          notes[#notes + 1] = command_notes.GIT_HINT
        end
      end
      if r.sandboxed then
        vim.list_extend(notes, command_notes.limit_notes(r, ctx.config.policy.limits or {}))
      end
      vim.list_extend(notes, command_notes.network_notes(r.records))
      if not ctx.network and r.sandboxed and command_notes.looks_like_network_failure(r.stdout .. r.stderr) then
        notes[#notes + 1] = command_notes.NETWORK_HINT
      end
      -- a network through the proxy (allowlist, ask) comes with a loopback of its own
      local own_loopback = ctx.network and r.sandboxed and ctx.config.policy.network ~= "host"
      if own_loopback and M.looks_like_loopback_failure(r.stdout .. r.stderr) then
        notes[#notes + 1] = M.LOOPBACK_HINT
      end
      ---@type flemma_sandbox.CommandResult
      local result = {
        stdout = command_notes.trim(command_notes.strip_ansi(r.stdout)),
        stderr = command_notes.trim(command_notes.strip_ansi(r.stderr)),
        exit_code = r.exit_code,
        timed_out = r.timed_out,
        truncated = r.truncated,
        -- for the chat's timeline (timeline.lua), not the model
        sandbox_runs = { { records = r.records, quarantined = r.quarantined } },
      }
      adjust(result, notes, r)
      result.notes = #notes > 0 and notes or nil
      done(result)
    end,
  }
  for k, v in pairs(extra) do
    opts[k] = v
  end
  ctx.timeout_ms_used = opts.timeout_ms
  local handle, err = sandbox.run(argv, opts)
  if not handle then
    return done({ error = err })
  end
  ctx.on_job(handle)
end

--- The timeout a call gets: what it asks for in seconds (or the default),
--- never more than tools.max_timeout_ms; and the note saying it was capped.
---@param asked_s number|nil seconds
---@param tools_cfg flemma_sandbox.ToolsConfig
---@return integer timeout_ms, string|nil note
function M.timeout(asked_s, tools_cfg)
  local want = asked_s and math.max(1, math.floor(asked_s * 1000)) or tools_cfg.timeout_ms
  if want > tools_cfg.max_timeout_ms then
    local note = "[sandbox] timeout %g s is above tools.max_timeout_ms: capped at %d ms"
    return tools_cfg.max_timeout_ms, string.format(note, asked_s or want / 1000, tools_cfg.max_timeout_ms)
  end
  return want, nil
end

function M.run(input, ctx, done)
  local cfg = ctx.config
  local spill = outputs.new_file(cfg.tools.cache_max_bytes, cfg.tools.output_file_max_bytes)
  local timeout_ms, capped = M.timeout(input.timeout, cfg.tools)
  M.run_argv({ cfg.tools.shell, "-c", input.command }, ctx, {
    timeout_ms = timeout_ms,
    spill_path = spill,
    spill_max_bytes = cfg.tools.output_file_max_bytes,
  }, function(result, notes, r)
    if capped then
      table.insert(notes, 1, capped)
    end
    if spill and r.truncated and not r.sandboxed then
      spill = outputs.set_aside(spill)
    end
    if r.truncated and spill then
      result.output_file = spill
      local kept = r.spill or { kept = 0, total = 0 }
      if kept.total > kept.kept then
        notes[#notes + 1] = string.format(
          "[sandbox] output was cut; its first %d of %d bytes are in %s (tools.output_file_max_bytes); "
            .. "read it in parts with read (offset, limit)",
          kept.kept,
          kept.total,
          spill
        )
      else
        notes[#notes + 1] = string.format(
          "[sandbox] output was cut; the whole output (%d bytes) is in %s; read it in parts with read (offset, limit)",
          kept.total,
          spill
        )
      end
    elseif spill then
      os.remove(spill)
    end
  end, function(result)
    if result.error and spill then
      os.remove(spill)
    end
    done(result)
  end)
end

return M
