--- The git tool's arguments, read the way git reads them: an allowlist of
--- options per subcommand, long options by their exact name (git would take
--- a unique prefix: "--upload-pa" for "--upload-pack", so a prefix is
--- refused rather than guessed), short options bundled ("-am") or with their
--- value attached ("-mtext", "-n5"), "--" ending the options. Whatever is
--- not listed is refused, so that no spelling reaches an option that runs a
--- command (-u, --upload-pack, --exec, -x, -c, --config-env, --template,
--- --exec-path, ...) or reads a host file into the repository (-F).

local M = {}

---@class flemma_sandbox.GitOptions
---@field flags table<string, true> options without a value ("-a", "--amend")
---@field values table<string, true> options that take one ("-m", "--depth")
---@field optional table<string, true> long options whose value is optional ("--porcelain=v2")

--- A set from a space-separated list.
---@param words string
---@return table<string, true>
local function set(words)
  local out = {}
  for w in words:gmatch("%S+") do
    out[w] = true
  end
  return out
end

---@param flags string
---@param values string
---@param optional? string
---@return flemma_sandbox.GitOptions
local function options(flags, values, optional)
  local o = { flags = set(flags), values = set(values), optional = set(optional or "") }
  for name in pairs(o.optional) do
    o.flags[name] = true
  end
  return o
end

local LOG_LIKE = "--oneline --graph --stat --shortstat --numstat --name-only --name-status -p --patch -s "
  .. "--no-patch --all --decorate --no-decorate --reverse --follow --abbrev-commit --no-merges --merges "
  .. "--first-parent --no-color --color -w --ignore-all-space --cached --staged --raw --summary"
local LOG_VALUES = "-n --max-count --skip --author --committer --since --until --after --before --grep "
  .. "--format --pretty --date -S -G -U --unified"

--- Options each subcommand takes; anything else is refused.
---@type table<string, flemma_sandbox.GitOptions>
M.OPTIONS = {
  status = options(
    "-s --short -b --branch --long -z --show-stash --ahead-behind --no-ahead-behind -u",
    "",
    "--porcelain --untracked-files --ignored"
  ),
  log = options(LOG_LIKE, LOG_VALUES, "--color --decorate"),
  show = options(LOG_LIKE, LOG_VALUES, "--color --decorate"),
  diff = options(
    LOG_LIKE .. " --exit-code --quiet --minimal --patience --histogram --no-index",
    LOG_VALUES,
    "--color --word-diff"
  ),
  add = options("-A --all -u --update -f --force -n --dry-run -v --verbose -N --intent-to-add", ""),
  commit = options(
    "-a --all --amend --no-edit --allow-empty --allow-empty-message -s --signoff -q --quiet -v --verbose",
    "-m --message --author --date"
  ),
  branch = options(
    "-d -D --delete -m -M --move -a --all -r --remotes -l --list -v --verbose --show-current -f --force",
    "-u --set-upstream-to --sort --contains --merged --no-merged"
  ),
  tag = options("-a --annotate -d --delete -l --list -f --force", "-m --message --sort --contains -n"),
  checkout = options("-f --force -q --quiet --detach -m --merge", "-b -B --orphan"),
  switch = options("-d --detach -f --force --discard-changes -q --quiet -m --merge", "-c --create -C --force-create"),
  restore = options("-S --staged -W --worktree -q --quiet", "-s --source"),
  stash = options("-u --include-untracked -k --keep-index --no-keep-index -q --quiet -a --all --index", "-m --message"),
  merge = options(
    "--no-ff --ff --ff-only --squash --no-squash --abort --continue --quit --no-commit --commit -q",
    "-m"
  ),
  rebase = options("--abort --continue --skip --quit -q --quiet --stat --no-stat", "--onto"),
  clone = options(
    "--single-branch --no-single-branch --no-tags -q --quiet -n --no-checkout",
    "--depth -b --branch -o --origin"
  ),
  fetch = options("--all --prune -p --tags -t --no-tags --unshallow -q --quiet -v --verbose", "--depth"),
  pull = options("--no-rebase --ff-only --ff --no-ff -q --quiet -v --verbose", "--depth", "--rebase"),
}

--- Reads args[2..] for subcommand sub.
---@param sub string
---@param args string[]
---@return string[]|nil words the arguments that are not options (or their values), string|nil err
function M.parse(sub, args)
  local allowed = M.OPTIONS[sub]
  if not allowed then
    return nil, "unsupported git subcommand: " .. tostring(sub)
  end
  local function refuse(arg, what)
    return nil,
      string.format(
        "git %s: %s %s is not allowed (the git tool takes listed options only, by their full name)",
        sub,
        what,
        arg
      )
  end
  local words, i = {}, 2
  while i <= #args do
    local arg = args[i]
    if arg == "--" then
      for j = i + 1, #args do
        words[#words + 1] = args[j]
      end
      break
    elseif arg:sub(1, 2) == "--" then
      local name, value = arg:match("^(%-%-[^=]+)=(.*)$")
      name = name or arg
      if allowed.values[name] then
        if not value then
          if i == #args then
            return nil, string.format("git %s: %s needs a value", sub, name)
          end
          i = i + 1
        end
      elseif not (allowed.flags[name] and (value == nil or allowed.optional[name])) then
        return refuse(arg, "option")
      end
    elseif arg:sub(1, 1) == "-" and #arg > 1 and not (arg:match("^%-%d+$") and (sub == "log" or sub == "show")) then
      -- a bundle: flags, then maybe one option whose value is the rest
      -- ("-5" to log and show is "-n 5")
      for k = 2, #arg do
        local short = "-" .. arg:sub(k, k)
        if allowed.values[short] then
          if k == #arg then
            if i == #args then
              return nil, string.format("git %s: %s needs a value", sub, short)
            end
            i = i + 1
          end
          break
        elseif not allowed.flags[short] then
          return refuse(short .. (k < #arg and " (in " .. arg .. ")" or ""), "option")
        end
      end
    elseif not arg:match("^%-%d+$") then
      words[#words + 1] = arg
    end
    i = i + 1
  end
  return words, nil
end

--- What a repository address given to clone, fetch or pull means: nil when
--- it is a remote URL git may use (https, http, ssh, git), else why not.
--- Transport helpers ("ext::", "fd::", any "X::") run programs; local
--- paths and file:// are allowed only inside one of `roots`.
---@param url string
---@param resolve fun(path: string): string|nil the real path of a local one
---@param roots string[]
---@return string|nil err, boolean|nil is_local
function M.check_url(url, resolve, roots)
  if url:find("::", 1, true) then
    return "git: the transport " .. url:match("^[^:]*") .. ":: is not allowed (it runs a program)"
  end
  local scheme = url:match("^(%a[%w+.-]*)://")
  if scheme then
    scheme = scheme:lower()
    if scheme == "https" or scheme == "http" or scheme == "ssh" or scheme == "git" then
      return nil, false
    elseif scheme ~= "file" then
      return "git: the protocol " .. scheme .. ":// is not allowed"
    end
  elseif url:match("^[^/]+:") and not url:match("^%.") then
    return nil, false -- scp-like "host:path": ssh
  end
  local real = resolve(scheme and url:gsub("^[Ff][Ii][Ll][Ee]://", "") or url)
  for _, root in ipairs(roots) do
    if real and (real == root or real:sub(1, #root + 1) == root .. "/") then
      return nil, true
    end
  end
  return "git: a local repository outside the project and the playground is not allowed: " .. url
end

--- The call as a shell line, every argument where it begins and ends:
--- "git commit -am 'model commit'". A word of plain characters stays as
--- it is; any other (a space, a quote, a $, an empty one) is single-quoted.
---@param args any[]
---@return string
function M.shown(args)
  local words = { "git" }
  for _, a in ipairs(args) do
    local w = tostring(a)
    if w:match("^[%w%-_./=:@,+%%]+$") then
      words[#words + 1] = w
    else
      words[#words + 1] = "'" .. w:gsub("'", "'\\''") .. "'"
    end
  end
  return table.concat(words, " ")
end

return M
