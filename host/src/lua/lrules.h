/*
 * lrules.h - core.rules, core.glob and their classes (lrules.c), and what
 * the walks' bindings (lsearch.c, lstage.c) need to take rules as an option.
 */
#ifndef BURROW_LRULES_H
#define BURROW_LRULES_H

#include <lua.h>

#include "search.h"

typedef struct bw_lrules bw_lrules;

/* Sets core.rules and core.glob on the module table at the top of the
 * stack and makes their classes (lmodule.c: with the first lookup of
 * core.rules or core.glob, a group of its own, as a call compiles its
 * policies' rules and a start to the initialize answer does not). */
void bw_rules_register(lua_State *L);

/* opts[key] for a walk: NULL if nil; raises if it is not an open Rules.
 * Pushes the value, which must stay on the stack while the walk runs:
 * worker threads read the rules. */
bw_lrules *bw_lua_rules_opt(lua_State *L, int t, const char *key);
/* Just before the walk (nothing may raise until the leave): the rules to
 * hand the core (NULL for NULL); rules:close() refuses meanwhile. */
const bw_rules *bw_lua_rules_enter(bw_lrules *u);
void bw_lua_rules_leave(bw_lrules *u);

#endif
