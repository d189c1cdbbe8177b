rockspec_format = "3.0"
package = "flemma-sandbox"
version = "0.1.0-1"
source = {
  url = "git+https://github.com/flemma-sandbox/flemma-sandbox.git",
  tag = "v0.1.0",
}
description = {
  summary = "Bubblewrap sandbox for the tool calls LLM agents make from Neovim chat buffers",
  detailed = [[
Runs every tool command inside bubblewrap: the filesystem read-only, a short
allowlist of writable paths, no network unless allowed. Implements the Lua API
Flemma documents for require("flemma.sandbox").
]],
  homepage = "https://github.com/flemma-sandbox/flemma-sandbox",
  license = "MIT",
  labels = { "neovim", "sandbox", "bubblewrap" },
}
dependencies = {
  "lua == 5.1", -- LuaJIT or Lua 5.1: the C core uses the 5.1 API
}
build = {
  type = "make",
  build_variables = {
    CFLAGS = "$(CFLAGS)",
    LIBFLAG = "$(LIBFLAG)",
    LUA_INCDIR = "$(LUA_INCDIR)",
  },
  install_variables = {
    INST_LIBDIR = "$(LIBDIR)",
    INST_LUADIR = "$(LUADIR)",
    INST_BINDIR = "$(BINDIR)",
  },
  -- what a rock-aware plugin manager (rocks.nvim) puts on 'runtimepath':
  -- the command, the help and the health check's entry point
  copy_directories = { "doc", "plugin", "autoload", "syntax" },
}
