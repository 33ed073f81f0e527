/*
 * lpattern.c - burrow.pattern_test, a Lua module for the specs only (never
 * installed, not in core.so): the policy sandbox's pattern bound
 * (host/src/core/patcost.c) asked directly, outside any sandbox, so
 * spec/policy/sandbox_core_spec.lua can check the analysis against the
 * stock matcher and the bound's size. Built as
 * build/test-lua/burrow/pattern_test.so with its own copy of patcost.o.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "patcost.h"

/* string.find's positions: pos relative to len, clipped to [1, len + 1) */
static lua_Integer pos_from(lua_Integer pos, size_t len) {
  if (pos > 0) return pos;
  if (pos == 0 || pos < -(lua_Integer)len) return 1;
  return (lua_Integer)len + pos + 1;
}

/* bound(fn, s, p [, init [, per_match]]) -> the bound from
 * the pattern alone and the one from the subject too (nil if it cannot
 * run), in steps; fn is "find", "match", "gmatch" or "gsub"; init 1-based;
 * per_match: the steps each match adds.
 * states(s, p) -> for each start 1..#s+1 what the analysis
 * knows of a try of p there as gmatch reads it ('^' a plain byte): "F",
 * "S<end>" (the match's last byte), "U" or "M" (patcost.h). */
static int pattern_call(lua_State *L, bw_patcall *c, int fn) {
  static const char *const fns[] = {"find", "match", "gmatch", "gsub", NULL};
  static const int ids[] = {BW_PAT_FIND, BW_PAT_MATCH, BW_PAT_GMATCH, BW_PAT_GSUB};
  memset(c, 0, sizeof *c);
  c->fn = fn >= 0 ? fn : ids[luaL_checkoption(L, 1, NULL, fns)];
  int a = fn >= 0 ? 1 : 2;
  c->s = luaL_checklstring(L, a, &c->n);
  c->p = luaL_checklstring(L, a + 1, &c->lp);
  lua_Integer init = pos_from(luaL_optinteger(L, a + 2, 1), c->n);
  luaL_argcheck(L, c->fn != BW_PAT_GSUB || init == 1, a + 2, "gsub starts at 1");
  luaL_argcheck(L, init <= (lua_Integer)c->n + 1, a + 2, "past the end");
  c->init = (size_t)init - 1;
  c->per_match = (uint64_t)luaL_optinteger(L, a + 3, 0);
  return 0;
}

static int l_bound(lua_State *L) {
  bw_patcall c;
  pattern_call(L, &c, -1);
  lua_pushinteger(L, (lua_Integer)bw_pat_coarse(&c, BW_PAT_MAXCAP));
  size_t bytes;
  bw_pat_plan(&c, &bytes);
  void *mem = bytes ? malloc(bytes) : NULL;
  if (!mem) {
    lua_pushnil(L);
    return 2;
  }
  lua_pushinteger(L, (lua_Integer)bw_pat_bound(&c, mem, BW_PAT_MAXCAP));
  free(mem);
  return 2;
}

static int l_states(lua_State *L) {
  bw_patcall c;
  pattern_call(L, &c, BW_PAT_GMATCH);
  size_t bytes;
  bw_pat_plan(&c, &bytes);
  void *mem = bytes ? malloc(bytes) : NULL;
  if (!mem) return luaL_error(L, "no memory for the analysis");
  bw_pat_bound(&c, mem, BW_PAT_MAXCAP);
  lua_createtable(L, (int)c.n + 1, 0);
  for (size_t i = c.init; i <= c.n; i++) {
    size_t end;
    int st = bw_pat_state(&c, mem, i, &end);
    if (st == 'S') lua_pushfstring(L, "S%I", (lua_Integer)end);
    else lua_pushfstring(L, "%c", st);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  free(mem);
  return 1;
}

__attribute__((visibility("default"))) int luaopen_burrow_pattern_test(lua_State *L) {
  static const luaL_Reg fns[] = {{"bound", l_bound}, {"states", l_states}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}
