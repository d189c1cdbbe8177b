# flemma-sandbox: builds the C core into lua/flemma_sandbox/core.so, where
# Neovim's runtimepath loader and the specs find it.

LUAJIT_INCDIR ?= $(or $(shell pkg-config --cflags-only-I luajit 2>/dev/null | sed "s/^-I//;s/ .*//"),/usr/include/luajit-2.1)
LUA_INCDIR ?= $(LUAJIT_INCDIR)
# luarocks may pass the include folder of a Lua 5.1 that is not installed;
# LuaJIT's headers provide the same 5.1 API.
INCDIR = $(if $(wildcard $(LUA_INCDIR)/lua.h),$(LUA_INCDIR),$(LUAJIT_INCDIR))
CC ?= cc
CFLAGS ?= -O2 -g
WARN = -std=c99 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -pedantic
PIC = -fPIC -fvisibility=hidden
LIBFLAG ?= -shared

# one folder per program, and what they share (ARCHITECTURE.md)
SHARED_SRC = $(wildcard csrc/shared/*.c)
SRC = $(wildcard csrc/core/*.c) $(SHARED_SRC)
HDR = $(wildcard csrc/*/*.h)
CORE = lua/flemma_sandbox/core.so
# one program per role, each a main of csrc/exec over its units
# (ARCHITECTURE.md): init runs inside every sandbox (limits, no_new_privs,
# seccomp, then exec; or a live sandbox's supervisor), host in front of
# bwrap (and as a live sandbox's keeper), attach for a call in a live
# sandbox, tool for what Neovim asks besides a run
EXEC_ROLES = init host attach tool
EXEC_PROGRAMS = $(addprefix lua/flemma_sandbox/flemma-sandbox-,$(EXEC_ROLES))
# the filtering HTTP proxy of the allowlist network mode
PROXY = lua/flemma_sandbox/flemma-sandbox-proxy
PROXY_SRC = $(wildcard csrc/proxy/*.c) $(SHARED_SRC)
EXEC_UNITS = $(filter-out %_main.c,$(wildcard csrc/exec/*.c)) $(SHARED_SRC)
# linked statically where the C library can be (libc.a: Debian's libc6-dev;
# not under the sanitizers): a call execs two of them, each 0.2 to 0.3 ms
# less without the dynamic loader (measured, issue 42's cold call)
EXEC_STATIC := $(shell printf 'int main(void){return 0;}\n' | $(CC) $(CFLAGS) -static-pie -x c -o /dev/null - >/dev/null 2>&1 && echo -static-pie)
# the command line: a thin main over the Lua library (csrc/cli/cli.h)
CLI = bin/flemma-sandbox
CLI_SRC = $(wildcard csrc/cli/*.c) csrc/shared/buf.c csrc/shared/fd_io.c csrc/core/sha256.c

NVIM ?= nvim
LUAJIT ?= luajit

.PHONY: all test lint lint-sh sanitize valgrind fuzz bench bench-calls bench-prestart demo clean install format help qa doc

LUA_TREES = lua spec bench demo plugin scripts

all: $(CORE) $(EXEC_PROGRAMS) $(PROXY) $(CLI) doc/tags

# :help flemma-sandbox wherever the doc folder goes (a rock's folder, a
# package installed as root): made here, where it is writable; skipped
# without Neovim
doc/tags: doc/flemma-sandbox.txt
	-$(NVIM) --headless -u NONE -i NONE -c "helptags doc" -c "qa!" >/dev/null 2>&1 </dev/null

$(CORE): $(SRC) $(HDR)
	$(CC) $(WARN) $(CFLAGS) $(PIC) -I$(INCDIR) -Icsrc/shared -Icsrc/core $(LIBFLAG) -o $@ $(SRC)

# each program says its messages with its own name; what its main does
# not reach is left out (--gc-sections)
$(EXEC_PROGRAMS): lua/flemma_sandbox/flemma-sandbox-%: csrc/exec/%_main.c $(EXEC_UNITS) $(HDR)
	$(CC) $(WARN) $(CFLAGS) -DEXEC_NAME='"flemma-sandbox-$*"' -ffunction-sections -fdata-sections -Wl,--gc-sections \
	  $(EXEC_STATIC) -Icsrc/shared -Icsrc/exec -o $@ $< $(EXEC_UNITS)

$(CLI): $(CLI_SRC) $(HDR)
	@mkdir -p bin
	$(CC) $(WARN) $(CFLAGS) -Icsrc/shared -Icsrc/core -Icsrc/cli -o $@ $(CLI_SRC)

$(PROXY): $(PROXY_SRC) $(HDR)
	$(CC) $(WARN) $(CFLAGS) -Icsrc/shared -Icsrc/proxy -pthread -o $@ $(PROXY_SRC)

# the warm call's floor (bench/floor, issue 42): a client with no libc and
# no ld.so, and the server it attaches to; and a static client of the live
# wire with no host-side work (an experiment); built only for make bench,
# and only where they can be (the client's system calls are x86-64's; both
# clients need a static C library): elsewhere calls_bench skips their rows
BENCH_FLOOR := $(shell [ "$$(uname -m)" = x86_64 ] && printf 'int main(void){return 0;}\n' | $(CC) -static -x c -o /dev/null - >/dev/null 2>&1 && echo bench/out/floor-client bench/out/floor-server bench/out/wire-client)
bench/out/floor-client: bench/floor/floor_client.c
	@mkdir -p bench/out
	$(CC) $(WARN) -O2 -ffreestanding -fno-stack-protector -fno-pie -no-pie -static -nostdlib -o $@ $<
bench/out/wire-client: bench/floor/wire_client.c
	@mkdir -p bench/out
	$(CC) $(WARN) -O2 -static -o $@ $<
bench/out/floor-server: bench/floor/floor_server.c
	@mkdir -p bench/out
	$(CC) $(WARN) $(CFLAGS) -o $@ $<

# luarocks make (build.type = "make") sets INST_LIBDIR and INST_LUADIR: the
# module and the Lua files go to the rock tree. Without them, `make install`
# installs a Neovim package under PREFIX (default: your own site folder;
# PREFIX=/usr/local/share/nvim/site for every user), help tags included.
PREFIX ?= $(HOME)/.local/share/nvim/site
PACKAGE_DIR = $(PREFIX)/pack/flemma-sandbox/start/flemma-sandbox
install: all
ifdef INST_LIBDIR
	mkdir -p $(INST_LIBDIR)/flemma_sandbox $(INST_LUADIR)
	cp $(CORE) $(EXEC_PROGRAMS) $(PROXY) $(INST_LIBDIR)/flemma_sandbox/
	cp -R lua/flemma_sandbox $(INST_LUADIR)/
	rm -f $(INST_LUADIR)/flemma_sandbox/core.so $(INST_LUADIR)/flemma_sandbox/flemma-sandbox-*
	# the command line: it finds the library from the tree (bin/..)
	$(if $(INST_BINDIR),mkdir -p $(INST_BINDIR) && cp $(CLI) $(INST_BINDIR)/)
else
	rm -rf $(PACKAGE_DIR)
	mkdir -p $(PACKAGE_DIR)
	cp -R lua plugin doc autoload syntax bin $(PACKAGE_DIR)/
	$(NVIM) --headless -u NONE -i NONE -c "helptags $(PACKAGE_DIR)/doc" -c "qa!" </dev/null
	@echo "installed in $(PACKAGE_DIR); the command line: ln -s $(PACKAGE_DIR)/$(CLI) ~/.local/bin/"
endif

test: $(CORE) $(EXEC_PROGRAMS) $(PROXY) $(CLI)
	bash spec/run.sh

# the static gates, each with zero findings: luacheck (Debian: lua-check,
# reads .luacheckrc), the layer checker (ARCHITECTURE.md, allowlist in
# scripts/layers.allow), the process gate (scripts/check_spawns.lua: processes
# start only in lua/flemma_sandbox/base/process.lua), the editor gate
# (scripts/check_editor.lua: only base/editor.lua tests for vim), the size gate, the vimdoc's config defaults
# against the schema (make doc writes them), stylua's format check (npm: @johnnymorganz/stylua-bin,
# reads stylua.toml), shellcheck on the scripts git runs in its bwrap and cppcheck on the C
lint: lint-sh
	luacheck --formatter plain --codes $(LUA_TREES)
	$(LUAJIT) scripts/check_layers.lua
	$(LUAJIT) scripts/check_spawns.lua
	$(LUAJIT) scripts/check_editor.lua
	$(LUAJIT) scripts/check_sizes.lua
	$(LUAJIT) scripts/check_functions.lua
	$(LUAJIT) scripts/config_doc.lua --check
	@# a report, never a failure: luajit scripts/spec_coverage.lua lists the modules
	-@$(LUAJIT) scripts/spec_coverage.lua | tail -n 1
	stylua --check $(LUA_TREES)
	cppcheck --quiet --enable=warning,performance,portability --std=c99 --error-exitcode=1 --inline-suppr --suppress=toomanyconfigs \
	  -I csrc/shared -I csrc/core -I csrc/exec -I csrc/proxy -I csrc/cli csrc/*/*.c

# the scripts git runs in its bwrap (lua/flemma_sandbox/libexec/); a spec
# plants a finding through SH_SCRIPTS (spec/unit/libexec_spec.lua); and the
# interactive shell's (libexec/shell/)
SH_SCRIPTS = $(wildcard lua/flemma_sandbox/libexec/*.sh lua/flemma_sandbox/libexec/shell/*.sh)
# the interactive shell's start-up files (cli/prompt.lua); zsh's and fish's
# have no linter
BASH_SCRIPTS = $(wildcard lua/flemma_sandbox/libexec/shell/*.bash)
lint-sh:
	shellcheck --shell=sh $(SH_SCRIPTS)
	shellcheck --shell=bash $(BASH_SCRIPTS)

sanitize:
	$(MAKE) -B $(CORE) $(EXEC_PROGRAMS) $(PROXY) $(CLI) CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
	SANITIZE=1 bash spec/run.sh unit
	$(MAKE) -B $(CORE) $(EXEC_PROGRAMS) $(PROXY) $(CLI)

valgrind: $(CORE) $(CLI)
	valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 $(LUAJIT) spec/valgrind_core.lua
	valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 -q ./$(CLI) help >/dev/null

# libFuzzer targets (clang): make fuzz FUZZ_RUNS=10000000
FUZZ_RUNS ?= 1000000
FUZZ_CORE = csrc/shared/buf.c csrc/shared/path.c csrc/shared/beneath.c csrc/shared/fd_io.c csrc/shared/scan.c csrc/shared/tree_index.c \
	csrc/shared/net_rules.c csrc/shared/git_config.c csrc/core/expand.c csrc/core/bwrap.c csrc/exec/after_run.c csrc/exec/before_run.c csrc/exec/hooks_folder.c csrc/exec/check_plan.c csrc/exec/live_wire.c \
	csrc/proxy/tls_hello.c \
	csrc/cli/cli_plan.c csrc/cli/term_filter.c
FUZZ_FLAGS = -std=c99 -g -O1 -Icsrc/shared -Icsrc/core -Icsrc/exec -Icsrc/proxy -Icsrc/cli -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
fuzz:
	mkdir -p fuzz/bin fuzz/corpus-work
	for t in path expand bwrap check unix tree proxy plan tfilter wire gitconfig; do \
	  clang $(FUZZ_FLAGS) -o fuzz/bin/fuzz_$$t fuzz/fuzz_$$t.c $(FUZZ_CORE) || exit 1; \
	  mkdir -p fuzz/corpus-work/$$t; \
	  ./fuzz/bin/fuzz_$$t -runs=$(FUZZ_RUNS) -max_len=4200 -print_final_stats=1 \
	    fuzz/corpus-work/$$t fuzz/corpus/$$t 2>&1 | grep -E "stat::number_of_executed_units|ERROR|Done" || exit 1; \
	done

bench: $(CORE) $(EXEC_PROGRAMS) $(PROXY) $(CLI)
	$(LUAJIT) bench/policy_bench.lua
	$(LUAJIT) bench/scan_bench.lua
	$(NVIM) --headless -u NONE -i NONE -c "luafile bench/job_bench.lua" -c "qa!"
	$(NVIM) --headless -u NONE -i NONE -c "luafile bench/socket_bench.lua" -c "qa!"
	$(NVIM) --headless -u NONE -i NONE -c "luafile bench/first_call_bench.lua" -c "qa!"
	$(NVIM) --headless -u NONE -i NONE -c "luafile bench/checkpoint_bench.lua" -c "qa!"
	$(NVIM) --headless -u NONE -i NONE -c "luafile bench/workspace_bench.lua" -c "qa!"
	$(LUAJIT) bench/proxy_bench.lua
	$(LUAJIT) bench/startup_bench.lua
	$(LUAJIT) bench/cli_bench.lua
	$(MAKE) --no-print-directory bench-calls

# issue 42's table in one run (bench/calls_bench.lua); alone: make bench-calls
bench-calls: $(CORE) $(EXEC_PROGRAMS) $(PROXY) $(CLI) $(BENCH_FLOOR)
	$(NVIM) --headless -u NONE -i NONE -c "luafile bench/calls_bench.lua" -c "qa!"

# the prestart row's floor, alone (bench/prestart_floor.lua)
bench-prestart: $(CORE) $(EXEC_PROGRAMS) $(PROXY) $(BENCH_FLOOR)
	$(NVIM) --headless -u NONE -i NONE -c "luafile bench/prestart_floor.lua" -c "qa!"

demo: $(CORE) $(EXEC_PROGRAMS) $(PROXY)
	$(NVIM) --headless -u NONE -i NONE -c "luafile demo/demo.lua" -c "cquit 1"

# the vimdoc's config defaults block, from config/defaults.lua
doc:
	$(LUAJIT) scripts/config_doc.lua

# stylua reads stylua.toml
format:
	stylua $(LUA_TREES)

# every gate CI runs, in one command
qa: lint test sanitize valgrind

help:
	@echo "make            the C core, the programs of csrc/exec, the proxy and the help tags"
	@echo "make demo       a real sandboxed tool call, showing what was blocked"
	@echo "make test       every spec (spec/run.sh; SUITES: spec/run.sh unit nvim ...)"
	@echo "make lint       luacheck, the layer, process, size and function-length checks, the doc's drift check, stylua --check, shellcheck, cppcheck"
	@echo "make sanitize   the unit specs with the C built under ASan and UBSan"
	@echo "make valgrind   the C core's specs under valgrind"
	@echo "make fuzz       the libFuzzer targets of the parsers (clang)"
	@echo "make bench      start-up, per-call, scan, job and proxy costs, with anchors"
	@echo "make bench-calls  issue 42's table in one run, each row next to bare bwrap"
	@echo "make bench-prestart  the first call after a prestart next to calls after the same idle second"
	@echo "make qa         lint, test, sanitize and valgrind"
	@echo "make install    a Neovim package under PREFIX (or the rock, from luarocks)"
	@echo "make format     stylua on the Lua trees"
	@echo "make doc        the vimdoc's config defaults block, from config/defaults.lua"

clean:
	rm -f $(CORE) $(EXEC_PROGRAMS) $(PROXY) $(CLI)
	rm -rf bench/out
