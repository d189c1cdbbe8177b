--- nvim/review_ui.lua (run in Neovim, real bwrap and git, clone mode):
--- :FlemmaSandbox diff, apply and discard as the user sees them: the
--- status line of a chat's copy, the quickfix list of what the copy
--- changed, the change brought into the user's tree, the copy thrown
--- away; refused while the chat's calls run or in direct mode.
local clone_mode = require("flemma_sandbox.api.clone_mode")
local h = require("support.helpers")
local n = require("support.nvim")
local project = require("support.project")
local review_ui = require("flemma_sandbox.nvim.review_ui")
local sandbox = require("flemma_sandbox")

describe("nvim.review_ui", function()
  local p, notes, restore_notify

  --- Waits for the next notice; its text.
  local function next_note()
    local before = #notes
    assert.is_true(vim.wait(30000, function()
      return #notes > before
    end, 20))
    return notes[#notes].msg
  end

  local function bash(bufnr, command)
    local r = n.run_tool("bash", { command = command }, { bufnr = bufnr, approved = true })
    assert.are.equal(0, r.exit_code, vim.inspect(r))
  end

  project.each(
    "git init -q . && printf 'one\\n' > a.txt && git add -A && git -c user.name=u -c user.email=u@e commit -qm init",
    function(world)
      p = world
      sandbox.setup({
        backend = "bwrap",
        policy = { rw_paths = { "$CWD", "/tmp" }, network = false },
        sandboxes = { workspace = "clone" },
      })
    end
  )

  before_each(function()
    notes, restore_notify = n.capture_notify()
  end)

  after_each(function()
    restore_notify()
  end)

  it("says in one line what a chat works on, and that a buffer that is no chat has no copy", function()
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    assert.matches(
      "^clone: this chat works on its own copy of .*proj %(made at the next call%)",
      review_ui.summary(bufnr)
    )
    bash(bufnr, "true")
    assert.matches("^clone: this chat works on its own copy of .*proj %(:FlemmaSandbox", review_ui.summary(bufnr))
    vim.cmd("enew")
    assert.matches("this buffer is no chat", review_ui.summary(vim.api.nvim_get_current_buf()))
  end)

  it("lists the copy's change, applies it to the user's tree, and discards the copy", function()
    local bufnr = n.open_chat(p.proj .. "/a.chat", { "@You:", "hi" })
    bash(bufnr, "printf 'two\\n' > a.txt")
    assert.are.equal("one\n", h.read(p.proj .. "/a.txt"), "control: the call wrote the copy only")
    assert.is_true(project.synced())

    -- no list of an earlier spec's: the one diff makes is waited for
    vim.fn.setqflist({}, "f")
    review_ui.diff(bufnr)
    assert.is_true(vim.wait(30000, function()
      return vim.fn.getqflist({ title = 0 }).title == "flemma-sandbox: the chat's copy, not applied"
    end, 20))
    local items = vim.fn.getqflist()
    assert.are.equal(1, #items)
    assert.are.equal(p.proj .. "/a.txt", vim.fn.fnamemodify(vim.fn.bufname(items[1].bufnr), ":p"))
    assert.matches("^M  changed in the copy", items[1].text)

    review_ui.apply(bufnr, true)
    assert.matches("tool calls of this chat are running", next_note())
    assert.are.equal("one\n", h.read(p.proj .. "/a.txt"), "nothing applied while calls run")

    review_ui.apply(bufnr, false)
    assert.matches("^flemma%-sandbox: applied 1 file%(s%); 0 conflict%(s%), 0 not brought in", next_note())
    assert.are.equal("two\n", h.read(p.proj .. "/a.txt"))

    local clone = clone_mode.specs(bufnr)[1].clone
    assert.are.equal(1, vim.fn.isdirectory(clone))
    review_ui.discard(bufnr, false, true)
    assert.matches("^flemma%-sandbox: discarded the chat's copy", next_note())
    assert.are.equal(0, vim.fn.isdirectory(clone))
    assert.are.equal("two\n", h.read(p.proj .. "/a.txt"))
  end)

  it("has nothing to apply or discard for a chat in direct mode", function()
    sandbox.setup({ backend = "bwrap", policy = { rw_paths = { "$CWD", "/tmp" }, network = false } })
    local bufnr = n.open_chat(p.proj .. "/b.chat", { "@You:", "hi" })
    review_ui.apply(bufnr, false)
    assert.matches("nothing to apply: this chat works on the real", next_note())
    review_ui.discard(bufnr, false, true)
    assert.matches("no copy to discard: this chat works on the real", next_note())
  end)
end)
