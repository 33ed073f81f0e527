/*
 * lcore.h - entry point of the burrow.core Lua module (lcore.c).
 */
#ifndef BURROW_LCORE_H
#define BURROW_LCORE_H

#include <lua.h>

#include "../include/burrow.h"

int luaopen_burrow_core(lua_State *L);

#endif
