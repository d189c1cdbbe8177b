--- What plugin/flemma_sandbox.lua does at start-up: help tags, the C core
--- (built in the background when a plugin manager did not run `make`),
--- :FlemmaSandbox, and then the Flemma bridge or the standalone runner.
local M = {}

--- Says something in one line after this turn (notice.lua), loaded
--- only when there is something to say.
local notice = {
  say = function(message, level)
    require("flemma_sandbox.base.notice").say(message, level)
  end,
}

--- The plugin's folder (the one holding lua/, plugin/, doc/, Makefile).
---@return string|nil
function M.root()
  local source = debug.getinfo(1, "S").source:match("^@(.*)/lua/flemma_sandbox/nvim/start%.lua$")
  return source and vim.fn.fnamemodify(source, ":p"):gsub("/$", "") or nil
end

--- Writes doc/tags where it is missing and the folder is writable, so
--- :help flemma-sandbox works on first start with any plugin manager: in
--- the folder of the plugin file that runs (a rock's folder on
--- 'runtimepath' holds plugin/ and doc/ while its Lua stays on
--- package.path) and in the plugin's own folder. Two file checks when the
--- tags are there: no search of the runtimepath at start-up.
---@param folders (string|nil)[]
function M.ensure_helptags(folders)
  local seen = {}
  -- pairs, not ipairs: either folder may be nil
  for _, folder in pairs(folders) do
    local doc = folder and (folder .. "/doc")
    if doc and not seen[doc] then
      seen[doc] = true
      if vim.fn.filereadable(doc .. "/tags") == 0 and vim.fn.filereadable(doc .. "/flemma-sandbox.txt") == 1 then
        if vim.fn.filewritable(doc) == 2 then
          pcall(vim.cmd, "silent! helptags " .. vim.fn.fnameescape(doc))
        end
      end
    end
  end
end

--- Whether the C core loads.
---@return boolean ok, string|nil err
function M.core_loads()
  local ok, err = pcall(require, "flemma_sandbox.core")
  return ok, (not ok) and tostring(err) or nil
end

--- Whether the C core is there, without loading it (it loads at first
--- use): built in the plugin's folder, or installed on the runtimepath
--- or an absolute entry of package.cpath (a rock); never a file in the
--- working directory.
---@param root string|nil
---@return boolean
function M.core_present(root)
  if root and vim.fn.filereadable(root .. "/lua/flemma_sandbox/core.so") == 1 then
    return true
  end
  -- installed places only: package.cpath's "./?.so" is the project
  return require("flemma_sandbox.base.installed").present("flemma_sandbox.core")
end

local building = false

--- Builds the C core with `make` in the background (never blocking the
--- editor), then calls done(ok, message).
---@param root string
---@param done fun(ok: boolean, message: string)
function M.build(root, done)
  if building then
    return
  end
  for _, program in ipairs({ "make", "cc" }) do
    if vim.fn.executable(program) ~= 1 then
      local why = "the C core is not built and `" .. program .. "` is missing"
      return done(false, why .. "; install gcc and make, then restart Neovim")
    end
  end
  building = true
  local job = require("flemma_sandbox.base.process").spawn({ "make", "-C", root }, {}, function(result)
    vim.schedule(function()
      building = false
      if result.code == 0 then
        return done(true, "built the C core in " .. root)
      end
      local output = {}
      for line in (result.stdout .. "\n" .. result.stderr):gmatch("[^\n]+") do
        output[#output + 1] = line
      end
      local tail = table.concat(vim.list_slice(output, math.max(1, #output - 4)), "\n")
      done(false, "building the C core failed (make -C " .. root .. "):\n" .. tail)
    end)
  end)
  if not job then
    building = false
    done(false, "could not start make; run `make` in " .. root)
  end
end

--- An init.lua that called setup() before the core was built got the
--- stand-in (before_core.lua): its calls are applied now, and it forwards
--- to the real module from here on.
local function replace_stand_in()
  local waiting = package.loaded["flemma_sandbox"]
  if type(waiting) ~= "table" or waiting.before_core ~= true then
    return
  end
  package.loaded["flemma_sandbox"] = nil
  for _, err in ipairs(waiting.forward_to(require("flemma_sandbox"))) do
    notice.say("setup(): " .. err, vim.log.levels.ERROR)
  end
end

--- Defines the command and hooks, once the core loads.
function M.finish()
  replace_stand_in()
  -- the public API's network questions (loaded at the first such run)
  require("flemma_sandbox.base.hooks").network_asker = function(resolved)
    return require("flemma_sandbox.questions.network").ask_socket(resolved)
  end
  require("flemma_sandbox.nvim.commands").define()
  local bridge = require("flemma_sandbox.flemma")
  if not bridge.attach() then
    require("flemma_sandbox.nvim.autocmds").setup()
  end
  require("flemma_sandbox.nvim.autocmds").setup_common()
end

--- Without a core, :FlemmaSandbox says what is going on instead of raising.
---@param message string
local function define_placeholder_command(message)
  vim.api.nvim_create_user_command("FlemmaSandbox", function()
    notice.say(message, vim.log.levels.WARN)
  end, { nargs = "?", desc = "flemma-sandbox (C core not built yet)" })
end

--- Start-up: cheap (file checks, a command, autocmds); nothing loads the
--- policy, probes bwrap or walks a tree until first use.
---@param plugin_dir string|nil the folder of the plugin file that runs
function M.run(plugin_dir)
  local root = M.root()
  M.ensure_helptags({ plugin_dir, root })
  if M.core_present(root) then
    return M.finish()
  end
  if not root or vim.fn.filereadable(root .. "/Makefile") == 0 then
    local _, err = M.core_loads()
    define_placeholder_command("the C core is not installed: " .. tostring(err))
    return
  end
  define_placeholder_command("the C core is being built in " .. root)
  notice.say("building the C core in the background (make)", vim.log.levels.INFO)
  M.build(root, function(ok, message)
    vim.schedule(function()
      if ok and M.core_loads() then
        notice.say(message, vim.log.levels.INFO)
        M.finish()
      else
        define_placeholder_command(message)
        notice.say(message, vim.log.levels.ERROR)
      end
    end)
  end)
end

return M
