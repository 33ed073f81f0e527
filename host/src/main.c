/*
 * main.c - the burrow command. Everything past argument passing is Lua
 * (lua/burrow/cli.lua); this file sets up the state and the process:
 * a higher fd limit for deep walks, SIGPIPE ignored so a vanished client is
 * an error, not a kill.
 */
#include <lauxlib.h>
#include <lua.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "api.h"
#include "core.h"

static int traceback(lua_State *L) {
  luaL_traceback(L, L, lua_tostring(L, 1), 1);
  return 1;
}

/* The stock allocator (realloc/free), and huge-page advice for a block of
 * BW_HUGE_MIN (2 MiB) or more: those are a big read's text becoming a Lua string,
 * written once right after (bw_huge_advise). */
static void *lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p && nsize >= BW_HUGE_MIN) bw_huge_advise(p, nsize);
  return p;
}

int main(int argc, char **argv) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  signal(SIGPIPE, SIG_IGN);
  lua_State *L = luaL_newstate();
  if (!L) {
    fputs("burrow: out of memory\n", stderr);
    return 1;
  }
  lua_setallocf(L, lua_alloc, NULL); /* realloc/free like the stock one */
  bw_lua_prepare(L);
  lua_pushcfunction(L, traceback);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "burrow.cli");
  int rc = lua_pcall(L, 1, 1, 1);
  if (rc == LUA_OK) {
    lua_createtable(L, argc, 0);
    for (int i = 1; i < argc; i++) {
      lua_pushstring(L, argv[i]);
      lua_rawseti(L, -2, i);
    }
    rc = lua_pcall(L, 1, 1, 1);
  }
  if (rc != LUA_OK) {
    fprintf(stderr, "burrow: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  int status = (int)luaL_optinteger(L, -1, 0);
  lua_close(L);
  return status;
}
