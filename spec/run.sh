#!/usr/bin/env bash
# Runs the specs under LuaJIT with busted and prints one totals line,
# "N passed, M failed", as the last line.
#   spec/run.sh            all suites
#   spec/run.sh unit       only the unit specs (what `make sanitize` runs)
# Suites: unit (LuaJIT), exec and escape (LuaJIT, real bwrap), nvim (headless
# Neovim), flemma (headless Neovim 0.11+ with the real Flemma from FLEMMA_DIR;
# skipped, with one line saying so, when either is missing).
# SANITIZE=1 preloads the ASan runtime, since luajit itself is not built with it.
set -u
cd "$(dirname "$0")/.."

suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(unit exec escape nvim flemma)

busted_bin=$(command -v busted || true)
if [ -z "$busted_bin" ]; then
  echo "busted not found: install lua-busted (Debian) or busted (luarocks)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

preload=""
if [ "${SANITIZE:-}" = 1 ]; then
  preload="$(${CC:-cc} -print-file-name=libasan.so):$(${CC:-cc} -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
  export LSAN_OPTIONS="suppressions=$PWD/spec/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
fi

passed=0
failed=0
status=0
for suite in "${suites[@]}"; do
  if [ "$suite" = flemma ]; then
    if [ -z "${FLEMMA_DIR:-}" ] || [ ! -f "${FLEMMA_DIR}/lua/flemma/init.lua" ]; then
      echo "== spec/flemma skipped: FLEMMA_DIR does not name a Flemma checkout"
      continue
    fi
    if ! nvim --headless -u NONE -c 'if has("nvim-0.11") | qa! | else | cquit 1 | endif' </dev/null >/dev/null 2>&1; then
      echo "== spec/flemma skipped: Flemma needs Neovim 0.11+, this is $(nvim --version | head -n 1)"
      continue
    fi
  fi
  echo "== spec/$suite ($(id -un))"
  log=$(mktemp)
  if [ "$suite" = nvim ] || [ "$suite" = flemma ]; then
    FLEMMA_SANDBOX_SUITE="spec/$suite" FLEMMA_DIR="$( [ "$suite" = flemma ] && echo "${FLEMMA_DIR:-}" )" \
      nvim --headless -u NONE -i NONE -c "luafile spec/nvim_runner.lua" -c "cquit 1" 2>&1 </dev/null | tee "$log"
  else
    LD_PRELOAD="$preload" luajit "$busted_bin" -o utfTerminal "spec/$suite" 2>&1 | tee "$log"
  fi
  rc=${PIPESTATUS[0]}
  totals=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^[0-9]+ success' | tail -n 1)
  rm -f "$log"
  if [ -z "$totals" ]; then
    echo "spec/$suite: busted printed no totals (exit $rc)"
    failed=$((failed + 1))
    status=1
    continue
  fi
  s=$(echo "$totals" | sed -E 's/^([0-9]+) success.*/\1/')
  f=$(echo "$totals" | sed -E 's/.* ([0-9]+) failures?.*/\1/')
  e=$(echo "$totals" | sed -E 's/.* ([0-9]+) errors?.*/\1/')
  passed=$((passed + s))
  failed=$((failed + f + e))
  [ "$rc" -ne 0 ] && status=1
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] || status=1
exit $status
