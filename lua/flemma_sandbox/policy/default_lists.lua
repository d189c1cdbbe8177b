--- The default lists of the policy, as data only (no requires), so that
--- config/defaults.lua, and with it setup() in an init.lua, loads without the
--- policy modules that use them (protect.lua, private.lua).
local M = {}

--- Hidden by default: credentials of common tools and browser profiles.
M.DENY_READ = {
  "~/.ssh",
  "~/.gnupg",
  "~/.aws",
  "~/.azure",
  "~/.config/gcloud",
  "~/.kube",
  "~/.docker/config.json",
  "~/.netrc",
  "~/.git-credentials",
  "~/.password-store",
  "~/.local/share/keyrings",
  "~/.mozilla",
  "~/.librewolf",
  "~/.config/google-chrome",
  "~/.config/chromium",
  "~/.config/BraveSoftware",
  "~/.config/microsoft-edge",
  "~/.config/vivaldi",
  "~/.config/opera",
  "~/snap/firefox",
  "~/.var/app/org.mozilla.firefox",
}

--- Read-only inside writable folders. A relative entry applies inside every
--- writable folder (except shared temp folders); the others where they lie
--- inside one. A trailing "/" marks a folder.
M.DENY_WRITE = {
  ".git/",
  ".gitmodules",
  ".gitconfig",
  ".envrc",
  ".vscode/",
  ".idea/",
  ".mcp.json",
  ".nvim.lua",
  ".nvimrc",
  ".exrc",
  ".lazy.lua",
  ".bashrc",
  ".bash_profile",
  ".zshrc",
  ".zprofile",
  ".profile",
  "$NVIM_CONFIG/",
  "$NVIM_DATA/",
  "$NVIM_STATE/",
  -- vim.loader keeps compiled Lua there, which Neovim runs on the next start
  "$NVIM_CACHE/",
  "$FLEMMA_SANDBOX_LIB/",
  "$FLEMMA_SANDBOX_LUA/",
  -- every folder on Neovim's runtimepath (plugins under development too)
  "$NVIM_RUNTIMEPATH/",
  -- in the home folder, by class: what a shell, a session, a language or a
  -- tool runs or reads as code later
  -- shells: start-up files and what they source
  "~/.bashrc",
  "~/.bash_profile",
  "~/.bash_login",
  "~/.bash_logout",
  "~/.bash_aliases",
  "~/.profile",
  "~/.inputrc",
  "~/.zshrc",
  "~/.zprofile",
  "~/.zshenv",
  "~/.zlogin",
  "~/.zlogout",
  "~/.config/fish/",
  "~/.config/nushell/",
  -- folders on PATH
  "~/bin/",
  "~/.local/bin/",
  "~/.cargo/bin/",
  "~/.cargo/env",
  "~/go/bin/",
  -- the session: autostart, systemd and dbus units, environment, desktop entries
  "~/.config/autostart/",
  "~/.config/systemd/",
  "~/.local/share/systemd/",
  "~/.local/share/dbus-1/",
  "~/.config/environment.d/",
  "~/.pam_environment",
  "~/.xprofile",
  "~/.xsession",
  "~/.xsessionrc",
  "~/.xinitrc",
  "~/.local/share/applications/",
  "~/.config/mimeapps.list",
  -- version control, editors, terminals, debuggers
  "~/.gitconfig",
  "~/.config/git/",
  "~/.vimrc",
  "~/.vim/",
  "~/.emacs",
  "~/.emacs.d/",
  "~/.vscode/",
  "~/.config/Code/",
  "~/.tmux.conf",
  "~/.config/tmux/",
  "~/.screenrc",
  "~/.gdbinit",
  "~/.config/gdb/",
  "~/.lldbinit",
  "~/.psqlrc",
  -- language and tool start-up: Python user site (.pth), IPython, pip, npm,
  -- cargo, docker CLI plugins, direnv, pre-commit's hook environments
  "~/.local/lib/",
  "~/.ipython/",
  "~/.config/pip/",
  "~/.pip/",
  "~/.pydistutils.cfg",
  "~/.npmrc",
  "~/.yarnrc",
  "~/.yarnrc.yml",
  "~/.cargo/config",
  "~/.cargo/config.toml",
  "~/.docker/",
  "~/.config/direnv/",
  "~/.local/share/direnv/",
  "~/.cache/pre-commit/",
  "~/.ssh/",
}

--- Secret files by purpose, hidden wherever a project holds them: the
--- environment files of dotenv and direnv, private keys and certificate
--- stores (SSH private keys, not their ".pub" halves: "!(...)" is GNU's
--- extended fnmatch), and the credential files of package registries,
--- databases, cloud and infrastructure tools.
M.SECRET_FILES = {
  ".env",
  ".env.*",
  ".envrc",
  "*.pem",
  "*.key",
  "id_rsa!(*.pub)",
  "id_dsa!(*.pub)",
  "id_ecdsa!(*.pub)",
  "id_ed25519!(*.pub)",
  "*.p12",
  "*.pfx",
  "*.jks",
  "*.keystore",
  "*.kdbx",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".pgpass",
  ".git-credentials",
  ".htpasswd",
  "credentials.json",
  "*.tfvars",
  "*.tfstate",
  "*.tfstate.backup",
}

--- Read-only in the private home by default: git's own configuration (the
--- credential stores are other files) and the usual toolchain folders, so
--- compilers, version managers and ~/.local/bin keep working.
M.HOME_ALLOW = {
  "~/.gitconfig",
  "~/.config/git/config",
  "~/.config/git/ignore",
  "~/.config/git/attributes",
  "~/.local/bin",
  "~/.local/lib",
  "~/.cargo/bin",
  "~/.cargo/registry",
  "~/.cargo/git",
  "~/.rustup",
  "~/go",
  "~/.nvm",
  "~/.pyenv",
  "~/.rbenv",
  "~/.volta",
  "~/.deno",
  "~/.bun/bin",
  "~/.asdf",
  "~/.sdkman/candidates",
  "~/.ghcup/bin",
  "~/.cabal/bin",
  "~/.nix-profile",
}

--- Writable in the private home by default: the caches package managers
--- and build tools fill (pip, go, npm, yarn under ~/.cache or ~/.npm) and
--- what programs keep as state. Each is an empty tmpfs of its own in every
--- command; the rest of the private home is read-only, so a write meant to
--- last (~/.bashrc, ~/.config, ~/.ssh) fails where the command can see it
--- fail, instead of landing in a folder that is thrown away.
M.HOME_WRITABLE = { "~/.cache", "~/.npm", "~/.local/state" }

return M
