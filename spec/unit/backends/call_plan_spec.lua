--- A call's plan (backends/call_plan.lua): made once from the resolved
--- policy, which it leaves as it is; and the wrap path (backends/init.lua
--- wrap_resolved): the backend's prepare before its wrap, both given that
--- one plan.
local call_plan = require("flemma_sandbox.backends.call_plan")
local hooks = require("flemma_sandbox.base.hooks")
local registry = require("flemma_sandbox.backends")
local util = require("flemma_sandbox.base.util")

local function resolved_policy()
  return {
    rw_paths = { "/p" },
    ro_paths = { "/p/.git" },
    protected = { { path = "/p/.git", rule = "a git folder" } },
    pins = {},
    project_roots = { "/p" },
    network_mode = "off",
    env = { PATH = "/usr/bin", HOME = "/home/u" },
  }
end

local function config(max_timeout_ms)
  return {
    tools = { max_timeout_ms = max_timeout_ms },
    sandboxes = { workspace = "direct", live = false, max_running = 2 },
  }
end

describe("call_plan.make", function()
  it("adds the call's fields and leaves the resolved policy as it was", function()
    local resolved = resolved_policy()
    local before = util.deepcopy(resolved)
    local cfg = config(30000)
    local plan = call_plan.make(resolved, cfg, { env = { TERM = "dumb" } })
    assert.are.same(before, resolved)
    assert.are.equal(resolved, plan.policy)
    assert.are.same({ PATH = "/usr/bin", HOME = "/home/u", TERM = "dumb" }, plan.env)
    assert.are.equal(30000, plan.time_limit_ms)
    assert.are.equal(cfg.sandboxes, plan.sandboxes)
    assert.is_nil(plan.clone)
    assert.are.same({}, plan.workspaces)
    assert.are.same({}, plan.own_git)
    -- the policy's fields under their own names, the same tables
    assert.are.equal(resolved.rw_paths, plan.rw_paths)
    assert.are.equal(resolved.ro_paths, plan.ro_paths)
  end)

  it("has no time cap for time_limit = false and the policy's env without opts.env", function()
    local resolved = resolved_policy()
    local plan = call_plan.make(resolved, config(30000), { time_limit = false })
    assert.is_nil(plan.time_limit_ms)
    assert.are.equal(resolved.env, plan.env)
  end)

  it("refuses a field set after it was made", function()
    local plan = call_plan.make(resolved_policy(), config(1000), nil)
    assert.has_error(function()
      plan.stopped_chat = "other"
    end)
    assert.is_nil(rawget(plan, "stopped_chat"))
  end)

  it("keeps the ask socket in the plan, not in the policy", function()
    local saved = hooks.network_asker
    hooks.network_asker = function()
      return "/run/ask.sock"
    end
    local resolved = resolved_policy()
    resolved.network_mode = "ask"
    local ok, plan = pcall(call_plan.make, resolved, config(1000), nil)
    hooks.network_asker = saved
    assert.is_true(ok, tostring(plan))
    assert.are.equal("/run/ask.sock", plan.ask_socket)
    assert.is_nil(resolved.ask_socket)
  end)
end)

describe("wrap_resolved", function()
  it("prepares, then wraps, with the one plan; the policy as it was", function()
    local resolved = resolved_policy()
    local before = util.deepcopy(resolved)
    local steps = {}
    local backend = {
      prepare = function(plan, backend_config)
        steps[#steps + 1] = { "prepare", plan, backend_config }
        return {}, nil
      end,
      wrap = function(plan, backend_config, inner)
        steps[#steps + 1] = { "wrap", plan, backend_config }
        return inner, nil, { argv = inner }
      end,
    }
    local bc = { path = "bwrap" }
    local argv, err, record = registry.wrap_resolved(
      backend,
      resolved,
      config(5000),
      bc,
      { "true" },
      { env = { X = "1" } }
    )
    assert.is_nil(err)
    assert.are.same({ "true" }, argv)
    assert.are.same({ argv = { "true" } }, record)
    assert.are.equal(2, #steps)
    assert.are.equal("prepare", steps[1][1])
    assert.are.equal("wrap", steps[2][1])
    assert.are.equal(steps[1][2], steps[2][2])
    assert.are.equal(bc, steps[2][3])
    assert.are.equal(5000, steps[2][2].time_limit_ms)
    assert.are.equal("1", steps[2][2].env.X)
    assert.are.same(before, resolved)
  end)

  it("does not wrap when the preparation fails", function()
    local wrapped = false
    local backend = {
      prepare = function()
        return nil, "no folder"
      end,
      wrap = function(_, _, inner)
        wrapped = true
        return inner
      end,
    }
    local argv, err = registry.wrap_resolved(backend, resolved_policy(), config(5000), {}, { "true" }, nil)
    assert.is_nil(argv)
    assert.are.equal("no folder", err)
    assert.is_false(wrapped)
  end)

  it("wraps with a backend that has no prepare", function()
    local backend = {
      wrap = function(plan, _, inner)
        return { "box", tostring(plan.time_limit_ms), inner[1] }
      end,
    }
    assert.are.same(
      { "box", "5000", "true" },
      (registry.wrap_resolved(backend, resolved_policy(), config(5000), {}, { "true" }, nil))
    )
  end)
end)
