--- Loaded by busted before any spec (see .busted).
-- Under `make sanitize` the ASan runtime is preloaded into luajit; the
-- programs the specs start (sh, bwrap, ...) must not inherit it.
if os.getenv("LD_PRELOAD") then
  local ffi = require("ffi")
  ffi.cdef("int unsetenv(const char *name);")
  ffi.C.unsetenv("LD_PRELOAD")
end
