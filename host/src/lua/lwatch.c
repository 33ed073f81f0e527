/*
 * lwatch.c - core.watcher: the file watch (watch.c) as a Lua object.
 *
 *   local w = core.watcher(max_watches, interval_ms)
 *   w:add(roots, handle[, mount[, inotify]]) -> id | nil, detail, CODE
 *   w:follow(store, tenant) -> true: also hear the changes burrow's writes
 *                   publish through the store (changes.c) | nil, detail, CODE
 *   w:remove(id)
 *   w:read() -> events read from the kernel (flags set, nothing queued)
 *   w:due(now_s) -> {{id =, changed =, list =, gone =}...}, seconds until
 *                   the next held event (nil if none waits)
 *   w:budget(name, cap): its watches count against a cap shared by name
 *   w:id() -> an id another Lua state finds it by (core.watcher_find(id)),
 *            until w:drop(); w:close() drops this state's reference
 *   w:fd(), w:count(), w:close()
 */
#include <lauxlib.h>
#include <lua.h>

#include "changes.h"
#include "lcore.h"
#include "watch.h"

#define WATCHER_MT "burrow.Watcher"

typedef struct lwatcher {
  bw_watcher *w;
} lwatcher;

static lwatcher *check(lua_State *L) {
  lwatcher *lw = luaL_checkudata(L, 1, WATCHER_MT);
  if (!lw->w) luaL_error(L, "attempt to use a closed watcher");
  return lw;
}

static int w_gc(lua_State *L) {
  lwatcher *lw = luaL_checkudata(L, 1, WATCHER_MT);
  bw_watch_free(lw->w);
  lw->w = NULL;
  return 0;
}

/* core.watcher(max, interval_ms) */
static int l_watcher(lua_State *L) {
  lua_Integer max = luaL_optinteger(L, 1, 256);
  lua_Integer ms = luaL_optinteger(L, 2, 100);
  luaL_argcheck(L, max >= 1 && max <= 65536, 1, "max watches: 1 to 65536");
  luaL_argcheck(L, ms >= 0 && ms <= 3600000, 2, "interval: 0 to 3600000 ms");
  lwatcher *lw = lua_newuserdatauv(L, sizeof *lw, 0);
  lw->w = NULL; /* closed until made (liolib's order) */
  luaL_setmetatable(L, WATCHER_MT);
  lw->w = bw_watch_new((int)max, (int)ms);
  if (!lw->w) return luaL_error(L, "cannot start a file watch (inotify)");
  return 1;
}

/* w:id() -> its published id: another Lua state (an HTTP worker) finds
 * the same watcher by it (core.watcher_find), until w:drop() */
static int w_id(lua_State *L) {
  char id[33];
  int rc = bw_watch_publish(check(L)->w, id);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushstring(L, id);
  return 1;
}

static int w_drop(lua_State *L) {
  bw_watch_drop(check(L)->w);
  return 0;
}

/* core.watcher_find(id) -> the watcher published as id | nil */
static int l_watcher_find(lua_State *L) {
  bw_watcher *w = bw_watch_find(luaL_checkstring(L, 1));
  if (!w) return 0;
  lwatcher *lw = lua_newuserdatauv(L, sizeof *lw, 0);
  lw->w = w;
  luaL_setmetatable(L, WATCHER_MT);
  return 1;
}

/* w:budget(name, cap): its watches count against a cap it shares with
 * every watcher naming the same budget (a tenant's) */
static int w_budget(lua_State *L) {
  lwatcher *lw = check(L);
  lua_Integer cap = luaL_checkinteger(L, 3);
  luaL_argcheck(L, cap >= 0 && cap <= 1 << 30, 3, "budget: 0 to 2^30 watches");
  int rc = bw_watch_budget(lw->w, luaL_checkstring(L, 2), (int)cap);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* w:add(roots, handle[, mount[, inotify]]): with the root's mount the
 * watch also hears changes published through the store it follows
 * (w:follow); inotify false: only those (a root on a network volume) */
static int w_add(lua_State *L) {
  lwatcher *lw = check(L);
  const bw_handle *h = bw_lua_handle(L, 2, 3);
  const char *mount = luaL_optstring(L, 4, NULL);
  int inotify = lua_isnoneornil(L, 5) || lua_toboolean(L, 5);
  int id = 0;
  int rc = bw_watch_add_at(lw->w, h, mount, inotify, &id);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushinteger(L, id);
  return 1;
}

/* w:follow(store, tenant): hear tenant's changes published through store
 * (changes.c), for as long as the watcher lives */
static int w_follow(lua_State *L) {
  lwatcher *lw = check(L);
  bw_state *s = bw_lstate_at(L, 2);
  luaL_argcheck(L, s != NULL, 2, "an open state store");
  int rc = bw_changes_follow(lw->w, s, luaL_checkstring(L, 3));
  if (rc) return bw_lua_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int w_remove(lua_State *L) {
  lwatcher *lw = check(L);
  lua_pushboolean(L, bw_watch_remove(lw->w, (int)luaL_checkinteger(L, 2)) == 0);
  return 1;
}

/* w:view(id[, text]) -> the text kept with watch id ("" until set), after
 * setting it when given; nil for no such watch */
static int w_view(lua_State *L) {
  lwatcher *lw = check(L);
  int id = (int)luaL_checkinteger(L, 2);
  const char *set = luaL_optstring(L, 3, NULL);
  char out[BW_WATCH_VIEW];
  if (bw_watch_view(lw->w, id, set, out) != 0) return 0;
  lua_pushstring(L, out);
  return 1;
}

static int w_read(lua_State *L) {
  lwatcher *lw = check(L);
  lua_pushinteger(L, bw_watch_read(lw->w));
  return 1;
}

static int w_due(lua_State *L) {
  lwatcher *lw = check(L);
  double now = luaL_checknumber(L, 2);
  bw_watch_event ev[64];
  double next;
  lua_newtable(L);
  int total = 0, n;
  do { /* in rounds of 64, until none is due */
    n = bw_watch_due(lw->w, now * 1000.0, ev, 64, &next);
    for (int i = 0; i < n; i++) {
      lua_createtable(L, 0, 4);
      lua_pushinteger(L, ev[i].id);
      lua_setfield(L, -2, "id");
      lua_pushboolean(L, ev[i].what & BW_WATCH_CHANGED);
      lua_setfield(L, -2, "changed");
      lua_pushboolean(L, ev[i].what & BW_WATCH_LIST);
      lua_setfield(L, -2, "list");
      lua_pushboolean(L, ev[i].what & BW_WATCH_GONE);
      lua_setfield(L, -2, "gone");
      lua_rawseti(L, -2, ++total);
    }
  } while (n == 64);
  if (next < 0) lua_pushnil(L);
  else lua_pushnumber(L, next / 1000.0);
  return 2;
}

static int w_fd(lua_State *L) {
  lua_pushinteger(L, bw_watch_fd(check(L)->w));
  return 1;
}

static int w_count(lua_State *L) {
  lua_pushinteger(L, bw_watch_count(check(L)->w));
  return 1;
}

static const luaL_Reg methods[] = {
    {"add", w_add},   {"remove", w_remove}, {"read", w_read},   {"due", w_due},
    {"fd", w_fd},     {"count", w_count},   {"close", w_gc},    {"budget", w_budget},
    {"id", w_id},     {"drop", w_drop},     {"view", w_view},   {"follow", w_follow},
    {NULL, NULL}};

void bw_watch_register(lua_State *L) {
  luaL_newmetatable(L, WATCHER_MT);
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, w_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, w_gc);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_watcher);
  lua_setfield(L, -2, "watcher");
  lua_pushcfunction(L, l_watcher_find);
  lua_setfield(L, -2, "watcher_find");
}
