--- The command line's failures: a sentence for the user on stderr and
--- exit code 2 (cli/init.lua catches it). Below every other cli module.
local M = {}

--- Fails the command with message (it names the argument or config key).
---@param message string
function M.fail(message)
  error({ cli_message = message, code = 2 }, 0)
end

return M
