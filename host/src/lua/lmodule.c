/*
 * lmodule.c - luaopen_burrow_core: the burrow.core table, each binding file
 * registering its part in turn. The one place that knows them all, so the
 * binding files depend on lcore.c (its classes and helpers) and never the
 * other way round. The layers above have modules of their own, offered to
 * a state from above: burrow.server (server/lopen.c: the stdio and HTTP
 * transports) and burrow.host (api/lhost.c: the embedding API's host).
 */
#include <lauxlib.h>
#include <lua.h>

#include "lcharset.h"
#include "lcore.h"
#include "ledit.h"
#include "ljson.h"
#include "lsearch.h"
#include "lstore.h"
#include "lyaml.h"

/* LPeg (Debian's liblua5.4-lpeg) where it is linked in (core.so, the rock,
 * libburrow): offered as package.preload.lpeg unless the state already has
 * an lpeg, so burrow.caps and burrow.patch_grammar need no lpeg.so (nor a
 * lpeg rock) on package.cpath. Weak: a build without it uses lpeg.so. */
extern int luaopen_lpeg(lua_State *L) __attribute__((weak));

static void preload_lpeg(lua_State *L) {
  if (!luaopen_lpeg) return;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  int loaded = lua_getfield(L, -1, "lpeg") != LUA_TNIL;
  lua_pop(L, 2);
  if (loaded) return;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  if (lua_getfield(L, -1, "lpeg") == LUA_TNIL) {
    lua_pushcfunction(L, luaopen_lpeg);
    lua_setfield(L, -3, "lpeg");
  }
  lua_pop(L, 2);
}

int luaopen_burrow_core(lua_State *L) {
  preload_lpeg(L);
  bw_core_open(L); /* the classes first: the others add methods to them */
  bw_json_register(L);
  bw_yaml_register(L);
  bw_sandbox_register(L);
  bw_search_register(L);
  bw_edit_register(L);
  bw_stage_register(L);
  bw_charset_register(L);
  bw_lines_register(L);
  bw_watch_register(L);
  bw_undo_register(L);
  bw_store_register(L);
  bw_state_register(L);
  bw_load_register(L);
  bw_lua_builtin_register(L);
  lua_pushstring(L, BURROW_VERSION_STRING);
  lua_setfield(L, -2, "version");
  return 1;
}
