--- The defaults of every config key (the types say what each holds).
local defaults = require("flemma_sandbox.policy.default_lists")
local util = require("flemma_sandbox.base.util")

---@class flemma_sandbox.Policy
---@field rw_paths string[] writable paths, may hold variables
---@field deny_read string[] paths hidden inside the sandbox ("!entry" removes one)
---@field home_allow string[] what the private home folder shows, read-only ("!entry" removes one; "~": the whole home)
---@field home_writable string[] folders of the private home a command may write (each its own empty tmpfs, thrown
--- away after the command; a chat keeps its own); the rest of it is read-only ("~": all of it writable)
---@field home_overlay string[] files and folders of the home shown writable as a copy of the sandbox's own: made
--- from the host's at its first command, kept until reset, never written back (an agent CLI's own config)
---@field deny_write string[] paths kept read-only inside writable folders ("!entry" removes one)
---@field secret_files string[] name patterns hidden when found anywhere in a project
---@field secret_scan_depth integer how many levels the secret scan looks down (0: off; default 64, the whole tree)
---@field allow_sockets string[] host unix sockets (or folders of them) the sandbox may connect to
---@field seccomp boolean deny dangerous syscalls (ptrace, mount, bpf, ...) with EPERM
---@field limits flemma_sandbox.Limits per command; false: no limit
---@field network boolean|"allowlist"|"host"|"ask" "allowlist" (and true): out through the proxy to
--- allow_domains only; "host": the host's network; "ask": the allowlist, and the user is asked about any
--- other host name while the command waits
---@field allow_domains string[] names ("*.x": its subdomains), IP literals and ranges the proxy lets through
---@field deny_domains string[] the same, refused even when allow_domains has them
---@field allow_privileged boolean keep the caller's user namespace, so sudo and capabilities work as outside (off:
--- an own user namespace, every capability dropped)
---@field allow_home_rw boolean let a writable path be the home folder or a folder above it (off: skipped)
---@field env_allow string[] environment variables passed in besides the default list ("NAME" or "PREFIX*")

---@class flemma_sandbox.Limits per command; false: no limit
---@field processes integer|false processes and threads of the user inside (RLIMIT_NPROC)
---@field memory_mb integer|false data segment and private writable memory (RLIMIT_DATA)
---@field cpu_seconds integer|false CPU time of each process (RLIMIT_CPU)
---@field file_size_mb integer|false the largest file a command may write (RLIMIT_FSIZE)
---@field open_files integer|false open file descriptors of each process (RLIMIT_NOFILE)
---@field tmpfs_mb integer|false each RAM-backed folder (private /tmp, /run, home, /dev/shm) at most this many
--- MiB (default: 1024, or a tenth of the RAM when less)
---@field disk_reserve_mb integer|false a command is stopped when a writable root's file system has less free
--- space (or 5 % of it, when less)
---@field inotify_instances integer|false inotify instances the sandbox may take of the user's (in its user namespace)
--- (default: an eighth of the user's limit, or false)
---@field inotify_watches integer|false inotify watches the sandbox may take of the user's
--- (default: an eighth of the user's limit, or false)

---@class flemma_sandbox.BwrapConfig
---@field path string the bwrap program
---@field extra_args string[] more bwrap options, before the command

---@class flemma_sandbox.Config
---@field enabled boolean the master switch
---@field backend string "auto" | "required" | a backend name
---@field policy flemma_sandbox.Policy what a sandboxed command may see, write and reach
---@field backends table<string, table> each backend's own settings, by its name
---@field approval table<string, "allow"|"ask"|"deny"> per tool
---@field tools flemma_sandbox.ToolsConfig the tools a model calls
---@field sandboxes flemma_sandbox.SandboxesConfig a chat's own sandbox, kept running between its tool calls

---@class flemma_sandbox.SandboxesConfig
---@field live boolean a chat's tool calls run in one sandbox that lives between them (its processes too); off:
--- a fresh sandbox for each call (the chat's folders are kept either way)
---@field idle_ttl_s integer a chat's sandbox is stopped after this many seconds without a call (its files stay)
---@field max_running integer at most this many chats' sandboxes run at once; past it the one used longest ago is
--- stopped (its files stay)
---@field prestart boolean a chat's sandbox starts in the background when the chat is opened or entered, so its
--- first tool call finds it running (never stopping another chat's to stay within max_running)
---@field checkpoints boolean before each call that can write (bash, write, edit, git), the tree of each git
--- repository in the writable projects is recorded, so :FlemmaSandbox undo can put it back
---@field max_checkpoints integer checkpoints kept per chat and repository (the oldest are dropped)
---@field workspace "direct"|"clone" "direct": calls work on the real tree (with checkpoints); "clone": a chat's
--- sandbox works on its own copy of each git repository in the writable projects, shown at the repository's path
---@field name string|false the chat's sandbox name (a chat's frontmatter sets it to share one sandbox between
--- chats; false: from the chat file's name and path)

---@class flemma_sandbox.ToolsConfig
---@field enabled boolean off: every tool call is refused (so is FLEMMA_SANDBOX_TOOLS=off in Neovim's environment)
---@field shell string the bash tool runs `shell -c command`
---@field timeout_ms integer default timeout of a bash or git call
---@field max_timeout_ms integer the most a call may ask for (the model chooses timeout_ms)
---@field output_limit integer characters of each stream a tool result keeps
---@field read_max_bytes integer the most one read call returns
---@field max_parallel integer tool calls of one buffer running at once
---@field output_file_max_bytes integer the most of one call's output its output file keeps
---@field cache_max_bytes integer cap of the folder that keeps output files

---@type flemma_sandbox.Config
local M = {
  enabled = true,
  backend = "auto",
  policy = {
    rw_paths = { "$CWD", "$FLEMMA_BUFFER_PATH", "/tmp", "$FLEMMA_PLAYGROUND" },
    deny_read = util.deepcopy(defaults.DENY_READ),
    home_allow = util.deepcopy(defaults.HOME_ALLOW),
    home_writable = util.deepcopy(defaults.HOME_WRITABLE),
    home_overlay = {},
    deny_write = util.deepcopy(defaults.DENY_WRITE),
    secret_files = util.deepcopy(defaults.SECRET_FILES),
    secret_scan_depth = 64,
    network = "allowlist",
    allow_domains = { "api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com" },
    deny_domains = {},
    allow_privileged = false,
    allow_home_rw = false,
    env_allow = {},
    allow_sockets = {},
    seccomp = true,
    limits = {
      processes = 4096,
      memory_mb = 8192,
      cpu_seconds = 600,
      file_size_mb = 8192,
      open_files = 8192,
      tmpfs_mb = util.default_tmpfs_mb(),
      disk_reserve_mb = 2048,
      inotify_instances = util.default_inotify_cap("max_user_instances"),
      inotify_watches = util.default_inotify_cap("max_user_watches"),
    },
  },
  backends = {
    bwrap = { path = "bwrap", extra_args = {} },
  },
  approval = {
    bash = "ask",
    read = "allow",
    write = "ask",
    edit = "ask",
    find = "allow",
    grep = "allow",
    ls = "allow",
    git = "ask",
  },
  tools = {
    enabled = true,
    shell = "bash",
    timeout_ms = 120000,
    max_timeout_ms = 600000,
    output_limit = 12000,
    read_max_bytes = 1048576,
    max_parallel = 4,
    output_file_max_bytes = 104857600,
    cache_max_bytes = 1073741824,
  },
  sandboxes = {
    live = true,
    idle_ttl_s = 900,
    max_running = 4,
    prestart = true,
    name = false,
    checkpoints = true,
    max_checkpoints = 100,
    workspace = "direct",
  },
}

return M
