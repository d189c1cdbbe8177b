-- Run inside an installed Neovim (nvim -c "luafile spec/support/install_check.lua"):
-- what a user of any install path checks first: the command, the help (its
-- tags), the health check, and a command wrapped and run in the sandbox.
-- Writes "key=value" lines to $T/result and quits.
local t = os.getenv("T")
local out = {}
out[#out + 1] = "command=" .. vim.fn.exists(":FlemmaSandbox")
local help_ok, help_err = pcall(vim.cmd, "noautocmd help flemma-sandbox")
out[#out + 1] = "help=" .. (help_ok and vim.fn.expand("%:t") or tostring(help_err))
vim.cmd("silent! only")
local health_ok, health_err = pcall(vim.cmd, "checkhealth flemma_sandbox")
local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
out[#out + 1] = "health=" .. tostring(health_ok) .. " " .. tostring(health_err or "")
out[#out + 1] = "health_found=" .. tostring(text:find("flemma-sandbox: backend", 1, true) ~= nil)
local inner = { "sh", "-c", "echo ran; touch " .. t .. "/outside-wrapped" }
local argv = assert(require("flemma_sandbox").wrap_command(inner, 0))
out[#out + 1] = "output=" .. vim.fn.system(argv):gsub("%s+$", "")
local f = assert(io.open(t .. "/result", "w"))
f:write(table.concat(out, "\n") .. "\n")
f:close()
vim.cmd("qa!")
