/*
 * lstore.c - the shared counter a policy gets when the operator gives it a
 * store (a policy option, `store: FILE`): shared_add in the policy's own
 * _ENV, on the counter file the host opened (counter.c). The policy never
 * sees the path or the fd, only this function; it runs in the sandbox's
 * state, charged like any library call.
 *
 *   shared_add(key, delta [, limit [, window]]) -> added, value
 */
#include <lauxlib.h>
#include <lua.h>

#include "core.h"
#include "counter.h"
#include "lstore.h"

#define STORE_MT "burrow.sandbox.store"

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
