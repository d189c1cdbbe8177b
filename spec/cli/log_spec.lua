--- flemma-sandbox log NAME [N]: a chat's timeline from the command line,
--- the calls a real Neovim ran in that chat, with the files each changed;
--- with N, that call's diff.
local cli = require("support.cli")
local h = require("support.helpers")

--- Runs, in a real Neovim in w's project, the bash calls of chat a.chat
--- one after another, and waits for their timeline entries; the chat's
--- name.
---@param w support.CliWorld
---@param commands string[]
---@return string
local function chat_calls(w, commands)
  h.write(w.proj .. "/a.chat", "@You:\nhi\n")
  local out = w.base .. "/chat-name"
  local script = w.base .. "/calls.lua"
  h.write(script, table.concat({
    "vim.opt.rtp:prepend(" .. string.format("%q", vim.fn.getcwd()) .. ")",
    "require('flemma_sandbox').setup({ backend = 'bwrap', sandboxes = { workspace = 'direct' },",
    "  policy = { rw_paths = { '$CWD' }, network = false } })",
    "vim.cmd('edit a.chat')",
    "local bufnr = vim.api.nvim_get_current_buf()",
    "local commands, left = " .. vim.inspect(commands) .. ", 0",
    "local function nxt(i)",
    "  if i > #commands then return end",
    "  require('flemma_sandbox.tools').run('bash', { command = commands[i] },",
    "    { bufnr = bufnr, approved = true }, function() left = i; nxt(i + 1) end)",
    "end",
    "nxt(1)",
    "assert(vim.wait(60000, function() return left == #commands end, 20), 'the calls did not end')",
    "local log = require('flemma_sandbox.nvim.log')",
    "local dir, name = log.chat_of(bufnr)",
    "assert(vim.wait(15000, function()",
    "  return #require('flemma_sandbox.api.timeline').read(dir) == #commands",
    "end, 20), 'no timeline')",
    "local f = assert(io.open(" .. string.format("%q", out) .. ", 'w'))",
    "f:write(name)",
    "f:close()",
  }, "\n") .. "\n")
  local r = h.run(
    { "nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", "luafile " .. script, "-c", "qa!" },
    cli.env(w),
    w.proj
  )
  assert(r.code == 0, r.stderr)
  return assert(h.read(out), "the chat's name: " .. r.stderr)
end

describe("flemma-sandbox log", function()
  local w
  cli.each_world(function(world)
    w = world
  end)

  it("prints a chat's calls with the files each changed, and call N's diff", function()
    local name = chat_calls(w, { "echo made > made.txt && echo more >> a.txt", "true" })
    assert.are.equal("made\n", h.read(w.proj .. "/made.txt"), "control: the call wrote")
    local r = cli.run(w, { "log", name })
    assert.are.equal(0, r.code, r.stderr)
    local two = assert(r.stdout:find("\n#2  [%d: -]+  bash  exit 0\n    %$ true\n    files: none changed\n"), r.stdout)
    local one = assert(r.stdout:find("\n#1  [%d: -]+  bash  exit 0\n    %$ echo made"), r.stdout)
    assert.is_true(two < one, "newest first")
    assert.matches("\n    A made%.txt\n", r.stdout:sub(one) .. "\n")
    assert.matches("\n    M a%.txt\n", r.stdout:sub(one) .. "\n")
    r = cli.run(w, { "log", name, "1" })
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("diff %-%-git a/made%.txt b/made%.txt", r.stdout)
    assert.matches("\n%+made\n", r.stdout)
    assert.matches("\n original\n%+more\n", r.stdout)
    r = cli.run(w, { "log", name, "2" })
    assert.are.equal(1, r.code)
    assert.matches("call 2 changed no file", r.stderr)
    r = cli.run(w, { "log", name, "3" })
    assert.are.equal(1, r.code)
    assert.matches("call 3 has no recorded change", r.stderr)
  end)

  it("says which sandbox it needs, and when there is no such sandbox or no call yet", function()
    local r = cli.run(w, { "log" })
    assert.are_not.equal(0, r.code)
    assert.matches("log: which sandbox%?", r.stderr)
    r = cli.run(w, { "log", "nope" })
    assert.are_not.equal(0, r.code)
    assert.matches("log: no sandbox nope in ", r.stderr)
    assert.are.equal(0, cli.run(w, { "run", "--direct", "alpha", "--", "true" }).code)
    r = cli.run(w, { "log", "alpha" })
    assert.are.equal(1, r.code)
    assert.matches("no call of chat alpha is recorded yet", r.stderr)
    r = cli.run(w, { "log", "alpha", "x" })
    assert.are_not.equal(0, r.code)
    assert.matches("N must be a call's number", r.stderr)
  end)
end)
