/*
 * lmodule.c - luaopen_burrow_core: the burrow.core table, each binding file
 * registering its part in turn. The one place that knows them all, so the
 * binding files depend on lcore.c (its helpers) and the classes (lhandle.c,
 * lroots.c, lfile.c) and never the other way round. The layers above have modules of their own, offered to
 * a state from above: burrow.server (server/lopen.c: the stdio and HTTP
 * transports) and burrow.host (api/lhost.c: the embedding API's host).
 * bw_lua_preload sets a state burrow makes up to require all this: here,
 * above lload.c's searcher, so the two never call each other.
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "lcharset.h"
#include "lcore.h"
#include "ledit.h"
#include "ljson.h"
#include "lrules.h"
#include "lsearch.h"
#include "lstore.h"
#include "lyaml.h"

/* LPeg (Debian's liblua5.4-lpeg) where it is linked in (the binary,
 * libburrow.so, core.so): offered as package.preload.lpeg unless the state
 * already has an lpeg, so burrow.base.caps and burrow.toolkit.patch_grammar need no
 * lpeg.so (nor an lpeg rock) on package.cpath, a copied binary needs none,
 * and a host inside LuaJIT (burrow.ffi opens libburrow with RTLD_DEEPBIND)
 * runs the copy bound to libburrow's liblua5.4, not an lpeg.so whose lua_*
 * would bind to LuaJIT's 5.1 ones. Weak: a build without it finds lpeg.so
 * as usual. The one place that offers it: bw_lua_preload (a state burrow
 * makes) and luaopen_burrow_core (a plain Lua's require) both call this. */
extern int luaopen_lpeg(lua_State *L) __attribute__((weak));

void bw_lua_preload_lpeg(lua_State *L) {
  if (!luaopen_lpeg) return;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  int loaded = lua_getfield(L, -1, "lpeg") != LUA_TNIL;
  lua_pop(L, 2);
  if (loaded) return;
  bw_lua_preload_module(L, "lpeg", luaopen_lpeg);
}

void bw_lua_preload(lua_State *L) {
  bw_lua_preload_module(L, "burrow.core", luaopen_burrow_core);
  bw_lua_preload_lpeg(L);
  lua_getglobal(L, "package");
  if (lua_getfield(L, -1, "searchers") == LUA_TTABLE) {
    lua_pushvalue(L, -2); /* package */
    lua_pushcclosure(L, bw_lua_search, 1);
    lua_rawseti(L, -2, 2); /* in place of the stock Lua-file searcher */
  }
  lua_pop(L, 2);
}

/* The groups a start does not use (a start to the initialize answer, a
 * burrow call stat: roots, file, json, state, load, builtin; a call stat
 * core.rules too), ~100 k instructions of names and tables: registered
 * together with the first lookup that misses core or the Roots or File
 * method table they add to (an __index there), or a pairs over one of
 * them; core.rules and core.glob alone by their own names. The loader takes its
 * metatable off the three tables before it registers, so it runs once and
 * every later lookup is a plain table hit; a field that is nil after it is
 * nil as before. Their metatables (Stage, UndoStore, Watcher, Sandbox, the
 * YAML parser, grep's text) are named only in their own files, whose objects
 * are made by functions reached through these tables. */
static void register_later(lua_State *L) {
  bw_yaml_register(L); /* after json, which is not deferred */
  bw_sandbox_register(L);
  bw_search_register(L);
  bw_edit_register(L);
  bw_stage_register(L);
  bw_charset_register(L);
  bw_lines_register(L);
  bw_page_register(L);
  bw_watch_register(L);
  bw_undo_register(L);
  bw_store_register(L);
}

static void set_later_meta(lua_State *L, int core, int meta) {
  int t = lua_gettop(L);
  lua_pushvalue(L, core);
  bw_lua_roots_push_methods(L);
  bw_lua_file_push_methods(L);
  for (int i = t + 1; i <= t + 3; i++) {
    if (meta) lua_pushvalue(L, meta);
    else lua_pushnil(L);
    lua_setmetatable(L, i);
  }
  lua_settop(L, t);
}

/* core.rules and core.glob (lrules.c), a group of their own: a call
 * compiles its policies' rules with the first path it judges, a start to
 * the initialize answer judges none. With the core table at the top. */
static void register_rules(lua_State *L) {
  lua_pushliteral(L, "rules");
  int had = lua_rawget(L, -2) != LUA_TNIL;
  lua_pop(L, 1);
  if (!had) bw_rules_register(L);
}

/* upvalue 1: core. Off first, so a lookup a register function makes does
 * not come back here. */
static void load_later(lua_State *L) {
  int core = lua_upvalueindex(1);
  set_later_meta(L, core, 0);
  lua_pushvalue(L, core);
  register_rules(L);
  register_later(L);
  lua_pop(L, 1);
}

static int later_index(lua_State *L) { /* (t, k) */
  const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
  if (lua_rawequal(L, 1, lua_upvalueindex(1)) && (!strcmp(k, "rules") || !strcmp(k, "glob"))) {
    lua_pushvalue(L, 1);
    register_rules(L); /* the rest stays deferred */
  } else {
    load_later(L);
  }
  lua_settop(L, 2);
  lua_rawget(L, 1);
  return 1;
}

static int later_next(lua_State *L) {
  lua_settop(L, 2);
  if (lua_next(L, 1)) return 2;
  lua_pushnil(L);
  return 1;
}

static int later_pairs(lua_State *L) { /* (t): every field listed */
  load_later(L);
  lua_pushcfunction(L, later_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

static void defer_later(lua_State *L) { /* core at the top */
  int core = lua_gettop(L);
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, core);
  lua_pushcclosure(L, later_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, core);
  lua_pushcclosure(L, later_pairs, 1);
  lua_setfield(L, -2, "__pairs");
  set_later_meta(L, core, lua_gettop(L));
  lua_pop(L, 1);
}

int luaopen_burrow_core(lua_State *L) {
  bw_lua_preload_lpeg(L); /* a plain Lua's require "burrow.core" (lload.c) */
  bw_core_open(L); /* the table and lcore.c's functions */
  bw_handle_register(L); /* the classes first: the others add methods to them */
  bw_roots_register(L);
  bw_file_register(L);
  bw_json_register(L);
  bw_state_register(L);
  bw_load_register(L);
  bw_lua_builtin_register(L);
  lua_pushstring(L, BURROW_VERSION_STRING);
  lua_setfield(L, -2, "version");
  defer_later(L);
  return 1;
}
