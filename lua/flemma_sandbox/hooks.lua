--- What the layers above give the public API when Neovim starts, so its
--- arrows stay downward (ARCHITECTURE.md): the UI's subcommand runner
--- behind execute(), approve(), ..., and the network questions of
--- policy.network = "ask". Both stay unset outside Neovim (busted, a
--- script), where there is no UI to run and no event loop to ask in.
local M = {}

--- Runs a :FlemmaSandbox subcommand in the current buffer (set by
--- nvim/commands.lua when it defines the command).
---@type fun(sub: string)|nil
M.subcommand = nil

--- Gives a run whose network is "ask" the socket its proxy asks through
--- (set at start-up to questions/network.lua's attach()).
---@type fun(resolved: flemma_sandbox.ResolvedPolicy)|nil
M.network_asker = nil

return M
