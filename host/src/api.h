/*
 * api.h - Lua state set-up shared by the embedding API and the CLI.
 */
#ifndef BURROW_API_H
#define BURROW_API_H

#include <lua.h>

#ifndef BURROW_LUA_INSTALL_DIR
#define BURROW_LUA_INSTALL_DIR "/usr/local/share/burrow/lua"
#endif

/* Open the standard libraries, preload burrow.core, set package.path. */
void bw_lua_prepare(lua_State *L);

#endif
