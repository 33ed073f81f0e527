/*
 * lstore.h - shared_add for sandboxed policies (lstore.c).
 */
#ifndef BURROW_LSTORE_H
#define BURROW_LSTORE_H

#include <lua.h>

#include "counter.h"

/* Push on S (a sandbox state) the function shared_add over *c, which the
 * new closure then owns (*c is set to NULL once it does). */
void bw_store_push(lua_State *S, bw_counters **c);

/* core.store_open (on the module table at the top of L's stack) */
void bw_store_register(lua_State *L);

#endif
