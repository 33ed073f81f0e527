/*
 * lhost.h - core.host (lhost.c): a host of the embedding API with its own
 * worker, for ws:submit.
 */
#ifndef BURROW_LHOST_H
#define BURROW_LHOST_H

#include <lua.h>

/* Sets field "host" in the table on top of the stack. */
void bw_host_register(lua_State *L);

#endif
