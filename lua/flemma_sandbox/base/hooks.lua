--- What one part gives another it must not require (ARCHITECTURE.md), set
--- when Neovim starts: the UI's subcommand runner behind the API's
--- execute(), approve(), ..., the network questions of policy.network =
--- "ask", and what the standalone UI may ask of the Flemma bridge. All stay
--- unset outside Neovim (busted, a script), where there is no UI to run
--- and no event loop to ask in, and the bridge's without Flemma.
local M = {}

--- Runs a :FlemmaSandbox subcommand in the current buffer (set by
--- nvim/commands.lua when it defines the command).
---@type fun(sub: string)|nil
M.subcommand = nil

--- The socket through which the proxy of a run whose network is "ask"
--- asks (set at start-up to questions/network.lua's ask_socket(); a call's
--- plan keeps it, backends/call_plan.lua).
---@type (fun(resolved: flemma_sandbox.ResolvedPolicy): string|nil)|nil
M.network_asker = nil

---@class flemma_sandbox.BridgeFacade what :FlemmaSandbox and its status use under Flemma
---@field is_attached fun(): boolean
---@field view fun(bufnr: integer): flemma_sandbox.FlemmaView
---@field refusal fun(bufnr: integer): boolean, string[] untrusted, what the frontmatter loosens
---@field set_trust fun(bufnr: integer, trusted: boolean): boolean, string
---@field enable fun(bufnr: integer): boolean, string|nil Flemma's session switch on (after its backend check)
---@field disable fun()
---@field check_in_background fun(bufnr: integer)
---@field save_for_command_line fun()
---@field prestart_plan fun(bufnr: integer): table|nil, string|nil a chat's prestart under Flemma (nvim/prestart.lua)
---@field workspace_scope fun(bufnr: integer|nil): table|false|nil a Flemma chat's clone mode (flemma/clone_tools.lua)
---@field tools_in_place fun(): boolean whether Flemma's file tools are ours now (flemma/tool_overrides.lua)
---@field unguarded fun(): string[] the tools in Flemma's registry a call run by hand would reach unchecked
---@field calls_running fun(bufnr: integer): integer a chat's calls started, not ended (flemma/tool_overrides.lua)

--- Set by the Flemma bridge when Flemma is installed (flemma/init.lua).
---@type flemma_sandbox.BridgeFacade|nil
M.bridge = nil

return M
