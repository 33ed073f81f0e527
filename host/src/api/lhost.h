/*
 * lhost.h - burrow.host (lhost.c): a host of the embedding API with its own
 * worker, for ws:submit.
 */
#ifndef BURROW_LHOST_H
#define BURROW_LHOST_H

#include <lua.h>

/* luaopen_burrow_host: the embedding API's host as a Lua module of its own
 * ({host =}, for ws:submit); offered by the API's states and the binary
 * (package.preload), and for a plain Lua 5.4 the opener of host.so, beside
 * core.so (burrow/init.lua). */
__attribute__((visibility("default"))) int luaopen_burrow_host(lua_State *L);
/* Sets field "host" in the table on top of the stack. */
void bw_host_register(lua_State *L);

#endif
