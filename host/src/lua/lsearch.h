/*
 * lsearch.h - grep and glob methods of the Roots class (lsearch.c).
 */
#ifndef BURROW_LSEARCH_H
#define BURROW_LSEARCH_H

#include <lua.h>

/* Adds roots:grep and roots:glob, and core.rules (lrules.c) to the module
 * table on top (call from luaopen_burrow_core). */
void bw_search_register(lua_State *L);

#endif
