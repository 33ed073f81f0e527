/*
 * main.c - the burrow command. Everything past argument passing is Lua
 * (lua/burrow/transport/cli.lua); this file sets up the state and the process:
 * a higher fd limit for deep walks, SIGPIPE ignored so a vanished client is
 * an error, not a kill.
 */
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/resource.h>

#include "api.h"
#include "core.h"
#include "lcore.h"
#include "lhost.h"
#include "lserver.h"

static int traceback(lua_State *L) {
  luaL_traceback(L, L, lua_tostring(L, 1), 1);
  return 1;
}

/* The command's Lua heap is one prefaulted region (arena.c): a command spends
 * less of its life in page faults (docs/benchmarks.md, Start-up). Not
 * under AddressSanitizer, which must see Lua's blocks to check them. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#endif
static bw_arena *lua_heap(void) {
#ifdef UNDER_ASAN
  return NULL;
#else
  return bw_arena_open();
#endif
}

/* The allocator lua_close runs with: the process exits right after, so no
 * block is given back (that was ~2% of a `burrow call stat`'s
 * instructions; docs/benchmarks.md, Start-up). lua_close still
 * closes every to-be-closed variable and runs every finalizer, as before:
 * a stage aborted, a store closed, a thread joined. Not under
 * AddressSanitizer, whose leak check would see the blocks. */
#ifndef UNDER_ASAN
static void *exit_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  if (nsize == 0) return NULL;
  return bw_arena_alloc(ud, ptr, osize, nsize);
}
#endif

static void close_state(lua_State *L, bw_arena *heap) {
#ifndef UNDER_ASAN
  lua_setallocf(L, exit_alloc, heap);
#endif
  lua_close(L);
  bw_arena_close(heap);
}

/* A `burrow call` that ended well says so (its second result: it closed
 * its workspace, and its reply is written): the process then exits
 * without lua_close, whose walk over every object was ~6% of a `call
 * stat`'s instructions (docs/benchmarks.md, Start-up). Not while a stage
 * lives (its finalizer aborts what it staged), nor under AddressSanitizer
 * (its leak check). What else holds a finalizer at that point owns memory,
 * descriptors, locks or threads, which the exit gives back. */
static int ends_without_close(void) {
#ifdef UNDER_ASAN
  return 0;
#else
  return bw_lua_stages_live() == 0;
#endif
}

int main(int argc, char **argv) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  signal(SIGPIPE, SIG_IGN);
  /* jansson's hash seed from one getrandom, before its first object:
   * left to itself it opens and reads /dev/urandom (three system calls of
   * every start); 0 (getrandom failed) leaves it to do that */
  size_t seed = 0;
  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) seed = 0;
  json_object_seed(seed);
  bw_arena *heap = lua_heap();
  lua_State *L = luaL_newstate();
  if (!L) {
    fputs("burrow: out of memory\n", stderr);
    return 1;
  }
  lua_setallocf(L, bw_arena_alloc, heap);
  /* no collection while the modules load and the workspace opens: their
   * garbage is small and a start-up spent ~7% of its instructions marking
   * (callgrind; docs/benchmarks.md, Start-up). cli.lua restarts the
   * collector before a call runs or a server serves. */
  lua_gc(L, LUA_GCSTOP);
  bw_lua_prepare(L);
  /* the layers above the binding offer their modules (the binding knows none) */
  bw_lua_preload_module(L, "burrow.server", luaopen_burrow_server);
  bw_lua_preload_module(L, "burrow.host", luaopen_burrow_host);
  lua_pushcfunction(L, traceback);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "burrow.transport.cli");
  int rc = lua_pcall(L, 1, 1, 1);
  if (rc == LUA_OK) {
    lua_createtable(L, argc, 0);
    /* args[0] the command as run, as lua.c's arg[0]: the Inspector
     * command mcp's banner prints starts the same binary */
    for (int i = 0; i < argc; i++) {
      lua_pushstring(L, argv[i]);
      lua_rawseti(L, -2, i);
    }
    rc = lua_pcall(L, 1, 2, 1);
  }
  if (rc != LUA_OK) {
    fprintf(stderr, "burrow: %s\n", lua_tostring(L, -1));
    close_state(L, heap);
    return 1;
  }
  int status = (int)luaL_optinteger(L, -2, 0);
  if (!(lua_toboolean(L, -1) && ends_without_close()))
    close_state(L, heap);
  return status; /* exit flushes the C streams, Lua's io files among them */
}
