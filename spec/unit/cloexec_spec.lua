--- Descriptors are made close-on-exec: only 0-2 and what a program hands
--- on on purpose reach the programs it starts (DEVELOPERS.md, descriptors).
local h = require("support.helpers")

--- Calls that make a descriptor, and how each says close-on-exec.
local MAKERS = {
  "open",
  "openat",
  "dup",
  "pipe",
  "pipe2",
  "socket",
  "socketpair",
  "accept",
  "accept4",
  "inotify_init",
  "inotify_init1",
  "epoll_create",
  "epoll_create1",
  "memfd_create",
  "eventfd",
  "signalfd",
  "fopen",
  "fcntl",
}

--- Calls without CLOEXEC that are right, each with why: file, then the call's text.
local ON_PURPOSE = {
  -- the walk's and the root's own flags: fs_open_beneath adds O_CLOEXEC to them
  ["csrc/shared/beneath.c"] = { "openat(fd, name, flags)", 'openat(rootfd, ".", flags & ~O_NOFOLLOW)' },
  -- bwrap reads its arguments from this descriptor (--args)
  ["csrc/exec/host_side.c"] = { "open(o->args_file, O_RDONLY | O_NOFOLLOW)", "fcntl(fd, F_DUPFD, 3)" },
  -- the proxy starts no program
  ["csrc/proxy/proxy_main.c"] = { 'fopen(file, "r")' },
}

---@param list string[]
---@param word string
---@return boolean
local function contains(list, word)
  for _, w in ipairs(list) do
    if w == word then
      return true
    end
  end
  return false
end

--- The calls of the C sources that make a descriptor without close-on-exec.
---@return string[]
local function open_without_cloexec()
  local found = {}
  for file in h.capture("ls csrc/*/*.c"):gmatch("[^\n]+") do
    local src = assert(h.read(file)):gsub("/%*.-%*/", function(c)
      return (c:gsub("[^\n]", " "))
    end)
    for _, name in ipairs(MAKERS) do
      for pos, args in src:gmatch("()%f[%w_]" .. name .. "(%b())") do
        local call = name .. args
        local ok
        if name == "fopen" then
          ok = args:find('"%a*e%a*"%s*%)$') ~= nil
        elseif name == "fcntl" then
          ok = not args:find("F_DUPFD%f[^%w_]")
        else
          ok = args:find("CLOEXEC") ~= nil
        end
        if not ok and not contains(ON_PURPOSE[file] or {}, call) then
          local line = select(2, src:sub(1, pos):gsub("\n", "")) + 1
          found[#found + 1] = file .. ":" .. line .. ": " .. call
        end
      end
    end
  end
  table.sort(found)
  return found
end

describe("close-on-exec", function()
  it("every descriptor the C code makes is close-on-exec, or handed on on purpose", function()
    assert.are.same({}, open_without_cloexec())
  end)

  it("the command line's Neovim gets no /dev/null of flemma-sandbox's but its stdin", function()
    local dir = h.tmpdir()
    -- a stand-in Neovim: lists its descriptors and its parent's (flemma-sandbox), writes no plan
    h.write(
      dir .. "/nvim",
      "#!/bin/sh\nls -l /proc/$$/fd > "
        .. h.shell_quote(dir .. "/child")
        .. "\nls -l /proc/$PPID/fd > "
        .. h.shell_quote(dir .. "/parent")
        .. "\n"
    )
    h.sh("chmod 755 " .. h.shell_quote(dir .. "/nvim"))
    local r = h.run({ "bin/flemma-sandbox", "list" }, { FLEMMA_SANDBOX_NVIM = dir .. "/nvim" })
    assert.are.equal(0, r.code, r.stderr)
    local child, parent = assert(h.read(dir .. "/child")), assert(h.read(dir .. "/parent"))
    assert.matches(" 0 %-> /dev/null\n", child)
    assert.matches(" 3 %-> pipe:", child)
    -- what flemma-sandbox opened for the child: open in the child, not in the parent
    for fd, target in child:gmatch(" (%d+) %-> ([^\n]*)") do
      local own = not parent:find(" " .. fd .. " %-> ")
      assert(fd == "0" or not own or target ~= "/dev/null", "flemma-sandbox's /dev/null as " .. fd .. ":\n" .. child)
    end
    h.rmdir(dir)
  end)
end)
