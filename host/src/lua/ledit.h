/*
 * ledit.h - edit and mutation methods of the Roots class (ledit.c), and
 * the staged subtree operations (lstage.c).
 */
#ifndef BURROW_LEDIT_H
#define BURROW_LEDIT_H

#include <lua.h>
#include <stddef.h>

void bw_edit_register(lua_State *L);
/* roots:stage_copy, stage_move, stage_remove and the Stage class (lstage.c). */
void bw_stage_register(lua_State *L);
/* t[k] of an options table (t not a table: the default): a size (negative
 * is 0), a boolean. */
size_t bw_lua_opt_size(lua_State *L, int t, const char *k, size_t dflt);
int bw_lua_opt_bool(lua_State *L, int t, const char *k);
/* nil, detail, CODE of a tree operation that stopped part-way: the detail
 * says what it had done ("it stopped after DONE N file(s) ..."). */
int bw_lua_fail_partial(lua_State *L, int rc, const char *done, size_t files, size_t dirs);

#endif
