--- A real terminal for specs: tmux runs a real Neovim (not headless, which
--- takes other code paths: floats, prompts, the first start), keys are
--- sent with send-keys and the screen is read with capture-pane.
local h = require("support.helpers")

local M = {}

---@class support.Tmux
---@field name string the tmux session
local Tmux = {}
Tmux.__index = Tmux

--- Whether tmux is installed (specs are pending without it).
---@return boolean
function M.available()
  return vim.fn.executable("tmux") == 1
end

--- A session name no other spec of this run uses.
---@param prefix string
---@return support.Tmux
function M.new(prefix)
  return setmetatable({ name = prefix .. "-" .. vim.fn.getpid() .. "-" .. (vim.loop.hrtime() % 1e6) }, Tmux)
end

--- Writes t/init.lua (this checkout on the runtimepath, no swap files,
--- then `lines`) and returns the shell command that runs Neovim with it on
--- `file` in t/proj, with HOME t/home and the chats' folders in
--- t/home/.cache.
---@param t string
---@param lines string[]
---@param file string
---@return string
function M.nvim_in_project(t, lines, file)
  local init = { "vim.opt.rtp:prepend(" .. string.format("%q", vim.fn.getcwd()) .. ")", "vim.opt.swapfile = false" }
  h.write(t .. "/init.lua", table.concat(vim.list_extend(init, lines), "\n") .. "\n")
  local q = h.shell_quote
  return "cd "
    .. q(t .. "/proj")
    .. " && env TERM=xterm-256color HOME="
    .. q(t .. "/home")
    .. " XDG_CACHE_HOME="
    .. q(t .. "/home/.cache")
    .. " nvim -i NONE -u "
    .. q(t .. "/init.lua")
    .. " "
    .. q(file)
end

--- Starts `command` (a shell command line) in a terminal width x height.
---@param command string
---@param width? integer
---@param height? integer
function Tmux:start(command, width, height)
  vim.fn.system({
    "tmux",
    "new-session",
    "-d",
    "-s",
    self.name,
    "-x",
    tostring(width or 80),
    "-y",
    tostring(height or 24),
    command,
  })
end

--- The screen, as text.
---@return string
function Tmux:screen()
  return vim.fn.system({ "tmux", "capture-pane", "-p", "-t", self.name })
end

--- Polls (at most `ms`, 10 s by default) until the screen holds `text`;
--- returns the screen.
---@param text string
---@param ms? integer
---@return string
function Tmux:wait_for(text, ms)
  local shown = ""
  for _ = 1, math.ceil((ms or 10000) / 100) do
    shown = self:screen()
    if shown:find(text, 1, true) then
      break
    end
    vim.loop.sleep(100)
  end
  return shown
end

--- Sends keys (tmux key names: "Enter", "Escape", "C-w") and lets the
--- terminal draw.
function Tmux:keys(...)
  vim.fn.system(vim.list_extend({ "tmux", "send-keys", "-t", self.name }, { ... }))
  vim.loop.sleep(150)
end

function Tmux:kill()
  vim.fn.system({ "tmux", "kill-session", "-t", self.name })
end

--- Kills, after each test of the describe block it is called in, the
--- session that session() returns (if any). Call it before the block's
--- other after_each (cli.each_world): busted runs them in order, so the
--- terminal ends before its world is removed.
---@param session fun(): support.Tmux?
function M.kill_after_each(session)
  require("busted").after_each(function()
    local t = session()
    if t then
      t:kill()
    end
  end)
end

--- Polls (at most 10 s) until `path` can be read; returns its text.
---@param path string
---@return string|nil
function M.wait_file(path)
  for _ = 1, 100 do
    local text = h.read(path)
    if text then
      return text
    end
    vim.loop.sleep(100)
  end
  return h.read(path)
end

return M
