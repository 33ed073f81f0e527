/*
 * lopen.c - luaopen_burrow_server: the transports as a Lua module of their
 * own (burrow.server: stdio, http_start, token_hash), so the binding
 * (burrow.core) knows no transport: the layer registers itself from above.
 */
#include <lauxlib.h>
#include <lua.h>

#include "lserver.h"

int luaopen_burrow_server(lua_State *L) {
  lua_newtable(L);
  bw_stdio_register(L);
  bw_http_register(L, luaopen_burrow_server); /* its workers get this module too */
  return 1;
}
