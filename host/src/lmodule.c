/*
 * lmodule.c - luaopen_burrow_core: the burrow.core table, each binding file
 * registering its part in turn. The one place that knows them all, so the
 * binding files depend on lcore.c (its classes and helpers) and never the
 * other way round.
 */
#include <lauxlib.h>
#include <lua.h>

#include "lcharset.h"
#include "lcore.h"
#include "ledit.h"
#include "lhost.h"
#include "ljson.h"
#include "lsearch.h"
#include "lserver.h"
#include "lyaml.h"

int luaopen_burrow_core(lua_State *L) {
  bw_core_open(L); /* the classes first: the others add methods to them */
  bw_json_register(L);
  bw_stdio_register(L);
  bw_http_register(L);
  bw_yaml_register(L);
  bw_sandbox_register(L);
  bw_search_register(L);
  bw_edit_register(L);
  bw_charset_register(L);
  bw_watch_register(L);
  bw_load_register(L);
  bw_host_register(L);
  lua_pushstring(L, BURROW_VERSION_STRING);
  lua_setfield(L, -2, "version");
  return 1;
}
