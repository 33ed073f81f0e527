/*
 * lload.c - Lua files loaded with one open: require's searcher for Lua
 * files (api.c puts it in package.searchers) and core.loadfile (tool and
 * pack files), each the stock behaviour (paths, messages, BOM and '#'
 * line, text or bytecode) without the stock loader's three opens a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbuiltin.h"
#include "lcore.h"

/* The whole of a file opened once (fd closed), or NULL. */
static char *slurp(int fd, size_t *len, int *err) {
  struct stat st;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) cap = (size_t)st.st_size + 1;
  for (;;) {
    if (!buf || n == cap) {
      cap = !buf && cap ? cap : cap ? cap * 2 : 4096;
      char *b = realloc(buf, cap);
      if (!b) break;
      buf = b;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r > 0) {
      n += (size_t)r;
      continue;
    }
    if (r == 0) {
      close(fd);
      *len = n;
      return buf ? buf : malloc(1);
    }
    if (r < 0 && errno == EINTR) continue;
    *err = errno;
    break; /* a read error */
  }
  close(fd);
  free(buf);
  return NULL;
}

/* Load a Lua file (text or bytecode, as mode allows) opened once: a BOM
 * and a first '#' line skipped as luaL_loadfilex does, chunk name "@file".
 * Pushes the function (LUA_OK) or the message luaL_loadfilex would give. */
static int load_file(lua_State *L, const char *file, const char *mode,
                     int *opened) {
  if (bw_builtin_path(file)) { /* the binary's own, never the disk's */
    const bw_builtin_file *f = bw_builtin_find(file);
    *opened = f != NULL;
    if (!f) {
      lua_pushfstring(L, "cannot open %s: not built into burrow", file);
      return LUA_ERRFILE;
    }
    lua_pushfstring(L, "@%s", file);
    int rc = luaL_loadbufferx(L, f->text, f->len, lua_tostring(L, -1), mode);
    lua_remove(L, -2); /* the chunk name */
    return rc;
  }
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  *opened = fd >= 0;
  if (fd < 0) {
    lua_pushfstring(L, "cannot open %s: %s", file, strerror(errno));
    return LUA_ERRFILE;
  }
  size_t n = 0;
  int err = 0;
  char *buf = slurp(fd, &n, &err);
  if (!buf) {
    lua_pushfstring(L, "cannot read %s: %s", file, strerror(err ? err : ENOMEM));
    return LUA_ERRFILE;
  }
  const char *p = buf;
  size_t left = n;
  if (left >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3, left -= 3;
  if (left > 0 && *p == '#') { /* keep its newline: line numbers */
    const char *nl = memchr(p, '\n', left);
    left = nl ? left - (size_t)(nl - p) : 0;
    p = nl ? nl : p + 1;
  }
  lua_pushfstring(L, "@%s", file);
  int rc = luaL_loadbufferx(L, p, left, lua_tostring(L, -1), mode);
  free(buf);
  lua_remove(L, -2); /* the chunk name */
  return rc;
}

void bw_lua_preload_module(lua_State *L, const char *name, lua_CFunction open) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  if (lua_getfield(L, -1, name) == LUA_TNIL) {
    lua_pushcfunction(L, open);
    lua_setfield(L, -3, name);
  }
  lua_pop(L, 2);
}

int bw_lua_loadfile(lua_State *L, const char *file, const char *mode) {
  int opened;
  return load_file(L, file, mode, &opened);
}

/* require's searcher for Lua files, as the stock one (package.path, the
 * same messages, text or bytecode) but opening each file once: the stock
 * one opens it to test, then to load, then again in binary mode for
 * bytecode, ~13 system calls a module where this takes 4 (a start-up loads
 * ~30 modules). Upvalue 1: the package table. */
/* dst (cap bytes) = the template t (tl bytes) with each '?' replaced by
 * mod (its dots already slashes), NUL-ended; 0 if it does not fit. */
static int fill(char *dst, size_t cap, const char *t, size_t tl, const char *mod, size_t ml) {
  size_t n = 0;
  for (size_t i = 0; i < tl; i++) {
    size_t add = t[i] == '?' ? ml : 1;
    if (n + add >= cap) return 0;
    if (t[i] == '?') memcpy(dst + n, mod, ml);
    else dst[n] = t[i];
    n += add;
  }
  dst[n] = '\0';
  return 1;
}

int bw_lua_search(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  lua_getfield(L, lua_upvalueindex(1), "path");
  const char *path = lua_tostring(L, -1);
  if (!path) return luaL_error(L, "'package.path' must be a string");
  /* each file name made in a C buffer, not as Lua strings (two a template
   * tried, each interned: ~20 k instructions of a start's requires); a
   * name or template too long for them takes the Lua strings instead */
  char mod[256], buf[1024];
  size_t ml = strlen(name);
  int fits = ml < sizeof mod;
  for (size_t i = 0; fits && i <= ml; i++) mod[i] = name[i] == '.' ? '/' : name[i];
  for (const char *t = path; *t;) {
    const char *semi = strchr(t, ';');
    size_t tl = semi ? (size_t)(semi - t) : strlen(t);
    if (tl > 0) {
      const char *file = buf;
      int top = lua_gettop(L);
      if (!fits || !fill(buf, sizeof buf, t, tl, mod, ml)) {
        const char *m = luaL_gsub(L, name, ".", "/");
        lua_pushlstring(L, t, tl);
        file = luaL_gsub(L, lua_tostring(L, -1), "?", m);
      }
      int opened;
      int rc = load_file(L, file, NULL, &opened);
      if (rc == LUA_OK) {
        lua_pushstring(L, file);
        return 2; /* the loader and its file, as the stock searcher */
      }
      if (opened) /* as the stock one: what does not open is not there */
        return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s",
                          name, file, lua_tostring(L, -1));
      lua_settop(L, top); /* the message, and the long name's strings */
    }
    t += tl;
    if (*t == ';') t++;
  }
  /* not found: the names tried, as the stock searcher says them */
  const char *m = luaL_gsub(L, name, ".", "/");
  luaL_Buffer tried;
  luaL_buffinit(L, &tried);
  int first = 1;
  for (const char *t = path; *t;) {
    const char *semi = strchr(t, ';');
    size_t tl = semi ? (size_t)(semi - t) : strlen(t);
    if (tl > 0) { /* the buffer's box on top at each of its calls */
      luaL_addstring(&tried, first ? "no file '" : "'\n\tno file '");
      lua_pushlstring(L, t, tl);
      luaL_gsub(L, lua_tostring(L, -1), "?", m);
      lua_remove(L, -2); /* the template */
      luaL_addvalue(&tried); /* the file name, popped */
      first = 0;
    }
    t += tl;
    if (*t == ';') t++;
  }
  if (!first) luaL_addchar(&tried, '\'');
  luaL_pushresult(&tried);
  return 1;
}

/* core.loadfile(file [, mode [, env]]) -> function | nil, message: the
 * stock loadfile for a named file, opened once. */
static int l_loadfile(lua_State *L) {
  const char *file = luaL_checkstring(L, 1);
  const char *mode = luaL_optstring(L, 2, NULL);
  int env = !lua_isnone(L, 3) ? 3 : 0;
  if (bw_lua_loadfile(L, file, mode) != LUA_OK) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  if (env) { /* as luaB_loadfile: env becomes the first upvalue */
    lua_pushvalue(L, env);
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
  }
  return 1;
}

void bw_load_register(lua_State *L) {
  lua_pushcfunction(L, l_loadfile);
  lua_setfield(L, -2, "loadfile");
}
