--- backends/check_plan.lua (run in Neovim): a resolved policy's checks as
--- one typed plan, and that plan as the check file's words, the format
--- csrc/exec/check_plan.c reads (KEY and VALUE, two by two).
local check_plan = require("flemma_sandbox.backends.check_plan")

--- The words as "KEY VALUE" lines.
local function pairs_of(words)
  local out = {}
  for i = 1, #words, 2 do
    out[#out + 1] = words[i] .. " " .. words[i + 1]
  end
  return out
end

--- A policy with one of each field the plan reads.
local function policy()
  return {
    watched = { "/p/.envrc", { path = "/p/.mcp.json" } },
    links = { { path = "/p/l", target = "/p/t" }, { path = "/p/dangling" } },
    projects = { "/p" },
    own_git = { "/p/.git" },
    ro_paths = { "/p/.git" },
    deny_paths = { "/p/secret" },
    allow_privileged = false,
    project_roots = { "/p" },
    allow_sockets = { "/run/s" },
    private_paths = { "/tmp" },
    private = { writable = { "/tmp/w" } },
    persist_paths = { "/home/u/.cache" },
    persist_sources = { "/c/home/.cache" },
    rw_paths = { "/p", "/tmp", "/tmp/w", "/home/u/.cache" },
    show_paths = { "/usr/local" },
    secret_scan = { roots = { "/p" }, patterns = { ".env*" }, depth = 4 },
  }
end

describe("backends.check_plan", function()
  it("makes one typed plan of a policy", function()
    local plan = check_plan.of_policy(policy(), "/q", "/i")
    assert.are.same({ "/p/.envrc", "/p/.mcp.json" }, plan.watch)
    -- a symlink without a target is not checked
    assert.are.same({ { path = "/p/l", target = "/p/t" } }, plan.links)
    assert.are.same({ "/p", "/run/s" }, plan.open)
    assert.are.same({ "/tmp", "/home/u/.cache" }, plan.private)
    -- the private /tmp, what is part of it and a chat's own folders are
    -- not the host's disk; the chat's folders behind them are
    assert.are.same({ "/p", "/c/home/.cache" }, plan.disk)
    assert.are.same({ "/p", "/tmp", "/tmp/w", "/usr/local" }, plan.visible)
    assert.are.same({ "/p" }, plan.scan.roots)
    assert.are.equal(4, plan.scan.depth)
    assert.is_true(#plan.scan.skip > 0)
  end)

  it("writes the plan as the check file's words, in one order", function()
    local words, bytes = check_plan.words(check_plan.of_policy(policy(), "/q", "/i"))
    local lines = pairs_of(words)
    assert.are.same({ "quarantine /q", "index /i", "watch /p/.envrc", "watch /p/.mcp.json", "link /p/l" }, {
      unpack(lines, 1, 5),
    })
    local text = table.concat(lines, "\n") .. "\n"
    assert.matches(
      "\ntarget /p/t\nrepos /p\nown /p/.git\nro /p/.git\nhidden /p/secret\nsockets 1\nprivileged 0\n",
      text
    )
    assert.matches("\nsecrets /p\npattern %.env%*\nskip ", text)
    assert.matches("\ndepth 4\n$", text)
    local sum = 0
    for _, w in ipairs(words) do
      sum = sum + #w + 1
    end
    assert.are.equal(sum, bytes)
  end)

  it("reads each list when one before it is missing", function()
    local p = policy()
    p.project_roots, p.private_paths, p.persist_paths = nil, nil, nil
    local plan = check_plan.of_policy(p, "/q", "/i")
    assert.are.same({ "/run/s" }, plan.open)
    assert.are.same({}, plan.private)
    -- private.writable (/tmp/w) still is not the disk
    assert.are.same({ "/p", "/tmp", "/home/u/.cache", "/c/home/.cache" }, plan.disk)
  end)

  it("has no secret scan without roots", function()
    local p = policy()
    p.secret_scan = { roots = {}, patterns = { ".env*" }, depth = 4 }
    local plan = check_plan.of_policy(p, "/q", "/i")
    assert.is_nil(plan.scan)
    assert.not_matches("secrets", table.concat(check_plan.words(plan), " "))
  end)

  it("keeps the last words while the policy's fields are the same", function()
    local p = policy()
    local first = check_plan.words_for(p, "/q", "/i")
    assert.are.equal(first, (check_plan.words_for(p, "/q", "/i")))
    -- another own_git table is another plan (the cache once left it out)
    local q = policy()
    for k, v in pairs(p) do
      q[k] = v
    end
    q.own_git = { "/p/other/.git" }
    local again = check_plan.words_for(q, "/q", "/i")
    assert.are_not.equal(first, again)
    assert.matches("own /p/other/%.git", table.concat(pairs_of(again), "\n"))
    -- a list made anew with the same items (clone mode's own_git) is the same
    q.own_git = { "/p/other/.git" }
    assert.are.equal(again, (check_plan.words_for(q, "/q", "/i")))
    -- and so is a new empty one (direct mode's own_git); another secret
    -- scan table is another plan
    q.own_git = {}
    local empty = check_plan.words_for(q, "/q", "/i")
    q.own_git = {}
    assert.are.equal(empty, (check_plan.words_for(q, "/q", "/i")))
    q.secret_scan = { roots = { "/p" }, patterns = { ".env*" }, depth = 2 }
    assert.matches("\ndepth 2$", table.concat(pairs_of(check_plan.words_for(q, "/q", "/i")), "\n"))
  end)
end)
