--- flemma-sandbox log NAME [N]: the timeline of the chat (or command line
--- sandbox) NAME of this project, as :FlemmaSandbox log shows it
--- (nvim/log.lua); with N, call N's diff.
local cli = require("flemma_sandbox.cli.failure")
local sandbox = require("flemma_sandbox.cli.sandbox")
local terminal_text = require("flemma_sandbox.cli.terminal_text")

local M = {}

---@param args string[]
---@return integer
function M.log(args)
  local words = {}
  for _, a in ipairs(args) do
    if a:sub(1, 1) == "-" then
      cli.fail("log: unknown option '" .. a .. "' (flemma-sandbox help)")
    end
    words[#words + 1] = a
  end
  if #words == 0 then
    cli.fail("log: which sandbox? flemma-sandbox log NAME (flemma-sandbox list)")
  elseif #words > 2 then
    cli.fail("log: unexpected argument '" .. words[3] .. "' (flemma-sandbox help)")
  end
  local n = words[2] and tonumber(words[2])
  if words[2] and (not n or n < 1 or n % 1 ~= 0) then
    cli.fail("log: N must be a call's number (flemma-sandbox log NAME lists them), not '" .. words[2] .. "'")
  end
  local bufnr, info = sandbox.open(words[1], false)
  if vim.fn.isdirectory(info.dir) == 0 then
    cli.fail("log: no sandbox " .. words[1] .. " in " .. info.project .. " (flemma-sandbox list)")
  end
  local log = require("flemma_sandbox.nvim.log")
  local lines, why
  if n then
    lines, why = log.diff_lines(bufnr, n)
  else
    lines, why = log.lines(bufnr)
  end
  if not lines then
    io.stderr:write("flemma-sandbox: " .. tostring(why) .. "\n")
    return 1
  end
  -- paths and commands the model chose: to a terminal with their controls shown, not run
  io.stdout:write(terminal_text.for_fd(1, table.concat(lines, "\n") .. "\n"))
  return 0
end

return M
