/*
 * api.c - the embedding API of burrow.h, and the Lua state set-up shared
 * with the CLI: burrow.core preloaded, the Lua side found next to the
 * binary (source tree) or under the install prefix. The work itself is
 * done by lua/burrow/capi.lua; this file only moves strings across.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "lcore.h"

struct burrow_host {
  lua_State *L;
  int ws; /* registry ref of the workspace */
  burrow_approve_fn approve;
  void *approve_ud;
};

static int dir_has(const char *dir, const char *file) {
  char p[8192];
  int n = snprintf(p, sizeof p, "%s/%s", dir, file);
  return n > 0 && (size_t)n < sizeof p && access(p, R_OK) == 0;
}

/* Where the Lua side lives: $BURROW_LUA_DIR, ../lua beside the binary
 * (build tree), or ../share/burrow/lua (installed). */
static void lua_dir(char *out, size_t size) {
  const char *env = getenv("BURROW_LUA_DIR");
  if (env && *env) {
    snprintf(out, size, "%s", env);
    return;
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    const char *cands[] = {"/../lua", "/../../lua", "/../share/burrow/lua"};
    for (size_t i = 0; i < sizeof cands / sizeof *cands; i++) {
      snprintf(out, size, "%s%s", exe, cands[i]);
      if (dir_has(out, "burrow/init.lua")) return;
    }
  }
  snprintf(out, size, "%s", BURROW_LUA_INSTALL_DIR);
}

void bw_lua_prepare(lua_State *L) {
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_burrow_core);
  lua_setfield(L, -2, "burrow.core");
  lua_pop(L, 1);
  char dir[4096];
  lua_dir(dir, sizeof dir);
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua", dir, dir);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
}

const char *burrow_version(void) { return BURROW_VERSION_STRING; }

void burrow_free(void *p) { free(p); }

static char *dup_top(lua_State *L) {
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  char *out = malloc(n + 1);
  if (out) memcpy(out, s ? s : "", n + 1);
  return out;
}

burrow_host *burrow_open(const char *config, char **errmsg) {
  burrow_host *h = calloc(1, sizeof *h);
  if (!h || !(h->L = luaL_newstate())) {
    free(h);
    if (errmsg) *errmsg = strdup("out of memory");
    return NULL;
  }
  lua_State *L = h->L;
  bw_lua_prepare(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "burrow.capi");
  int rc = lua_pcall(L, 1, 1, 0);
  if (rc == LUA_OK) {
    lua_getfield(L, -1, "open");
    lua_pushstring(L, config);
    rc = lua_pcall(L, 1, 2, 0);
  }
  if (rc != LUA_OK || lua_isnil(L, -2)) {
    if (errmsg) *errmsg = dup_top(L);
    lua_close(L);
    free(h);
    return NULL;
  }
  lua_pop(L, 1);
  h->ws = luaL_ref(L, LUA_REGISTRYINDEX);
  return h;
}

/* capi.<fn>(ws, a, b) -> code, text */
static int capi(burrow_host *h, const char *fn, const char *a, const char *b,
                char **out) {
  lua_State *L = h->L;
  int top = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "burrow.capi");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, fn);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ws);
  lua_pushstring(L, a);
  lua_pushstring(L, b);
  int code = BURROW_TOOL_ERROR;
  if (lua_pcall(L, 3, 2, 0) != LUA_OK) {
    *out = dup_top(L);
  } else {
    code = (int)lua_tointeger(L, -2);
    *out = dup_top(L);
  }
  lua_settop(L, top);
  return code;
}

int burrow_call(burrow_host *h, const char *tool, const char *args_json,
                char **result_json) {
  if (!h || !tool || !result_json) return BURROW_USAGE;
  return capi(h, "call", tool, args_json ? args_json : "{}", result_json);
}

char *burrow_tools(burrow_host *h, const char *format) {
  char *out = NULL;
  if (!h) return NULL;
  if (capi(h, "tools", format ? format : "mcp", NULL, &out) != BURROW_OK) {
    free(out);
    return NULL;
  }
  return out;
}

/* ws.approve for a C callback: (req, reason) -> allowed */
static int approve_bridge(lua_State *L) {
  burrow_host *h = lua_touserdata(L, lua_upvalueindex(1));
  if (!h->approve) return 0;
  const char *f[3] = {"tool", "operation", "path"}, *v[3];
  for (int i = 0; i < 3; i++) {
    lua_getfield(L, 1, f[i]);
    v[i] = lua_tostring(L, -1); /* kept alive by the request table */
    lua_pop(L, 1);
  }
  int ok = h->approve(h->approve_ud, v[0] ? v[0] : "", v[1] ? v[1] : "",
                      v[2] ? v[2] : "", luaL_optstring(L, 2, ""));
  lua_pushboolean(L, ok);
  return 1;
}

void burrow_set_approval(burrow_host *h, burrow_approve_fn fn, void *ud) {
  if (!h) return;
  h->approve = fn;
  h->approve_ud = ud;
  lua_rawgeti(h->L, LUA_REGISTRYINDEX, h->ws);
  if (fn) {
    lua_pushlightuserdata(h->L, h);
    lua_pushcclosure(h->L, approve_bridge, 1);
  } else {
    lua_pushnil(h->L);
  }
  lua_setfield(h->L, -2, "approve");
  lua_pop(h->L, 1);
}

void burrow_close(burrow_host *h) {
  if (!h) return;
  lua_close(h->L);
  free(h);
}
