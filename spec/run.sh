#!/usr/bin/env bash
# Runs the specs under LuaJIT with busted and prints one totals line,
# "N passed, M failed", as the last line.
#   spec/run.sh            all suites
#   spec/run.sh unit       only the unit specs (what `make sanitize` runs)
# Suites: unit (LuaJIT), exec and escape (LuaJIT, real bwrap), escape-warm
# (the escape suite's attacks in one chat's live sandbox), nvim (headless
# Neovim), install (first start without a build, luarocks make and pack, and
# lazy.nvim from LAZY_DIR on Neovim 0.8+), flemma (headless Neovim 0.11+ with
# the real Flemma from FLEMMA_DIR), flemma-own (Flemma's own specs with the
# bridge, plenary from PLENARY_DIR). What needs a checkout that is not there
# is skipped with one line saying so.
# SANITIZE=1 preloads the ASan runtime, since luajit itself is not built with it.
set -u
cd "$(dirname "$0")/.."

suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(unit exec escape escape-warm nvim cli install flemma flemma-own)

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

# our state (check files, the quarantine, trust records) and the chats' own
# folders (the cache) in folders of the run's own, never the real ones of
# whoever runs the specs
XDG_STATE_HOME=$(mktemp -d /tmp/flemma-spec-state.XXXXXX)
XDG_CACHE_HOME=$(mktemp -d /tmp/flemma-spec-cache.XXXXXX)
export XDG_STATE_HOME XDG_CACHE_HOME
trap 'rm -rf "$XDG_STATE_HOME" "$XDG_CACHE_HOME"' EXIT

# Flemma's own sandbox and tool specs (plenary, from FLEMMA_DIR and
# PLENARY_DIR) with flemma-sandbox's bridge registered: they must still pass.
run_flemma_own() {
  if [ -z "${FLEMMA_DIR:-}" ] || [ -z "${PLENARY_DIR:-}" ]; then
    echo "== Flemma's own specs skipped: FLEMMA_DIR and PLENARY_DIR name no checkouts"
    return
  fi
  echo "== Flemma's own sandbox and tool specs, bridge registered ($(id -un))"
  local d log
  d=$(mktemp -d) log=$(mktemp)
  # plenary finds regular files only: copies (test time only, never kept),
  # laid out as in Flemma's tests/ so "../fixtures" still resolves
  mkdir "$d/flemma"
  cp "$FLEMMA_DIR"/tests/flemma/{sandbox_spec.lua,sandbox_*_spec.lua,tool_execution_spec.lua,tool_approval_spec.lua,tools_*_spec.lua} "$d/flemma/"
  cp -r "$FLEMMA_DIR/tests/fixtures" "$d/fixtures"
  # a checkout without git-lfs holds a pointer where the read tool's specs
  # expect a PNG: put a real 1x1 PNG there
  if grep -qs '^version https://git-lfs' "$d/fixtures/sample.png"; then
    printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\0\x01\0\0\x05\0\x01\r\n-\xb4\0\0\0\0IEND\xaeB`\x82' \
      >"$d/fixtures/sample.png"
  fi
  (cd "$FLEMMA_DIR" && PROJECT_ROOT="$FLEMMA_DIR" PLENARY_PATH="$PLENARY_DIR" FLEMMA_SANDBOX_DIR="$OLDPWD" \
    timeout 900 nvim --headless --noplugin -u tests/minimal.vim \
    -c "PlenaryBustedDirectory $d/flemma {minimal_init = '$OLDPWD/spec/flemma_own/minimal_init.lua', sequential = true}" \
    </dev/null >"$log" 2>&1)
  local rc=$? ok bad files
  files=$(ls "$d/flemma" | wc -l)
  ok=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '/^[a-z_]+_spec\.lua: [0-9]+ passed$/ { n += $2 } /^Success: / { n += $2 } END { print n + 0 }')
  bad=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '/^(Failed|Errors) *: / { n += $3 } END { print n + 0 }')
  summaries=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -cE '^[a-z_]+_spec\.lua: [0-9]+ passed$|^Success: ')
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E ' passed$|Fail.*\|\||Failed :|Errors :' | head -n 40
  if [ "$rc" -ne 0 ] || [ "$summaries" -lt "$files" ]; then
    [ "$bad" -eq 0 ] && bad=1
    echo "Flemma's specs: exit $rc, $summaries of $files files reported"
    tail -n 20 "$log"
  fi
  passed=$((passed + ok))
  failed=$((failed + bad))
  [ "$bad" -eq 0 ] || status=1
  rm -rf "$d" "$log"
}
for suite in "${suites[@]}"; do
  if [ "$suite" = flemma ] || [ "$suite" = flemma-own ]; then
    if [ -z "${FLEMMA_DIR:-}" ] || [ ! -f "${FLEMMA_DIR}/lua/flemma/init.lua" ]; then
      echo "== spec/$suite skipped: FLEMMA_DIR does not name a Flemma checkout"
      continue
    fi
    if ! nvim --headless -u NONE -c 'if has("nvim-0.11") | qa! | else | cquit 1 | endif' </dev/null >/dev/null 2>&1; then
      echo "== spec/$suite skipped: Flemma needs Neovim 0.11+, this is $(nvim --version | head -n 1)"
      continue
    fi
  fi
  if [ "$suite" = flemma-own ]; then
    run_flemma_own
    continue
  fi
  echo "== spec/$suite ($(id -un))"
  log=$(mktemp)
  if [ "$suite" = nvim ] || [ "$suite" = flemma ] || [ "$suite" = cli ]; then
    FLEMMA_SANDBOX_SUITE="spec/$suite" FLEMMA_DIR="$( [ "$suite" = flemma ] && echo "${FLEMMA_DIR:-}" )" \
      nvim --headless -u NONE -i NONE -c "luafile spec/nvim_runner.lua" -c "cquit 1" 2>&1 </dev/null | tee "$log"
  elif [ "$suite" = escape-warm ]; then
    # the escape suite's attacks as calls of one chat, in its live sandbox
    FLEMMA_SANDBOX_WARM=1 LD_PRELOAD="$preload" luajit "$busted_bin" -o utfTerminal spec/escape 2>&1 | tee "$log"
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
