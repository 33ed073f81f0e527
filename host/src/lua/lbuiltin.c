/*
 * lbuiltin.c - the Lua files built into the burrow binary (lbuiltin.h),
 * and core.builtin(path) / core.builtin_list(dir) for the Lua side's own
 * reads of its files (burrow.base.files): a built-in path is answered from the
 * binary, never from the disk.
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "lbuiltin.h"
#include "lcore.h"

int bw_builtin_have(void) { return bw_builtin_lua != NULL && bw_builtin_lua[0].name != NULL; }

int bw_builtin_path(const char *path) {
  size_t n = sizeof BW_BUILTIN_DIR - 1;
  return path && !strncmp(path, BW_BUILTIN_DIR, n) && (path[n] == '/' || path[n] == '\0');
}

const bw_builtin_file *bw_builtin_find(const char *path) {
  if (!bw_builtin_have() || !bw_builtin_path(path)) return NULL;
  const char *rest = path + sizeof BW_BUILTIN_DIR - 1;
  if (*rest != '/') return NULL;
  rest++;
  for (const bw_builtin_file *f = bw_builtin_lua; f->name; f++)
    if (!strcmp(f->name, rest)) return f;
  return NULL;
}

/* core.builtin(path) -> text | nil, message (path under BW_BUILTIN_DIR) */
static int l_builtin(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  const bw_builtin_file *f = bw_builtin_find(path);
  if (!f) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: not a file built into burrow", path);
    return 2;
  }
  lua_pushlstring(L, f->text, f->len);
  return 1;
}

/* core.builtin_list(dir) -> {name, ...}: the built-in files directly in
 * dir (a path under BW_BUILTIN_DIR), sorted as the table is */
static int l_builtin_list(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  lua_newtable(L);
  if (!bw_builtin_have() || !bw_builtin_path(dir)) return 1;
  const char *rest = dir + sizeof BW_BUILTIN_DIR - 1;
  if (*rest == '/') rest++;
  size_t n = strlen(rest);
  int i = 0;
  for (const bw_builtin_file *f = bw_builtin_lua; f->name; f++) {
    const char *name = f->name;
    if (n && (strncmp(name, rest, n) || name[n] != '/')) continue;
    name += n ? n + 1 : 0;
    if (strchr(name, '/')) continue; /* deeper */
    lua_pushstring(L, name);
    lua_rawseti(L, -2, ++i);
  }
  return 1;
}

void bw_lua_builtin_register(lua_State *L) {
  lua_pushcfunction(L, l_builtin);
  lua_setfield(L, -2, "builtin");
  lua_pushcfunction(L, l_builtin_list);
  lua_setfield(L, -2, "builtin_list");
  lua_pushstring(L, bw_builtin_have() ? BW_BUILTIN_DIR : "");
  lua_setfield(L, -2, "builtin_dir");
}
