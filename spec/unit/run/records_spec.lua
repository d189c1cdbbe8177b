--- run/records.lua: the records of a run parsed once, and whether a failed
--- run lost a race with the host, decided from its records and exit status
--- alone (never from the words on stderr).
local records = require("flemma_sandbox.run.records")

describe("run.records", function()
  local lost = { type = "setup_failed", by = "bwrap", error = "bwrap exited 1 before the command started" }

  it("parses JSON lines, leaving out a line cut short", function()
    local recs = records.parse('{"type":"setup_failed","by":"bwrap","error":"e"}\n{"type":"mo')
    assert.are.same({ { type = "setup_failed", by = "bwrap", error = "e" } }, recs)
  end)

  it("takes a run for a lost race only by the host side's record", function()
    assert.is_true(records.lost_race(1, { lost }))
    assert.is_true(records.lost_race(126, { { type = "restarted", why = "x" }, lost }))
    -- control: a setup that failed on our side (the plan, the proxy) is not one
    assert.is_false(records.lost_race(126, { { type = "setup_failed", error = "cannot prepare the run" } }))
    assert.is_false(records.lost_race(1, {}))
    assert.is_false(records.lost_race(1, nil))
    assert.is_false(records.lost_race(0, { lost }))
  end)

  it("keeps the first start's records of earlier runs after a retry", function()
    local earlier = { type = "moved", from = "/p/.nvim.lua", to = "/q/.nvim.lua", run = "earlier" }
    local this = { type = "moved", from = "/p/.envrc", to = "/q/.envrc", run = "this" }
    local again = { type = "reached", host = "example.org", port = "443" }
    assert.are.same({ earlier, again }, records.after_retry({ earlier, this, lost }, { again }))
    assert.are.same({ again }, records.after_retry(nil, { again }))
    assert.are.same({}, records.after_retry({ lost }, nil))
  end)
end)
