--- flemma/notes.lua (run in Neovim, Flemma's config module stood in for:
--- Flemma's real bash calls are spec/flemma/notes_spec's): which Flemma
--- keys a restart's setting is read from, the `[sandbox]` notes of a call's
--- runs, and a result with its notes after its text (a structured output
--- left alone), delivered once every run's end is taken.
local notes = require("flemma_sandbox.flemma.notes")
local command_notes = require("flemma_sandbox.tools.command_notes")

describe("flemma.notes", function()
  describe("set_by_frontmatter", function()
    local saved, asked

    before_each(function()
      saved = package.loaded["flemma.config"]
      asked = {}
      package.loaded["flemma.config"] = {
        inspect = function(bufnr, key)
          asked[#asked + 1] = key
          assert.are.equal(5, bufnr)
          local layers = {
            ["sandbox.policy.network"] = "DF",
            ["sandbox.backends.flemma_sandbox.limits.cpu_seconds"] = "F",
            ["sandbox.backends.flemma_sandbox.seccomp"] = "D",
            ["sandbox.backends.flemma_sandbox.sandboxes.name"] = "SF",
          }
          return layers[key] and { layer = layers[key] } or nil
        end,
      }
    end)

    after_each(function()
      package.loaded["flemma.config"] = saved
    end)

    it("is nil without a buffer number", function()
      assert.is_nil(notes.set_by_frontmatter(nil))
      assert.is_nil(notes.set_by_frontmatter("5"))
    end)

    it("reads Flemma's own policy keys and the backend's, true when the frontmatter layer set one", function()
      local set = notes.set_by_frontmatter(5)
      assert.is_true(set("policy.network"))
      assert.are.same({ "sandbox.policy.network" }, asked)
      assert.is_true(set("policy.limits.cpu_seconds"))
      assert.is_true(set("sandboxes.name"))
      assert.is_false(set("policy.seccomp"), "set by the defaults, not the frontmatter")
      assert.is_false(set("policy.allow_privileged"))
    end)

    it("asks nothing for a setting Flemma's config does not give as it is", function()
      local set = notes.set_by_frontmatter(5)
      asked = {}
      assert.is_false(set("policy.deny_paths"))
      assert.is_false(set("policy.home_allow"))
      assert.are.same({}, asked)
    end)

    it("reads policy.network from Flemma's key and from the backend's", function()
      package.loaded["flemma.config"].inspect = function(_, key)
        asked[#asked + 1] = key
        return key == "sandbox.backends.flemma_sandbox.network" and { layer = "F" } or { layer = "D" }
      end
      assert.is_true(notes.set_by_frontmatter(5)("policy.network"))
      assert.are.same({ "sandbox.policy.network", "sandbox.backends.flemma_sandbox.network" }, asked)
    end)
  end)

  describe("compose", function()
    it("says what the check after a killed helper said, without the program's name", function()
      local run = {
        stderr = "flemma-sandbox-tool: the run was stopped\nflemma-sandbox: second line\n",
        records = {},
        quarantined = {},
      }
      assert.are.same(
        { "[sandbox] the run was stopped", "[sandbox] second line" },
        notes.compose({ run }, "output", { bufnr = 1, cwd = "/" })
      )
    end)

    it("adds the git hint for a git write the read-only repository refused", function()
      -- the path it names is looked up in the policy Flemma gives: none here
      local saved = package.loaded["flemma.sandbox"]
      package.loaded["flemma.sandbox"] = {
        resolve_config = function()
          error("not set up")
        end,
      }
      local text = "fatal: Unable to create '/p/.git/index.lock': Read-only file system"
      local got = notes.compose({}, text, { bufnr = 1, cwd = "/p" })
      package.loaded["flemma.sandbox"] = saved
      assert.are.same({ command_notes.GIT_HINT }, got)
      assert.are.same({}, notes.compose({}, "all fine", { bufnr = 1, cwd = "/p" }))
    end)
  end)

  describe("runs", function()
    --- finish's callback arguments, waited for.
    local function finish(runs, result)
      local got
      runs.finish(result, { bufnr = 1, cwd = "/" }, function(r, list)
        got = { r, list }
      end)
      vim.wait(2000, function()
        return got ~= nil
      end, 10)
      return got
    end

    it("gives the result back at once, as it is, without runs", function()
      local result = { output = "x" }
      local got = finish(notes.runs(), result)
      assert.are.equal(result, got[1])
      assert.are.same({}, got[2])
    end)

    it("takes each run's end, then gives the result back with its notes after the text", function()
      local runs = notes.runs()
      runs.add(nil) -- a wrap without records: its end is empty
      runs.add(nil)
      local real = notes.compose
      notes.compose = function(list)
        assert.are.equal(2, #list)
        return { "[sandbox] one", "[sandbox] two" }
      end
      local got = finish(runs, { output = "text", extra = 1 })
      notes.compose = real
      assert.are.same({ output = "text\n\n[sandbox] one\n[sandbox] two", extra = 1 }, got[1])
      assert.are.equal(2, #got[2])
      -- the list is handed over: a second finish has no runs
      local result = { output = "again" }
      assert.are.equal(result, finish(runs, result)[1])
    end)

    it("puts the notes after an error, alone when there is no text, and leaves a structured output", function()
      local real = notes.compose
      notes.compose = function()
        return { "[sandbox] n" }
      end
      local function with(result)
        local runs = notes.runs()
        runs.add(nil)
        return finish(runs, result)[1]
      end
      assert.are.same({ error = "boom\n\n[sandbox] n" }, with({ error = "boom" }))
      assert.are.same({ output = "[sandbox] n" }, with({ output = "" }))
      assert.are.same({ output = "[sandbox] n" }, with({}))
      local structured = { output = { kind = "image" } }
      assert.are.equal(structured, with(structured))
      notes.compose = real
    end)

    it("says the notes failed instead of losing the result", function()
      local real = notes.compose
      notes.compose = function()
        error("broken", 0)
      end
      local runs = notes.runs()
      runs.add(nil)
      local got = finish(runs, { output = "text" })
      notes.compose = real
      assert.are.same({ output = "text\n\n[sandbox] notes failed: broken" }, got[1])
    end)
  end)
end)
