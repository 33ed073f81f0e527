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

/* A host (own state) opened from burrow.open's options as JSON, its
 * package.path set to lua_path (the opener's: burrow.host, lhost.c). */
burrow_host *bw_open_json(const char *opts_json, const char *lua_path,
                          char **errmsg);

#endif
