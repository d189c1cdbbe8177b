-- The chat's timeline under the real Flemma (FLEMMA_DIR): Flemma's bash
-- calls, run by hand with :Flemma tool:execute in direct mode, land in
-- :FlemmaSandbox log with their command, exit code, the files they changed
-- and the host the allowlist proxy refused (Flemma's network = true goes
-- through it). Controls: the call's file is on disk, the refused call's
-- output says it was blocked.
local h = require("support.helpers")
local flemma_chat = require("support.flemma_chat")
local log = require("flemma_sandbox.nvim.log")
local timeline = require("flemma_sandbox.api.timeline")

local execute, result_of = flemma_chat.execute, flemma_chat.result_of

describe("the timeline under Flemma", function()
  local p
  flemma_chat.each_project(
    "git init -q . && printf 'one\\n' > a.txt && git add -A && git -c user.name=u -c user.email=u@e commit -qm init",
    function(world)
      p = world
    end,
    { flemma = true }
  )

  it("lists Flemma's bash calls with their files and the host the proxy refused", function()
    local chat = p.proj .. "/l.chat"
    local text = execute(chat, "bash", { label = "t", command = "cd " .. p.proj .. " && echo made > made.txt" })
    assert.are.equal("made\n", h.read(p.proj .. "/made.txt"), "control: the call wrote: " .. result_of(text))
    local bufnr
    text, bufnr =
      execute(chat, "bash", { label = "t", command = "git ls-remote http://blocked.test/r.git; echo tried" })
    assert.matches("blocked blocked%.test", result_of(text), "control: the proxy refused it")
    local dir = assert(log.chat_of(bufnr))
    local entries = {}
    vim.wait(15000, function()
      entries = timeline.read(dir)
      return #entries >= 2
    end, 20)
    assert.are.equal(2, #entries, vim.inspect(entries))
    assert.are.same({ 1, 2 }, { entries[1].n, entries[2].n })
    assert.are.same({ "bash", true, true }, { entries[1].tool, entries[1].ok, entries[1].checkpoint })
    assert.matches("^blocked%.test: ", entries[2].refused[1])
    local lines = log.lines(bufnr)
    local all = table.concat(lines, "\n")
    local one = assert(all:find("\n#1  [%d: -]+  bash  ok\n"), all)
    local two = assert(all:find("\n#2  [%d: -]+  bash  ok\n"), all)
    assert.is_true(two < one, all)
    assert.matches("\n    cd " .. vim.pesc(p.proj) .. " && echo made > made%.txt\n    A made%.txt", all:sub(one))
    assert.matches("\n    git ls%-remote http://blocked%.test/r%.git; echo tried\n    files: none changed\n", all)
    assert.matches("\n    refused: blocked%.test: blocked%.test is not in allow_domains", all:sub(two, one))
  end)
end)
