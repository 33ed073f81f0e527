/* burrow.native: the rock's small C module for Lua 5.1, 5.2 and 5.3 (it
 * builds against 5.4 too): libburrow's C API (burrow.h) as the functions
 * burrow.bridge expects of a way in (lua/burrow/bridge.lua). It compiles
 * against the host's Lua headers and never links libburrow: it opens it
 * with dlopen(RTLD_DEEPBIND), so libburrow's own lua_* references (Lua
 * 5.4, its private state) bind to its liblua5.4 and not to the host's Lua,
 * whose symbols the host process exports. Only text and numbers cross:
 * nothing raised inside libburrow reaches the host's Lua.
 *
 *   local lib = assert(require("burrow.native").load(path_or_nil))
 *   local h = assert(lib.open(yaml_or_nil)); lib.call(h, "stat", '{"path":"."}')
 *
 * load(nil) opens $BURROW_LIB, else libburrow.so beside this module (the
 * rock installs both in its lib dir), else libburrow.so.0 from the loader's
 * path. An opened library is kept for the life of the process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lauxlib.h"
#include "lua.h"

#include "burrow.h"

#if LUA_VERSION_NUM < 502
#define luaL_setfuncs_compat(L, l) luaL_register(L, NULL, l)
#else
#define luaL_setfuncs_compat(L, l) luaL_setfuncs(L, l, 0)
#endif

#define HANDLE_MT "burrow.native.host"

/* libburrow's functions, looked up once per library file */
struct fns {
  char path[PATH_MAX];
  __typeof__(burrow_open) *open;
  __typeof__(burrow_call) *call;
  __typeof__(burrow_tools) *tools;
  __typeof__(burrow_version) *version;
  __typeof__(burrow_free) *free;
  __typeof__(burrow_close) *close;
  __typeof__(burrow_submit) *submit;
  __typeof__(burrow_fd) *fd;
  __typeof__(burrow_take) *take;
  __typeof__(burrow_cancel) *cancel;
  __typeof__(burrow_set_approver) *set_approver;
  __typeof__(burrow_take_ask) *take_ask;
  __typeof__(burrow_answer) *answer;
};

/* a workspace: the host and the library it came from */
struct handle {
  burrow_host *h;
  const struct fns *f;
};

/* Libraries opened so far (never closed: a host may outlive any table) */
#define MAX_LIBS 8
static struct fns *libs[MAX_LIBS];
static int nlibs;

static struct handle *check_handle(lua_State *L) {
  struct handle *hd = luaL_checkudata(L, 1, HANDLE_MT);
  if (!hd->h) luaL_error(L, "burrow.native: the workspace is closed");
  return hd;
}

/* a string libburrow allocated: pushed (or nil), then freed */
static void push_taken(lua_State *L, const struct fns *f, char *s) {
  if (s) {
    lua_pushstring(L, s);
    f->free(s);
  } else {
    lua_pushnil(L);
  }
}

static unsigned long long check_id(lua_State *L, int i) {
  lua_Number n = luaL_checknumber(L, i);
  return n >= 1 && n < 9007199254740992.0 ? (unsigned long long)n : 0;
}

static int l_close(lua_State *L) {
  struct handle *hd = luaL_checkudata(L, 1, HANDLE_MT);
  if (hd->h) {
    burrow_host *h = hd->h;
    hd->h = NULL;
    hd->f->close(h);
  }
  return 0;
}

static int l_call(lua_State *L) {
  struct handle *hd = check_handle(L);
  char *out = NULL;
  int rc = hd->f->call(hd->h, luaL_checkstring(L, 2), luaL_checkstring(L, 3), &out);
  lua_pushinteger(L, rc);
  push_taken(L, hd->f, out);
  return 2;
}

static int l_tools(lua_State *L) {
  struct handle *hd = check_handle(L);
  push_taken(L, hd->f, hd->f->tools(hd->h, luaL_checkstring(L, 2)));
  return 1;
}

static int l_submit(lua_State *L) {
  struct handle *hd = check_handle(L);
  unsigned long long id = hd->f->submit(hd->h, luaL_checkstring(L, 2), luaL_checkstring(L, 3), NULL, NULL);
  lua_pushnumber(L, (lua_Number)id);
  return 1;
}

static int l_fd(lua_State *L) {
  struct handle *hd = check_handle(L);
  lua_pushinteger(L, hd->f->fd(hd->h));
  return 1;
}

static int l_take(lua_State *L) {
  struct handle *hd = check_handle(L);
  unsigned long long id = 0;
  int rc = 0;
  char *out = NULL;
  if (hd->f->take(hd->h, &id, &rc, &out) != 1) return 0;
  lua_pushnumber(L, (lua_Number)id);
  lua_pushinteger(L, rc);
  push_taken(L, hd->f, out);
  return 3;
}

static int l_cancel(lua_State *L) {
  struct handle *hd = check_handle(L);
  unsigned long long id = check_id(L, 2);
  lua_pushboolean(L, id && hd->f->cancel(hd->h, id) == 1);
  return 1;
}

static int l_set_approver(lua_State *L) {
  struct handle *hd = check_handle(L);
  lua_Number ms = luaL_checknumber(L, 2);
  hd->f->set_approver(hd->h, NULL, NULL, ms > 0 && ms < INT_MAX ? (int)ms : ms > 0 ? INT_MAX : 0);
  return 0;
}

static int l_take_ask(lua_State *L) {
  struct handle *hd = check_handle(L);
  unsigned long long id = 0;
  char *out = NULL;
  if (hd->f->take_ask(hd->h, &id, &out) != 1) return 0;
  lua_pushnumber(L, (lua_Number)id);
  push_taken(L, hd->f, out);
  return 2;
}

static int l_answer(lua_State *L) {
  struct handle *hd = check_handle(L);
  unsigned long long id = check_id(L, 2);
  int allow = lua_toboolean(L, 3);
  const char *why = luaL_optstring(L, 4, NULL);
  lua_pushboolean(L, id && hd->f->answer(hd->h, id, allow, why) == 1);
  return 1;
}

/* lib.open(yaml|nil) -> handle | nil, message */
static int l_open(lua_State *L) {
  const struct fns *f = lua_touserdata(L, lua_upvalueindex(1));
  const char *config = luaL_optstring(L, 1, NULL);
  char *err = NULL;
  burrow_host *h = f->open(config, &err);
  if (!h) {
    lua_pushnil(L);
    if (err) push_taken(L, f, err);
    else lua_pushliteral(L, "burrow_open failed");
    return 2;
  }
  struct handle *hd = lua_newuserdata(L, sizeof *hd);
  hd->h = h;
  hd->f = f;
  luaL_getmetatable(L, HANDLE_MT);
  lua_setmetatable(L, -2);
  return 1;
}

static int l_version(lua_State *L) {
  const struct fns *f = lua_touserdata(L, lua_upvalueindex(1));
  lua_pushstring(L, f->version());
  return 1;
}

/* dlopen one candidate; on failure add its reason to the buffer */
static void *try_open(const char *name, luaL_Buffer *why) {
  void *handle = dlopen(name, RTLD_NOW | RTLD_DEEPBIND);
  if (!handle) {
    const char *e = dlerror();
    luaL_addstring(why, e ? e : name);
    luaL_addstring(why, "; ");
  }
  return handle;
}

#define LOOKUP(f, handle, name)                                               \
  ((f)->name = (__typeof__((f)->name))dlsym(handle, "burrow_" #name)) != NULL

/* load([path]) -> lib | nil, message */
static int l_load(lua_State *L) {
  const char *path = luaL_optstring(L, 1, NULL);
  if (!path || !*path) path = getenv("BURROW_LIB");
  if (path && !*path) path = NULL;
  char own[PATH_MAX] = "";
  if (!path) { /* libburrow.so beside this module */
    Dl_info info;
    if (dladdr((void *)l_load, &info) && info.dli_fname) {
      snprintf(own, sizeof own, "%s", info.dli_fname);
      char *slash = strrchr(own, '/');
      if (slash && (size_t)(slash - own) + sizeof "/libburrow.so" <= sizeof own)
        strcpy(slash, "/libburrow.so");
      else own[0] = '\0';
    }
  }
  const char *names[3] = {path, NULL, NULL};
  if (!path) {
    names[0] = own[0] ? own : NULL;
    names[1] = "libburrow.so.0";
    names[2] = "libburrow.so";
  }
  luaL_Buffer why;
  luaL_buffinit(L, &why);
  void *handle = NULL;
  const char *used = NULL;
  for (int i = 0; i < 3 && !handle; i++)
    if (names[i]) handle = try_open(used = names[i], &why);
  if (!handle) {
    luaL_pushresult(&why);
    lua_pushnil(L);
    lua_pushfstring(L, "burrow.native: cannot load libburrow (%s); install it (make install, or "
                       "the rock) or set BURROW_LIB or {lib = PATH}", lua_tostring(L, -2));
    return 2;
  }
  luaL_pushresult(&why);
  lua_pop(L, 1);
  struct fns *f = NULL;
  for (int i = 0; i < nlibs; i++)
    if (strcmp(libs[i]->path, used) == 0) f = libs[i];
  if (!f) {
    if (nlibs == MAX_LIBS) return luaL_error(L, "burrow.native: more than %d libburrow files opened", MAX_LIBS);
    f = calloc(1, sizeof *f);
    if (!f) return luaL_error(L, "burrow.native: out of memory");
    snprintf(f->path, sizeof f->path, "%s", used);
    if (!(LOOKUP(f, handle, open) && LOOKUP(f, handle, call) && LOOKUP(f, handle, tools) &&
          LOOKUP(f, handle, version) && LOOKUP(f, handle, free) && LOOKUP(f, handle, close) &&
          LOOKUP(f, handle, submit) && LOOKUP(f, handle, fd) && LOOKUP(f, handle, take) &&
          LOOKUP(f, handle, cancel) && LOOKUP(f, handle, set_approver) &&
          LOOKUP(f, handle, take_ask) && LOOKUP(f, handle, answer))) {
      free(f);
      lua_pushnil(L);
      lua_pushfstring(L, "burrow.native: %s lacks part of burrow.h (too old?)", used);
      return 2;
    }
    libs[nlibs++] = f;
  }
  static const luaL_Reg per_handle[] = {
      {"close", l_close},   {"call", l_call},         {"tools", l_tools},
      {"submit", l_submit}, {"fd", l_fd},             {"take", l_take},
      {"cancel", l_cancel}, {"set_approver", l_set_approver},
      {"take_ask", l_take_ask}, {"answer", l_answer}, {NULL, NULL}};
  lua_newtable(L);
  luaL_setfuncs_compat(L, per_handle);
  lua_pushlightuserdata(L, f);
  lua_pushcclosure(L, l_open, 1);
  lua_setfield(L, -2, "open");
  lua_pushlightuserdata(L, f);
  lua_pushcclosure(L, l_version, 1);
  lua_setfield(L, -2, "version");
  return 1;
}

__attribute__((visibility("default"))) int luaopen_burrow_native(lua_State *L) {
  if (luaL_newmetatable(L, HANDLE_MT)) {
    lua_pushcfunction(L, l_close);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushcfunction(L, l_load);
  lua_setfield(L, -2, "load");
  return 1;
}
