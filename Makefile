# burrow - sandboxed filesystem tool host for AI agents.
# `make` builds build/burrow, build/libburrow.{a,so}, the Lua modules
# build/lua/burrow/{core,server,host}.so, build/burrow.pc and the C tests;
# `make test` runs everything; `make run` builds the command only and serves
# the current directory over MCP stdio; `make install PREFIX=... DESTDIR=...` installs
# (docs/embedding.md); `make rock` and `make rock-install` are LuaRocks'
# (rockspec/burrow-scm-1.rockspec); `make src-rock` packs the checkout as a
# source rock, offline.

CC      ?= cc
PKGS    := lua5.4 libpcre2-8 yaml-0.1 libcrypto jansson libmicrohttpd lua5.4-lpeg uchardet hiredis libcurl
OPT     ?= -O2 -g
# Hidden by default: libburrow.so exports only burrow.h's burrow_*, core.so
# luaopen_burrow_core and the core's BW_SHARED functions server.so and
# host.so call, server.so luaopen_burrow_server, host.so luaopen_burrow_host
# and burrow_* (host/test/exports.sh checks them all).
CFLAGS  += $(OPT) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -pthread -fvisibility=hidden
# Read when a recipe runs (=, not :=): on a fresh machine check-deps has
# installed the packages by then, so one `make` builds (not a second one).
LUA_CFLAGS = $(shell pkg-config --cflags lua5.4 2>/dev/null)
# libmicrohttpd, uchardet, hiredis and libcurl are not linked: mhd.c opens the
# first when a listener starts, charset.c the second when a file is not
# UTF-8, redis.c the third (and libssl, for rediss://) when a Redis state
# store opens, fetch.c the fourth when an OAuth token is first checked
# (dynlib.c; their headers are still needed, so they stay in PKGS).
DEP_LIBS   = $(shell pkg-config --libs libcrypto jansson libpcre2-8 yaml-0.1 2>/dev/null) -pthread $(LDFLAGS)
LUA_LIBS   = $(shell pkg-config --libs lua5.4 2>/dev/null) -lm -ldl
# LPeg linked in (api.c preloads it: see luaopen_lpeg there). Its only
# reference is weak, which --as-needed would drop: kept needed explicitly.
LPEG_LIBS  = -Wl,--push-state,--no-as-needed $(shell pkg-config --libs-only-l lua5.4-lpeg 2>/dev/null | sed 's/-llua5.4 *$$//') -Wl,--pop-state
# The burrow command takes libcrypto, jansson, PCRE2, libyaml, Lua and LPeg
# from their static archives (Debian's -dev packages ship them): a process
# starts with less to map and relocate (docs/benchmarks.md, Start-up). Lua
# is linked whole and its symbols exported (-rdynamic), as Debian's own
# lua5.4 does, so the C modules `require` opens find the whole API in the
# command; the others' symbols stay private (--exclude-libs). libmicrohttpd
# and uchardet are opened when needed (dynlib.c). STATIC=0: all shared.
STATIC ?= 1
ifeq ($(STATIC),1)
BIN_LIBS   = -Wl,--exclude-libs,libcrypto.a:libjansson.a:libpcre2-8.a:libyaml.a:liblua5.4-lpeg.a \
  -Wl,-Bstatic $(shell pkg-config --libs libcrypto jansson libpcre2-8 yaml-0.1 2>/dev/null) \
  -Wl,--whole-archive -llua5.4-lpeg -llua5.4 -Wl,--no-whole-archive -Wl,-Bdynamic -lm -ldl -pthread \
  -Wl,--wrap=OPENSSL_cpuid_setup $(LDFLAGS)
BIN_LUA    =
else
BIN_LIBS   = $(DEP_LIBS)
BIN_LUA    = $(LPEG_LIBS) $(LUA_LIBS)
endif

B       := build
SRC     := host/src
# One folder a layer (docs/architecture.md): core/ plain C, built without
# Lua's include path (a core file that includes lua.h fails to compile);
# lua/ the binding (burrow.core); server/ the stdio and HTTP transports;
# api/ burrow.h's implementation; cli/ the burrow command. Every layer
# above core sees Lua's headers and the other layers' headers.
LAYERS  := core lua server api cli
obj_of   = $(patsubst $(SRC)/%.c,$(B)/obj/%.o,$(wildcard $(SRC)/$(1)/*.c))
CORE_O  := $(call obj_of,core)
LUA_O   := $(call obj_of,lua)
SERVER_O:= $(call obj_of,server)
API_O   := $(call obj_of,api)
CLI_O   := $(call obj_of,cli)
MAIN_O  := $(B)/obj/cli/main.o
# the command's own link: with the static libcrypto, its CPU probe is
# taken out of the start (cli/cpuprobe.c, --wrap in BIN_LIBS)
PROBE_O := $(if $(filter 1,$(STATIC)),$(B)/obj/cli/cpuprobe.o)
# everything but the command's main(): libburrow and the fuzz targets
LIB_O   := $(CORE_O) $(LUA_O) $(SERVER_O) $(API_O) $(filter-out $(MAIN_O) $(B)/obj/cli/cpuprobe.o,$(CLI_O))
# The Lua modules a plain Lua 5.4 loads, one file a layer, all in burrow/:
# core.so the core and the binding (burrow.core), server.so the transports
# (burrow.server), host.so the embedding API (burrow.host). The two upper
# ones hold no copy of the core: they are linked against core.so, whose
# soname is "$$ORIGIN/core.so", so their DT_NEEDED is the core.so in their
# own directory (glibc expands $$ORIGIN in a DT_NEEDED with a slash) and
# the dynamic loader reuses the one already loaded (same path, or the same
# file by device and inode): one copy of the process-wide state (the cancel source, undo
# stores, watches...). -Bsymbolic: a library's calls to its own exported
# functions never go to another object's of the same name. -z nodelete:
# lua_close's dlclose never unmaps one, since threads of its own outlive
# the state (the stdio reader and SIGHUP watcher run for the process;
# unmapped under them, a process ending crashed now and then:
# spec/modules_spec.lua).
SO_CORE_O   := $(CORE_O) $(LUA_O)
SO_SERVER_O := $(SERVER_O)
SO_HOST_O   := $(API_O)
LUA_SO      := $(B)/lua/burrow/core.so $(B)/lua/burrow/server.so $(B)/lua/burrow/host.so
SO_CORE_LD  := -Wl,-soname,'$$ORIGIN/core.so' -Wl,-Bsymbolic -Wl,-z,nodelete
SO_UPPER_LD := -Wl,-Bsymbolic -Wl,-z,nodelete
CORE_INC  := -I$(SRC)/core
LAYER_INC := $(LAYERS:%=-I$(SRC)/%) -Ihost/include
HEADERS  = $(wildcard $(SRC)/*/*.h) host/include/burrow.h
TESTS   := $(patsubst host/test/test_%.c,$(B)/test_%,$(wildcard host/test/test_*.c))
VERSION := $(shell sed -n 's/^\#define BURROW_VERSION_STRING "\(.*\)"/\1/p' host/include/burrow.h)
SOVER   := $(firstword $(subst ., ,$(VERSION)))

# Install layout. The binary and libburrow find the Lua side at
# ../share/burrow/lua beside themselves, else at LUADIR as compiled in.
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
DATADIR      ?= $(PREFIX)/share
MANDIR       ?= $(DATADIR)/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
LUADIR       ?= $(DATADIR)/burrow/lua
LUACDIR      ?= $(LIBDIR)/burrow/lua
# The Lua files installed (tools/packs included): paths under lua/.
LUA_FILES     = $(shell cd lua && find burrow tools policy -name '*.lua' | LC_ALL=C sort)
# installed as source text: policies (the sandbox loads text only) and
# what other Luas load (burrow.ffi, burrow.bridge and the rest of
# ROCK_ANY_LUA, lua/burrow/any.lua)
LUA_TEXT      = policy/% $(ROCK_ANY_LUA) burrow/any.lua

# Debian 12 packages burrow needs to build and test.
# (luarocks: the rock's build, spec/install_spec.lua; it and lua5.1-5.3 make
# /usr/bin/lua another Lua than 5.4, so everything here names lua5.4. clang and libclang-rt-14-dev,
# which holds libFuzzer: the fuzz targets, host/fuzz/. libmicrohttpd-dev:
# burrow mcp --http; haproxy: the scale-out test; curl: the HTTP security
# spec; lua-luv: the luv example and its test; luajit2 (OpenResty's LuaJIT,
# which nginx's Lua module needs and which Neovim and LÖVE take too; it
# replaces Debian's luajit), libluajit2-5.1-dev, lua5.1..5.3 and their -dev
# packages, neovim, libnginx-mod-http-lua: the rock for every Lua,
# test/anylua/. libuchardet-dev:
# charset.c; python3-nbformat: spec/tools/notebook_spec.lua checks edits
# against nbformat. love, xvfb, xauth, libgl1-mesa-dri: the LÖVE example run
# headless by LÖVE itself, test/luajit/love_run_spec.lua. libhiredis-dev:
# redis.c, the Redis state store; redis-server: its tests, which start
# their own on a free port (the package's system service is never used).
# prometheus: the metrics e2e, which starts its own on a free port
# (test/e2e/metrics.test.mjs); installed without its recommended packages
# (DEBS_BARE: exporters and the like it does not need).
DEBS_BARE := prometheus
# libcurl4-openssl-dev: server/fetch.c, the OAuth issuer's keys and token
# introspection.)
DEBS := build-essential pkg-config lua5.4 liblua5.4-dev lua-busted lua-lpeg lua-lpeg-dev \
        libpcre2-dev libyaml-dev libssl-dev libjansson-dev ripgrep luarocks \
        clang libclang-rt-14-dev libmicrohttpd-dev haproxy curl lua-luv luajit2 libluajit2-5.1-dev \
        lua5.1 liblua5.1-0-dev lua5.2 liblua5.2-dev lua5.3 liblua5.3-dev neovim libnginx-mod-http-lua \
        libuchardet-dev python3-nbformat love xvfb xauth libgl1-mesa-dri libhiredis-dev redis-server \
        libcurl4-openssl-dev $(DEBS_BARE)

.PHONY: all deps test run bench soak sanitize tsan fuzz fuzz-build fuzz-bins clean check-deps install uninstall rock rock-install src-rock FORCE
all: $(B)/burrow $(B)/libburrow.a $(B)/libburrow.so $(LUA_SO) $(B)/burrow.pc $(TESTS) $(B)/faults.so \
  $(B)/test-lua/burrow/pattern_test.so

deps:
	@missing=$$(for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done; \
	  command -v node >/dev/null 2>&1 || echo nodejs npm); \
	plain=$$(for p in $$missing; do case " $(DEBS_BARE) " in *" $$p "*) ;; *) echo $$p;; esac; done); \
	bare=$$(for p in $$missing; do case " $(DEBS_BARE) " in *" $$p "*) echo $$p;; esac; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update && \
	  { [ -z "$$plain" ] || apt-get install -y $$plain; } && \
	  { [ -z "$$bare" ] || apt-get install -y --no-install-recommends $$bare; }; \
	else echo "deps: run as root:"; \
	  [ -z "$$plain" ] || echo "  apt-get install -y "$$plain; \
	  [ -z "$$bare" ] || echo "  apt-get install -y --no-install-recommends "$$bare; exit 1; fi

# A fresh machine: install what is missing (as root), else say what to run.
check-deps:
	@pkg-config --exists $(PKGS) 2>/dev/null || $(MAKE) --no-print-directory deps

$(B)/obj/%.o: $(SRC)/%.c $(HEADERS) | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# only the layers above core see lua.h
$(CORE_O): CFLAGS += $(CORE_INC)
$(LUA_O) $(SERVER_O) $(API_O) $(CLI_O): CFLAGS += $(LAYER_INC) $(LUA_CFLAGS)

# The Lua dir compiled into api.o, the last place looked: api.o is rebuilt
# when it changes (`make install PREFIX=/opt/burrow` after a plain `make`).
$(B)/luadir.txt: FORCE
	@mkdir -p $(B) && echo '$(LUADIR)' | cmp -s - $@ || echo '$(LUADIR)' > $@
$(B)/obj/api/api.o: $(B)/luadir.txt
$(B)/obj/api/api.o: CFLAGS += -DBURROW_LUA_INSTALL_DIR='"$(LUADIR)"'

$(B)/lua/burrow/core.so: $(SO_CORE_O)
	@mkdir -p $(dir $@)
	$(CC) -shared $(SO_CORE_LD) -o $@ $^ $(DEP_LIBS) $(LPEG_LIBS)
$(B)/lua/burrow/server.so: $(SO_SERVER_O) $(B)/lua/burrow/core.so
	$(CC) -shared $(SO_UPPER_LD) -o $@ $^ $(DEP_LIBS)
$(B)/lua/burrow/host.so: $(SO_HOST_O) $(B)/lua/burrow/core.so
	$(CC) -shared $(SO_UPPER_LD) -o $@ $^ $(DEP_LIBS)

$(B)/libburrow.a: $(LIB_O)
	rm -f $@ && ar rcs $@ $^

$(B)/libburrow.so: $(LIB_O) host/libburrow.map
	$(CC) -shared -Wl,-soname,libburrow.so.$(SOVER) -Wl,--version-script=host/libburrow.map \
	  -o $@.$(VERSION) $(filter %.o,$^) $(DEP_LIBS) $(LPEG_LIBS) $(LUA_LIBS)
	ln -sf libburrow.so.$(VERSION) $@.$(SOVER)
	ln -sf libburrow.so.$(SOVER) $@

# pkg-config file; paths under PREFIX are written relative to ${prefix}
$(B)/burrow.pc: host/burrow.pc.in host/include/burrow.h $(B)/luadir.txt
	@mkdir -p $(B)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
	    -e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|' \
	    -e 's|@LUADIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LUADIR))|' \
	    -e 's|@LUACDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LUACDIR))|' $< > $@

# The command carries the Lua it runs (host/embed.c writes it as a C
# table): a copied binary works with no Lua directory beside it.
$(B)/embed: host/embed.c | check-deps
	@mkdir -p $(B)
	$(CC) -O2 -o $@ $<
$(B)/gen/builtin_lua.c: $(B)/embed $(addprefix lua/,$(LUA_FILES))
	@mkdir -p $(dir $@)
	$(B)/embed $@ lua $(LUA_FILES)
$(B)/obj/gen/builtin_lua.o: $(B)/gen/builtin_lua.c $(SRC)/lua/lbuiltin.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(SRC)/lua -c $< -o $@
$(B)/burrow: $(MAIN_O) $(PROBE_O) $(LIB_O) $(B)/obj/gen/builtin_lua.o host/burrow.map
	$(CC) -rdynamic -Wl,--version-script=host/burrow.map -o $@ $(filter %.o,$^) $(BIN_LIBS) $(BIN_LUA)

# C tests link the core only: no Lua (test_arena adds the command's arena)
$(B)/test_%: host/test/test_%.c $(CORE_O) host/test/check.h
	$(CC) $(CFLAGS) $(CORE_INC) -o $@ $(filter %.c %.o,$^) $(DEP_LIBS)
$(B)/test_arena: $(B)/obj/cli/arena.o
# test_promtext: the server's Prometheus text writer, plain C (no Lua)
$(B)/test_promtext: $(B)/obj/server/promtext.o
$(B)/test_promtext: private CFLAGS += -I$(SRC)/server
$(B)/test_state $(B)/test_stateredis: host/test/state_cases.h
$(B)/test_undo $(B)/test_stateredis: host/test/undo_cases.h
$(B)/test_edit $(B)/test_mutate: host/test/edits.h

# test_grep watches grep's mapped files through a hook that only its own
# build of grep.c has (-DBW_GREP_TEST_HOOK): the product never carries it
$(B)/obj-test/grep.o: $(SRC)/core/grep.c $(HEADERS) | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CORE_INC) -DBW_GREP_TEST_HOOK -c $< -o $@
$(B)/test_search $(B)/test_grep: host/test/search_tree.h
$(B)/test_grep: host/test/test_grep.c $(filter-out $(B)/obj/core/grep.o,$(CORE_O)) $(B)/obj-test/grep.o host/test/check.h
	$(CC) $(CFLAGS) $(CORE_INC) -DBW_GREP_TEST_HOOK -o $@ $(filter %.c %.o,$^) $(DEP_LIBS)

# The specs' own Lua module (never installed): the sandbox's pattern bound
# asked directly (host/test/lpattern.c), with its own copy of patcost.o
$(B)/test-lua/burrow/pattern_test.so: host/test/lpattern.c $(B)/obj/core/patcost.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CORE_INC) $(LUA_CFLAGS) -shared -o $@ $^

# except the embedding API's, which links the whole library as an engine would
$(B)/test_capi $(B)/test_api_async: $(B)/test_%: host/test/test_%.c $(B)/libburrow.a host/test/check.h
	$(CC) $(CFLAGS) $(LUA_CFLAGS) -Ihost/include -o $@ $(filter %.c %.a,$^) $(DEP_LIBS) $(LUA_LIBS)

# the fault shim the security suite preloads (spec/security/faults_spec.lua)
$(B)/faults.so: host/test/faults.c | check-deps
	$(CC) $(CFLAGS) -fvisibility=default -shared -o $@ $< -ldl # its wrappers must be seen to interpose

# The tests use more than the build does (luajit, lua-luv, LÖVE, clang for
# the fuzz targets...): every package in DEBS is checked (and installed as
# root) first, so one `make test` on a machine lacking any of them works.
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all
	@bash test/run-all.sh

# The command alone (no C tests, no fault shim: `make test` builds those),
# serving this directory; started by its absolute path, so the MCP
# Inspector command its banner ends with works from any directory.
run: $(B)/burrow
	@$(abspath $(B))/burrow mcp --root "$(CURDIR)"

bench: all
	@bash bench/run.sh

# Several MCP clients on one tree for SOAK_SECONDS (default 1800): crash,
# RSS, fds and every file against a model; the result goes to docs/benchmarks.md, Soak.
# First the long runs of races and crashes that make test runs short, on both
# resolvers: issue 40's write against a subtree move, copy or remove at 1,000
# tries (make test: 50), then over HTTP and stdio; its kill -9 in staged
# operations, 100 runs on a 30,000-entry tree (make test: 8 on 1,000); the
# bypass matrix's race column at 3,000 calls and 1 s a cell (make test: 300
# and 0.05 s); P0-15's racing remove 2,000 times (make test: 200); the
# compare-and-set race at 2,000 edits a process (make test: 300). Then a
# million stateless calls of one token under quotas: RSS flat.
soak: all
	@bash test/npm-current.sh test/e2e 2>/dev/null || (cd test/e2e && npm ci --no-audit --no-fund)
	@for r in openat2 walk; do BURROW_SUBTREE_TRIES=1000 BURROW_RESOLVER=$$r busted --lua=lua5.4 spec/security/subtree_race_spec.lua || exit 1; done
	@for r in openat2 walk; do BURROW_CRASH_RUNS=100 BURROW_CRASH_ENTRIES=30000 BURROW_RESOLVER=$$r busted --lua=lua5.4 spec/security/staged_crash_spec.lua || exit 1; done
	@for r in openat2 walk; do BURROW_RACE_CALLS=3000 BURROW_RACE_WALKS=1000 BURROW_RACE_SECONDS=1 BURROW_RESOLVER=$$r busted --lua=lua5.4 spec/security/bypass_matrix_spec.lua || exit 1; done
	@for r in openat2 walk; do BURROW_MUTATION_REMOVES=2000 BURROW_MUTATION_SECONDS=600 BURROW_CAS_EDITS=2000 BURROW_RESOLVER=$$r busted --lua=lua5.4 spec/security/mutation_race_spec.lua spec/security/cas_race_spec.lua || exit 1; done
	@cd test/e2e && BURROW_SUBTREE_TRIES=1000 node --test subtree_race.test.mjs
	@sh test/soak/rss_stateless.sh $(B)/burrow 1000000
	@node test/soak/soak.mjs

# ASan + UBSan build of everything, then the whole suite against it.
# ThreadSanitizer on the embedding API's tests (the worker, its queues, the
# eventfd, hosts on threads)
tsan:
	$(MAKE) B=build/tsan OPT="-O1 -g -fsanitize=thread -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=thread" build/tsan/test_api_async build/tsan/test_capi
	TSAN_OPTIONS=suppressions=host/test/tsan.supp build/tsan/test_api_async && \
	  TSAN_OPTIONS=suppressions=host/test/tsan.supp build/tsan/test_capi

sanitize:
	$(MAKE) B=build/sanitize OPT="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined"
	BURROW_BUILD=build/sanitize ASAN_OPTIONS=detect_leaks=0 bash test/run-all.sh

# libFuzzer targets (host/fuzz/fuzz_*.c, one binary each), built with clang,
# ASan and UBSan against the core and binding compiled the same way in
# build/fuzz. `make fuzz` runs each (or FUZZ_TARGETS="json edit ...") for
# FUZZ_SECONDS, growing a corpus in build/fuzz/corpus; `make test` runs each
# for a few seconds from its seeds (host/fuzz/corpus/NAME). host/fuzz/run.sh
# does both; crashing inputs land in build/fuzz/crashes/NAME.
FUZZ_B       := build/fuzz
FUZZ_OPT     := -O1 -g -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_NAMES   := $(patsubst host/fuzz/fuzz_%.c,%,$(wildcard host/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 120
FUZZ_TARGETS ?=

fuzz-build:
	@command -v clang >/dev/null 2>&1 || { echo "fuzz-build: clang is missing (make deps installs it)"; exit 1; }
	@$(MAKE) --no-print-directory B=$(FUZZ_B) CC=clang OPT="$(FUZZ_OPT)" \
	  LDFLAGS="-fsanitize=address,undefined" fuzz-bins

fuzz-bins: $(FUZZ_NAMES:%=$(B)/fuzz_%)

$(B)/fuzz_%: host/fuzz/fuzz_%.c host/fuzz/fuzz.h $(LIB_O)
	$(CC) $(CFLAGS) $(LUA_CFLAGS) -fsanitize=fuzzer $(LAYER_INC) \
	  -DFUZZ_LUA_DIR='"$(CURDIR)/lua"' -DFUZZ_DIR='"$(CURDIR)/host/fuzz"' \
	  -o $@ $< $(LIB_O) $(DEP_LIBS) $(LUA_LIBS)

fuzz: fuzz-build
	@FUZZ_B=$(FUZZ_B) bash host/fuzz/run.sh --keep $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Everything lands under $(DESTDIR)$(PREFIX) (the directories above):
# nothing outside it. spec/install_spec.lua checks.
install: $(B)/burrow $(B)/libburrow.a $(B)/libburrow.so $(LUA_SO) $(B)/burrow.pc
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
	  $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(LUACDIR)/burrow
	install -m 755 $(B)/burrow $(DESTDIR)$(BINDIR)/burrow
	install -m 644 $(B)/libburrow.a $(DESTDIR)$(LIBDIR)/libburrow.a
	install -m 755 $(B)/libburrow.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libburrow.so.$(VERSION)
	ln -sf libburrow.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libburrow.so.$(SOVER)
	ln -sf libburrow.so.$(SOVER) $(DESTDIR)$(LIBDIR)/libburrow.so
	install -m 644 host/include/burrow.h $(DESTDIR)$(INCLUDEDIR)/burrow.h
	install -m 644 $(B)/burrow.pc $(DESTDIR)$(PKGCONFIGDIR)/burrow.pc
	install -m 644 docs/burrow.1 $(DESTDIR)$(MANDIR)/man1/burrow.1
	install -D -m 644 LICENSE $(DESTDIR)$(DATADIR)/doc/burrow/LICENSE
	@# core.so, server.so, host.so together: the two upper ones load the core.so beside them
	install -m 755 $(LUA_SO) $(DESTDIR)$(LUACDIR)/burrow/
	@for f in $(LUA_FILES); do install -D -m 644 lua/$$f $(DESTDIR)$(LUADIR)/$$f || exit 1; done
	@# precompiled (host/luac.lua): start-up loads bytecode instead of parsing ~25
	@# files; not policies, which operators read and copy (their bytecode goes
	@# beside them, below), nor what other Luas load (burrow.ffi, burrow.bridge...): 5.4 bytecode
	@# is not theirs
	@for f in $(filter-out $(LUA_TEXT),$(LUA_FILES)); do lua5.4 host/luac.lua lua/$$f $(LUADIR)/$$f $(DESTDIR)$(LUADIR)/$$f || exit 1; done
	@# the standard policies stay text (operators copy them), each with
	@# NAME.luac beside it: its text, then its bytecode, which burrow.policy
	@# loads when the text is the .lua file's byte for byte (no parse at start)
	@for f in $(filter policy/%,$(LUA_FILES)); do lua5.4 host/luac.lua lua/$$f $(LUADIR)/$$f $(DESTDIR)$(LUADIR)/$${f}c --text || exit 1; done
	@# and NAME.luad for one without check() or after(): its text, then the
	@# fields it gave run once here (host/policydata.lua); burrow.policy takes
	@# them for the policy named with no options, so a start runs no sandbox
	@for f in $(filter policy/%,$(LUA_FILES)); do LUA_PATH='lua/?.lua;lua/?/init.lua' LUA_CPATH='$(B)/lua/?.so' \
	  lua5.4 host/policydata.lua lua/$$f $(LUADIR)/$$f $(DESTDIR)$(LUADIR)/$${f%.lua}.luad || exit 1; done
	@echo "installed burrow $(VERSION) under $(DESTDIR)$(PREFIX) ($(words $(LUA_FILES)) Lua files, all but policy/ and those other Luas load precompiled, in $(DESTDIR)$(LUADIR))"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/burrow $(DESTDIR)$(LIBDIR)/libburrow.a \
	  $(DESTDIR)$(LIBDIR)/libburrow.so $(DESTDIR)$(LIBDIR)/libburrow.so.$(SOVER) \
	  $(DESTDIR)$(LIBDIR)/libburrow.so.$(VERSION) $(DESTDIR)$(INCLUDEDIR)/burrow.h \
	  $(DESTDIR)$(PKGCONFIGDIR)/burrow.pc $(DESTDIR)$(MANDIR)/man1/burrow.1 \
	  $(LUA_SO:$(B)/lua/%=$(DESTDIR)$(LUACDIR)/%) $(DESTDIR)$(DATADIR)/doc/burrow/LICENSE
	@for f in $(LUA_FILES); do rm -f $(DESTDIR)$(LUADIR)/$$f; done
	@for f in $(filter policy/%,$(LUA_FILES)); do rm -f $(DESTDIR)$(LUADIR)/$${f}c $(DESTDIR)$(LUADIR)/$${f%.lua}.luad; done
	-@find $(DESTDIR)$(LUADIR) $(DESTDIR)$(LUACDIR) -depth -type d -empty -delete 2>/dev/null
	-@rmdir $(DESTDIR)$(DATADIR)/burrow $(DESTDIR)$(LIBDIR)/burrow $(DESTDIR)$(DATADIR)/doc/burrow 2>/dev/null

# LuaRocks' build (build.type "make" in rockspec/burrow-scm-1.rockspec),
# with LuaRocks' CFLAGS/LIBFLAG and the external dependencies' directories
# it found (PCRE2_INCDIR, ...). No pkg-config, no -Werror. What it builds
# depends on the Lua it is for (LUA_VERSION_NUM in LUA_INCDIR's lua.h):
#   5.4: burrow.core, burrow.server and burrow.host (core.so, server.so,
#        host.so, as `make` builds them) from the same sources, then the
#        module, tools and policies copied into the rock (tools and
#        policies inside burrow/: see lua/burrow/workspace/registry.lua);
#   5.1, 5.2, 5.3 (and LuaJIT, which LuaRocks sees as 5.1): libburrow.so
#        with its Lua 5.4 side built in (tools and policies run in its own
#        sandboxed 5.4 state) and burrow.native (host/rock/native.c, against
#        the host's headers) beside it; the host's Lua gets burrow.bridge,
#        burrow.ffi, burrow.jsonlite and lua/burrow/any.lua as burrow/init.lua,
#        all source text: require "burrow" takes burrow.ffi under LuaJIT,
#        burrow.native elsewhere.
# libburrow's objects always see Lua 5.4's headers (LUA54_INCDIR), so one
# source tree builds them once for every version.
ROCK_B    := build/rock
ROCK_DEPS := PCRE2 YAML CRYPTO JANSSON MHD UCHARDET HIREDIS LPEG
ROCK_LUA_NUM := $(if $(LUA_INCDIR),$(shell sed -n 's/^\#define LUA_VERSION_NUM[[:space:]]*\([0-9]*\).*/\1/p' $(LUA_INCDIR)/lua.h 2>/dev/null))
ROCK_LUA54 = $(if $(LUA54_INCDIR),-I$(LUA54_INCDIR)/lua5.4,-I$(LUA_INCDIR))
ROCK_INC   = $(sort $(foreach d,$(ROCK_DEPS),$(if $($(d)_INCDIR),-I$($(d)_INCDIR)))) $(ROCK_LUA54) $(LAYER_INC)
ROCK_DEP_LIBS = $(sort $(foreach d,$(ROCK_DEPS),$(if $($(d)_LIBDIR),-L$($(d)_LIBDIR)))) -lpcre2-8 -lyaml -lcrypto -ljansson -pthread
ROCK_LIBS  = $(ROCK_DEP_LIBS) -Wl,--push-state,--no-as-needed -llua5.4-lpeg -Wl,--pop-state
LIBFLAG   ?= -shared
# the files the host's Lua loads, from a 5.1-5.3 rock (source text)
ROCK_ANY_LUA := burrow/adapters.lua burrow/bridge.lua burrow/ffi.lua burrow/jsonlite.lua burrow/meta.lua

ROCK_SO := $(ROCK_B)/core.so $(ROCK_B)/server.so $(ROCK_B)/host.so
rock_o   = $(patsubst $(B)/obj/%,$(ROCK_B)/%,$(1))

ifeq ($(ROCK_LUA_NUM),504)
rock: $(ROCK_SO)
else ifneq ($(ROCK_LUA_NUM),)
rock: $(ROCK_B)/native-$(ROCK_LUA_NUM).so $(ROCK_B)/libburrow.so
else
rock:
	@echo "rock: set LUA_INCDIR to a dir with Lua's lua.h (LuaRocks does)"; exit 2
endif

# hidden as in make's build (LuaRocks' CFLAGS replace ours): each module
# exports its opener, core.so the BW_SHARED functions the other two call
$(ROCK_B)/%.o: $(SRC)/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=c11 -D_GNU_SOURCE -fPIC -pthread -fvisibility=hidden $(ROCK_INC) -c $< -o $@

$(ROCK_B)/core.so: $(call rock_o,$(SO_CORE_O))
	$(CC) $(LIBFLAG) $(SO_CORE_LD) -o $@ $^ $(ROCK_LIBS)
$(ROCK_B)/server.so: $(call rock_o,$(SO_SERVER_O)) $(ROCK_B)/core.so
	$(CC) $(LIBFLAG) $(SO_UPPER_LD) -o $@ $^ $(ROCK_DEP_LIBS)
$(ROCK_B)/host.so: $(call rock_o,$(SO_HOST_O)) $(ROCK_B)/core.so
	$(CC) $(LIBFLAG) $(SO_UPPER_LD) -o $@ $^ $(ROCK_DEP_LIBS)

$(ROCK_B)/embed: host/embed.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -o $@ $<
$(ROCK_B)/gen/builtin_lua.c: $(ROCK_B)/embed $(addprefix lua/,$(LUA_FILES))
	@mkdir -p $(dir $@)
	$(ROCK_B)/embed $@ lua $(LUA_FILES)
$(ROCK_B)/gen/builtin_lua.o: $(ROCK_B)/gen/builtin_lua.c $(SRC)/lua/lbuiltin.h
	$(CC) $(CFLAGS) -fPIC -I$(SRC)/lua -c $< -o $@
$(ROCK_B)/libburrow.so: $(patsubst $(B)/obj/%,$(ROCK_B)/%,$(LIB_O)) $(ROCK_B)/gen/builtin_lua.o host/libburrow.map
	$(CC) $(LIBFLAG) -Wl,--version-script=host/libburrow.map -o $@ $(filter %.o,$^) $(ROCK_LIBS) \
	  $(if $(LUA54_LIBDIR),-L$(LUA54_LIBDIR)) -llua5.4 -lm -ldl
# one object per Lua version: a tree can hold rocks for several
$(ROCK_B)/native-%.so: host/rock/native.c host/include/burrow.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=c99 -fPIC -fvisibility=hidden -I$(LUA_INCDIR) -Ihost/include $(LIBFLAG) -o $@ $< -ldl

rock-install: rock
	@test -n "$(ROCK_LUADIR)" -a -n "$(ROCK_LIBDIR)" || { echo "rock-install: set ROCK_LUADIR and ROCK_LIBDIR (LuaRocks does)"; exit 2; }
ifeq ($(ROCK_LUA_NUM),504)
	install -d $(ROCK_LIBDIR)/burrow
	install -m 755 $(ROCK_SO) $(ROCK_LIBDIR)/burrow/
	@for f in $(LUA_FILES); do \
	  case $$f in burrow/*) d=$$f ;; *) d=burrow/$$f ;; esac; \
	  install -D -m 644 lua/$$f $(ROCK_LUADIR)/$$d || exit 1; done
else
	install -D -m 755 $(ROCK_B)/native-$(ROCK_LUA_NUM).so $(ROCK_LIBDIR)/burrow/native.so
	install -D -m 755 $(ROCK_B)/libburrow.so $(ROCK_LIBDIR)/burrow/libburrow.so
	install -D -m 644 lua/burrow/any.lua $(ROCK_LUADIR)/burrow/init.lua
	@for f in $(ROCK_ANY_LUA); do install -D -m 644 lua/$$f $(ROCK_LUADIR)/$$f || exit 1; done
endif

# A source rock of the checkout, offline: `git archive` of the tracked files
# the rock's build needs (Makefile host lua rockspec, uncommitted changes
# included), and a copy of the rockspec whose source is that archive by
# absolute path (luarocks pack fetches from a temp dir, so neither the
# rockspec's git+file://. nor a relative path can work), packed by luarocks
# into $(SRC_ROCK_DIR)/burrow-scm-1.src.rock. The rock carries the archive:
# installing it fetches nothing (spec/install_spec.lua).
SRC_ROCK_DIR ?= $(B)/src-rock
SRC_ROCK_ABS  = $(abspath $(SRC_ROCK_DIR))
src-rock: FORCE
	@command -v git >/dev/null && command -v luarocks >/dev/null || { echo "src-rock: needs git and luarocks"; exit 2; }
	@mkdir -p $(SRC_ROCK_DIR)
	rm -f $(SRC_ROCK_DIR)/burrow-scm.tar.gz $(SRC_ROCK_DIR)/burrow-scm-1.rockspec $(SRC_ROCK_DIR)/burrow-scm-1.src.rock
	rev=$$(git -c user.name=burrow -c user.email=burrow@localhost stash create) && \
	  git archive --format=tar.gz --prefix=burrow/ -o $(SRC_ROCK_ABS)/burrow-scm.tar.gz $${rev:-HEAD} Makefile host lua rockspec
	sed 's|^   url = "git+file://\.",|   url = "file://$(SRC_ROCK_ABS)/burrow-scm.tar.gz",\n   dir = "burrow",|' \
	  rockspec/burrow-scm-1.rockspec > $(SRC_ROCK_DIR)/burrow-scm-1.rockspec
	@grep -q '^   url = "file://.*burrow-scm.tar.gz",' $(SRC_ROCK_DIR)/burrow-scm-1.rockspec || { echo "src-rock: the rockspec's source.url line changed; update this rule"; exit 1; }
	cd $(SRC_ROCK_DIR) && luarocks --lua-version=5.4 pack burrow-scm-1.rockspec

FORCE:

clean:
	rm -rf $(B)
