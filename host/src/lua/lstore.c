/*
 * lstore.c - the shared counter a policy gets when the operator gives it a
 * store (a policy option, `store: FILE`): shared_add in the policy's own
 * _ENV, on the counter file the host opened (counter.c). The policy never
 * sees the path or the fd, only this function; it runs in the sandbox's
 * state, charged like any library call.
 *
 *   shared_add(key, delta [, limit [, window]]) -> added, value
 *
 * And the host's own use of such a file: core.store_open(path) -> a store
 * whose once(key, expires) marks a key until it expires (the approval
 * states of MCP 2026-07-28, used once across every instance sharing it).
 */
#include <lauxlib.h>
#include <lua.h>

#include "core.h"
#include "counter.h"
#include "lstore.h"

#include <time.h>

#define STORE_MT "burrow.sandbox.store"
#define HOST_STORE_MT "burrow.store"

static int store_add(lua_State *S) {
  bw_counters **pc = lua_touserdata(S, lua_upvalueindex(1));
  const char *key = luaL_checkstring(S, 1);
  lua_Integer delta = luaL_checkinteger(S, 2);
  lua_Integer limit = luaL_optinteger(S, 3, -1);
  lua_Integer window = luaL_optinteger(S, 4, 0);
  if (!*pc) return luaL_error(S, "shared_add: the store is closed");
  int64_t value = 0;
  int added = 0;
  int rc = bw_counter_add(*pc, key, window, delta, limit, &value, &added);
  if (rc) {
    const char *d = bw_detail();
    return luaL_error(S, "shared_add: %s%s%s", bw_code_name(rc), d ? ": " : "", d ? d : "");
  }
  lua_pushboolean(S, added);
  lua_pushinteger(S, (lua_Integer)value);
  return 2;
}

static int store_gc(lua_State *S) {
  bw_counters **pc = luaL_checkudata(S, 1, STORE_MT);
  bw_counters_close(*pc);
  *pc = NULL;
  return 0;
}

void bw_store_push(lua_State *S, bw_counters **c) {
  bw_counters **pc = lua_newuserdatauv(S, sizeof *pc, 0);
  *pc = NULL;
  if (luaL_newmetatable(S, STORE_MT)) {
    lua_pushcfunction(S, store_gc);
    lua_setfield(S, -2, "__gc");
    lua_pushboolean(S, 0);
    lua_setfield(S, -2, "__metatable");
  }
  lua_setmetatable(S, -2);
  *pc = *c; /* the userdata owns it from here */
  *c = NULL;
  lua_pushcclosure(S, store_add, 1);
}

/* ------------------------------------------------ the host's store */

static int host_once(lua_State *L) {
  bw_counters **pc = luaL_checkudata(L, 1, HOST_STORE_MT);
  const char *key = luaL_checkstring(L, 2);
  lua_Integer expires = luaL_checkinteger(L, 3);
  if (!*pc) return luaL_error(L, "store: closed");
  int first = 0;
  int rc = bw_counter_once(*pc, key, expires, (int64_t)time(NULL), &first);
  if (rc) {
    const char *d = bw_detail();
    lua_pushnil(L);
    lua_pushfstring(L, "%s%s%s", bw_code_name(rc), d ? ": " : "", d ? d : "");
    return 2;
  }
  lua_pushboolean(L, first);
  return 1;
}

static int host_gc(lua_State *L) {
  bw_counters **pc = luaL_checkudata(L, 1, HOST_STORE_MT);
  bw_counters_close(*pc);
  *pc = NULL;
  return 0;
}

/* core.store_open(path) -> store | nil, message */
static int host_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  bw_counters **pc = lua_newuserdatauv(L, sizeof *pc, 0);
  *pc = NULL;
  if (luaL_newmetatable(L, HOST_STORE_MT)) {
    lua_pushcfunction(L, host_gc);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    lua_pushcfunction(L, host_once);
    lua_setfield(L, -2, "once");
    lua_setfield(L, -2, "__index");
  }
  lua_setmetatable(L, -2);
  int rc = bw_counters_open(path, pc);
  if (rc) {
    const char *d = bw_detail();
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s%s%s", path, bw_code_name(rc), d ? ": " : "", d ? d : "");
    return 2;
  }
  return 1;
}

void bw_store_register(lua_State *L) {
  lua_pushcfunction(L, host_open);
  lua_setfield(L, -2, "store_open");
}
