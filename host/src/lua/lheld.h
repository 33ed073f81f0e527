/*
 * lheld.h - a search's results held as the core made them (lheld.c):
 * grep's match set and glob's entry set, printed where they leave
 * (set:json(), set:text(), set:tables()), and the table forms lsearch.c
 * gives when nothing is held.
 */
#ifndef BURROW_LHELD_H
#define BURROW_LHELD_H

#include <lua.h>

#include "search.h"

/* prefix + path as results name a file (bw_grep_path), pushed */
void bw_held_path(lua_State *L, const char *prefix, const char *path);

/* The content matches bw_gsel chooses (limit, max_bytes), as an array of
 * tables pushed; how many, *cut when max_bytes ended them. */
size_t bw_held_matches(lua_State *L, const bw_grep_res *r, const char *prefix, size_t limit,
                       int context, size_t max_bytes, int *cut);

/* The first n entries as an array of tables pushed. */
void bw_held_entries(lua_State *L, const bw_glob_res *res, const char *prefix, size_t n);

/* A match set pushed, *res moved into it (the caller no longer frees it):
 * the choice made now (*n, *cut); the set's copy of the result returned,
 * for the rest of the result table. */
const bw_grep_res *bw_held_grep(lua_State *L, bw_grep_res *res, const char *prefix, size_t limit,
                                int context, size_t max_bytes, size_t *n, int *cut);

/* An entry set pushed, *res moved into it: the entries within max_bytes
 * (*n, *cut: it cut some). */
const bw_glob_res *bw_held_glob(lua_State *L, bw_glob_res *res, const char *prefix,
                                size_t max_bytes, size_t *n, int *cut);

/* grep's files list (counted 0) or counts list (1) pushed as a set: its
 * own copy of the names (prefixed) and counts within max_bytes (0: all;
 * each costs bw_glist_cost, the first always kept; *cut: it cut some). */
void bw_held_list(lua_State *L, const bw_grep_res *r, const char *prefix, int counted,
                  size_t max_bytes, int *cut);

#endif
