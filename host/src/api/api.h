/*
 * api.h - Lua state set-up shared by the embedding API and the CLI.
 */
#ifndef BURROW_API_H
#define BURROW_API_H

#include <lua.h>

#include "burrow.h"

#ifndef BURROW_LUA_INSTALL_DIR
#define BURROW_LUA_INSTALL_DIR "/usr/local/share/burrow/lua"
#endif

/* Open the standard libraries, preload burrow.core, set package.path. */
void bw_lua_prepare(lua_State *L);

/* A host: on its own state (E NULL) or on a thread of the engine's state
 * E, opened by burrow.capi's function fn (open, open_file, open_json) from
 * config; package.path set to lua_path (NULL: where the Lua side is);
 * host_module, if not NULL, offered to its state as burrow.host (the
 * openers above: api_open.c, lhost.c). NULL and *errmsg on failure. */
burrow_host *bw_open_host(lua_State *E, const char *config, const char *fn,
                          const char *lua_path, lua_CFunction host_module,
                          char **errmsg);

#endif
