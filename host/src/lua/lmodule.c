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

int luaopen_burrow_core(lua_State *L) {
  bw_lua_preload_lpeg(L); /* a plain Lua's require "burrow.core" (lload.c) */
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
