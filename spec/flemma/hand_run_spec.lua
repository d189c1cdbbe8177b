-- A call run by hand (:Flemma tool:execute; Alt-Enter is the same path)
-- asks no approval resolver: in a chat whose frontmatter loosens the
-- sandbox and is not trusted, our definitions in Flemma's tool registry
-- (flemma/tool_overrides.lua) refuse it with the resolver's rule
-- (approval.lua's buffer_refusal), whatever the frontmatter set: here it
-- turns Flemma's sandbox off, so what ran would run on the host. Control:
-- once the user trusts that frontmatter, the same calls run on the host
-- and the probe is written there (the path is real).
local h = require("support.helpers")
local flemma_chat = require("support.flemma_chat")

local execute, result_of = flemma_chat.execute, flemma_chat.result_of

describe("a call run by hand in a chat whose frontmatter loosens the sandbox", function()
  local p
  flemma_chat.each_project("git init -q . && printf 'one\\n' > a.txt", function(world)
    p = world
  end, { flemma = true })

  local function status(bufnr)
    return table.concat(require("flemma_sandbox.nvim.status").lines(bufnr), "\n")
  end

  it("is refused until the frontmatter is trusted; then it runs as the frontmatter says", function()
    local loose = "flemma.opt.sandbox.enabled = false"
    local probe = p.dir .. "/home/UNSANDBOXED_PROBE"
    local written = p.dir .. "/home/WRITTEN_PROBE"
    local chat = p.dir .. "/chats/loose.chat"
    local bash = { label = "p", command = "echo ran > " .. probe .. " && echo ran-on-host" }
    local write = { label = "w", path = written, content = "written\n" }

    local text, bufnr = execute(chat, "bash", bash, loose)
    assert.matches("flemma%-sandbox: refused: [^\n]*frontmatter loosens the sandbox", result_of(text))
    assert.is_nil(result_of(text):find("ran-on-host", 1, true))
    assert.are.equal(0, vim.fn.filereadable(probe), "bash ran on the host")
    text = execute(chat, "write", write, loose)
    assert.matches("flemma%-sandbox: refused: ", result_of(text))
    assert.are.equal(0, vim.fn.filereadable(written), "write ran")
    local said = status(bufnr)
    assert.matches("frontmatter NOT trusted, every tool call is refused", said)
    assert.matches("by hand: +refused too", said)

    -- control: trusted, the frontmatter applies: Flemma's sandbox is off
    -- and the same calls run on the host
    vim.cmd("FlemmaSandbox trust")
    text, bufnr = execute(chat, "bash", bash, loose)
    assert.matches("ran%-on%-host", result_of(text))
    assert.are.equal("ran\n", h.read(probe))
    execute(chat, "write", write, loose)
    assert.are.equal("written\n", h.read(written))
    assert.is_nil(status(bufnr):find("NOT trusted", 1, true))
  end)

  it("refuses the other tools too: Flemma's grep (guarded), our git", function()
    require("flemma.tools").register("flemma_sandbox.flemma.tools")
    local secret = "SECRET-" .. tostring(vim.loop.hrtime())
    vim.fn.mkdir(p.dir .. "/home/.ssh", "p")
    h.write(p.dir .. "/home/.ssh/id_test", secret .. "\n")
    local loose = "flemma.opt.sandbox.enabled = false"
    local chat = p.dir .. "/chats/tools.chat"
    local grep = { label = "g", pattern = secret, path = p.dir .. "/home/.ssh" }
    local git = { label = "s", args = { "status" } }
    local text, bufnr = execute(chat, "grep", grep, loose)
    assert.matches("flemma%-sandbox: refused: ", result_of(text))
    assert.is_nil(result_of(text):find(secret, 1, true))
    text = execute(chat, "git", git, loose)
    assert.matches("flemma%-sandbox: refused: ", result_of(text))
    assert.is_nil(result_of(text):find("branch", 1, true))
    assert.matches("by hand: +refused too", status(bufnr))
    -- control: trusted, both run (unsandboxed, as the frontmatter says)
    vim.cmd("FlemmaSandbox trust")
    text = execute(chat, "grep", grep, loose)
    assert.truthy(result_of(text):find(secret, 1, true), text)
    text = execute(chat, "git", git, loose)
    assert.matches("branch", result_of(text))
  end)
end)
