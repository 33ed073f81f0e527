# burrow - sandboxed filesystem tool host for AI agents.
# `make` builds build/burrow, build/libburrow.{a,so}, build/lua/burrow/core.so
# and the C tests; `make test` runs everything; `make run` serves the
# current directory over MCP stdio.

CC      ?= cc
PKGS    := lua5.4 libpcre2-8 yaml-0.1 libcrypto jansson
OPT     ?= -O2 -g
CFLAGS  += $(OPT) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -pthread
LUA_CFLAGS := $(shell pkg-config --cflags lua5.4 2>/dev/null)
DEP_LIBS   := $(shell pkg-config --libs libcrypto jansson libpcre2-8 yaml-0.1 2>/dev/null) -pthread $(LDFLAGS)
LUA_LIBS   := $(shell pkg-config --libs lua5.4 2>/dev/null) -lm -ldl

B       := build
SRC     := host/src
# Binding files are l*.c (the only ones that see lua.h, with main.c and
# api.c); every other host/src/*.c is core. New files need no edit here.
BIND    := $(basename $(notdir $(wildcard $(SRC)/l*.c)))
CORE    := $(filter-out $(BIND) main api,$(basename $(notdir $(wildcard $(SRC)/*.c))))
CORE_O  := $(CORE:%=$(B)/obj/%.o)
BIND_O  := $(BIND:%=$(B)/obj/%.o)
TESTS   := $(patsubst host/test/test_%.c,$(B)/test_%,$(wildcard host/test/test_*.c))
SOVER   := 0

# Debian 12 packages burrow needs to build and test.
DEBS := build-essential pkg-config lua5.4 liblua5.4-dev lua-busted lua-lpeg \
        libpcre2-dev libyaml-dev libssl-dev libjansson-dev ripgrep

.PHONY: all deps test run bench sanitize clean check-deps
all: $(B)/burrow $(B)/libburrow.a $(B)/libburrow.so $(B)/lua/burrow/core.so $(TESTS)

deps:
	@missing=$$(for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y $$missing; \
	else echo "deps: run as root:  apt-get install -y $$missing"; exit 1; fi

# A fresh machine: install what is missing (as root), else say what to run.
check-deps:
	@pkg-config --exists $(PKGS) 2>/dev/null || $(MAKE) --no-print-directory deps

$(B)/obj/%.o: $(SRC)/%.c $(wildcard $(SRC)/*.h) | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# only the binding and glue see lua.h
$(BIND_O) $(B)/obj/main.o $(B)/obj/api.o: CFLAGS += $(LUA_CFLAGS)
$(BIND_O) $(B)/obj/main.o $(B)/obj/api.o: host/include/burrow.h

$(B)/lua/burrow/core.so: $(CORE_O) $(BIND_O)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ $(DEP_LIBS)

$(B)/libburrow.a: $(CORE_O) $(BIND_O) $(B)/obj/api.o
	rm -f $@ && ar rcs $@ $^

$(B)/libburrow.so: $(CORE_O) $(BIND_O) $(B)/obj/api.o
	$(CC) -shared -Wl,-soname,libburrow.so.$(SOVER) -o $@.$(SOVER) $^ $(DEP_LIBS) $(LUA_LIBS)
	ln -sf libburrow.so.$(SOVER) $@

$(B)/burrow: $(B)/obj/main.o $(B)/obj/api.o $(CORE_O) $(BIND_O)
	$(CC) -rdynamic -o $@ $^ $(DEP_LIBS) $(LUA_LIBS)

# C tests link the core only: no Lua
$(B)/test_%: host/test/test_%.c $(CORE_O)
	$(CC) $(CFLAGS) -I$(SRC) -o $@ $^ $(DEP_LIBS)

# except the embedding API's, which links the whole library as an engine would
$(B)/test_capi: host/test/test_capi.c $(B)/libburrow.a
	$(CC) $(CFLAGS) $(LUA_CFLAGS) -Ihost/include -o $@ $^ $(DEP_LIBS) $(LUA_LIBS)

test: all
	@bash test/run-all.sh

run: all
	@$(B)/burrow mcp

bench: all
	@bash bench/run.sh

# ASan + UBSan build of everything, then the whole suite against it.
sanitize:
	$(MAKE) B=build/sanitize OPT="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined"
	BURROW_BUILD=build/sanitize ASAN_OPTIONS=detect_leaks=0 bash test/run-all.sh

clean:
	rm -rf $(B)
