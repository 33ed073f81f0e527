/*
 * lcharset.h - core.charset_*, core.reindent, core.number_lines
 * (lcharset.c), added to the burrow.core table on the stack's top.
 */
#ifndef BURROW_LCHARSET_H
#define BURROW_LCHARSET_H

#include <lua.h>

void bw_charset_register(lua_State *L);

#endif
