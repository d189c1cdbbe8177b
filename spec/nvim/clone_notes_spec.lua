--- Clone mode keeps the `[sandbox]` notes of a run (run/end_of_run.lua):
--- its check file comes with the wrap (backends/helper.lua's
--- flemma_sandbox.WrapRecord), not from a search of the argv, whose first
--- word in clone mode is the workspace view's bwrap. A file planted at a
--- protected name is moved to the quarantine and the result says so, as in
--- direct mode (the control: the same call there, and the quarantine
--- holding the clone run's file either way); so are a restart of the
--- chat's sandbox and what the proxy blocked.
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local sandbox = require("flemma_sandbox")
local quarantine = require("flemma_sandbox.run.quarantine")

describe("clone mode's notes", function()
  local p

  local function setup(workspace, network)
    sandbox.setup({
      backend = "bwrap",
      policy = { rw_paths = { "$CWD", "/tmp" }, network = network or false, allow_domains = {} },
      sandboxes = { workspace = workspace },
    })
  end

  project.each(
    "git init -q . && printf 'one\\n' > a.txt && git add -A && git -c user.name=u -c user.email=u@e commit -qm init",
    function(world)
      p = world
    end
  )

  --- Runs a command that plants .nvim.lua; returns its notes and what the
  --- quarantine got from that run.
  local function plant(chat)
    local bufnr = n.open_chat(p.dir .. "/" .. chat, { "@You:", "hi" })
    local before = #quarantine.list()
    local r = n.run_tool("bash", { command = "echo 'os.exit(7)' > .nvim.lua && echo planted" }, {
      bufnr = bufnr,
      approved = true,
    })
    assert.matches("planted", r.stdout or "")
    local moved = {}
    for i, q in ipairs(quarantine.list()) do
      if i > before then
        moved[#moved + 1] = q
      end
    end
    return table.concat(r.notes or {}, "\n"), moved
  end

  it("says that a planted .nvim.lua was moved to the quarantine", function()
    setup("clone")
    local notes, moved = plant("c.chat")
    assert.are.equal(1, #moved, "the check after the run moved it")
    assert.matches("%.nvim%.lua$", moved[1].from)
    assert.matches("%[sandbox%] [^\n]*%.nvim%.lua was created at a protected name and moved to the quarantine", notes)
    assert.is_nil(h.read(p.proj .. "/.nvim.lua"), "never in the user's tree")
    -- control: direct mode has always said it
    setup("direct")
    local direct_notes, direct_moved = plant("d.chat")
    assert.are.equal(1, #direct_moved)
    assert.matches("moved to the quarantine", direct_notes)
  end)

  it("says why the chat's sandbox was started again (a restarted record)", function()
    local function restarted_notes(chat, workspace)
      local function setup_network(network)
        sandbox.setup({
          backend = "bwrap",
          policy = { rw_paths = { "$CWD", "/tmp" }, network = network },
          sandboxes = { workspace = workspace },
        })
      end
      setup_network("host")
      local bufnr = n.open_chat(p.dir .. "/" .. chat, { "@You:", "hi" })
      local r = n.run_tool("bash", { command = "echo one" }, { bufnr = bufnr, approved = true })
      assert.matches("one", r.stdout or "", r.stderr)
      -- the chat's next call has the network off: its sandbox's key changed
      setup_network(false)
      r = n.run_tool("bash", { command = "echo two" }, { bufnr = bufnr, approved = true })
      assert.matches("two", r.stdout or "", r.stderr)
      return table.concat(r.notes or {}, "\n")
    end
    local note = "%[sandbox%] policy%.network: host %-> false: this chat's sandbox was started again"
    assert.matches(note, restarted_notes("c.chat", "clone"))
    -- control: direct mode has always said it
    assert.matches(note, restarted_notes("d.chat", "direct"))
  end)

  it("says what the allowlist proxy blocked (the run's records)", function()
    -- the proxy refuses a name allow_domains does not list before any
    -- lookup: no server, no network needed
    local function blocked_notes(chat)
      local bufnr = n.open_chat(p.dir .. "/" .. chat, { "@You:", "hi" })
      local r = n.run_tool("bash", { command = "git ls-remote http://blocked.test/r.git; echo tried" }, {
        bufnr = bufnr,
        approved = true,
      })
      assert.matches("tried", r.stdout or "")
      return table.concat(r.notes or {}, "\n")
    end
    setup("clone", "allowlist")
    assert.matches("%[sandbox%] blocked blocked%.test: blocked%.test is not in allow_domains", blocked_notes("c.chat"))
    -- control: direct mode has always said it
    setup("direct", "allowlist")
    assert.matches("%[sandbox%] blocked blocked%.test", blocked_notes("d.chat"))
  end)
end)
