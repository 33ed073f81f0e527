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

#include "lcharset.h"
#include "lcore.h"
#include "ledit.h"
#include "ljson.h"
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

int luaopen_burrow_core(lua_State *L) {
  bw_lua_preload_lpeg(L); /* a plain Lua's require "burrow.core" (lload.c) */
  bw_core_open(L); /* the table and lcore.c's functions */
  bw_handle_register(L); /* the classes first: the others add methods to them */
  bw_roots_register(L);
  bw_file_register(L);
  bw_json_register(L);
  bw_yaml_register(L);
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
  bw_state_register(L);
  bw_load_register(L);
  bw_lua_builtin_register(L);
  lua_pushstring(L, BURROW_VERSION_STRING);
  lua_setfield(L, -2, "version");
  return 1;
}
