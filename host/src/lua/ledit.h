/*
 * ledit.h - edit and mutation methods of the Roots class (ledit.c).
 */
#ifndef BURROW_LEDIT_H
#define BURROW_LEDIT_H

#include <lua.h>

void bw_edit_register(lua_State *L);

#endif
