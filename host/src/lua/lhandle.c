/*
 * lhandle.c - the burrow.Handle class: one resolution per object
 * (bw_resolve_handle), made by roots:handle (lroots.c, above) and taken
 * by every binding in place of a root index and a path (bw_lua_target).
 * A Handle keeps its Roots alive (its user value) and serves only them.
 */
#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <stdlib.h>

#include "core.h"
#include "lcore.h"

#define HANDLE_MT "burrow.Handle"

/* The resolution (bw_handle: ~12 KB of path buffers) lives outside the
 * Lua heap: as userdata, every call would add 12 KB to the collector's
 * debt and run a full cycle every few dozen calls. A few are kept for
 * reuse (a small malloc'd block of that size costs a consolidation of
 * glibc's fast bins each time). */
typedef struct lhandle {
  bw_handle *h; /* NULL once closed */
  int open;     /* h holds a resolution (its fds) */
  int root;     /* h->root, for h:root() after close */
  bw_root view[2]; /* what bw_lua_target lends the core, per view */
} lhandle;

enum { SPARE_HANDLES = 8 };
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static bw_handle *spare[SPARE_HANDLES];
static int nspare;

static bw_handle *handle_alloc(void) {
  bw_handle *h = NULL;
  pthread_mutex_lock(&spare_mu);
  if (nspare > 0) h = spare[--nspare];
  pthread_mutex_unlock(&spare_mu);
  return h ? h : malloc(sizeof *h);
}

static void handle_free(bw_handle *h) {
  pthread_mutex_lock(&spare_mu);
  if (nspare < SPARE_HANDLES) {
    spare[nspare++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&spare_mu);
  free(h);
}

static int handle_gc(lua_State *L) {
  lhandle *lh = luaL_checkudata(L, 1, HANDLE_MT);
  if (lh->open) bw_handle_close(lh->h);
  lh->open = 0;
  if (lh->h) handle_free(lh->h);
  lh->h = NULL;
  return 0;
}

/* roots:handle's work (lroots.c checks its arguments): a Handle tied
 * to the Roots at roots_arg (r, n: its roots), resolved from root at,
 * and its info table; or nil, detail, CODE. */
int bw_lua_handle_open(lua_State *L, int roots_arg, const bw_root *r, int n, int at,
                       const char *rel, int how) {
  lhandle *lh = lua_newuserdatauv(L, sizeof *lh, 1);
  lh->open = lh->root = 0;
  lh->h = NULL;
  luaL_setmetatable(L, HANDLE_MT);
  lua_pushvalue(L, roots_arg);
  lua_setiuservalue(L, -2, 1); /* the roots outlive the handle */
  bw_handle *h = lh->h = handle_alloc();
  if (!h) return luaL_error(L, "not enough memory");
  int rc = bw_resolve_handle(r, n, at, rel, how, h);
  if (rc) return bw_lua_fail(L, rc);
  lh->open = 1;
  lh->root = h->root;
  /* what policies and subtree checks use; stat gives the rest */
  lua_createtable(L, 0, 10);
  if (h->exists) {
    const struct stat *st = &h->st;
    lua_pushstring(L, bw_lua_type_name(st->st_mode));
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, (lua_Integer)st->st_size);
    lua_setfield(L, -2, "size");
    lua_pushinteger(L, (lua_Integer)st->st_nlink);
    lua_setfield(L, -2, "nlink");
    lua_pushinteger(L, (lua_Integer)st->st_dev);
    lua_setfield(L, -2, "dev");
    lua_pushinteger(L, (lua_Integer)st->st_ino);
    lua_setfield(L, -2, "ino");
  }
  lua_pushinteger(L, h->root + 1);
  lua_setfield(L, -2, "root");
  lua_pushstring(L, h->rel);
  lua_setfield(L, -2, "rel");
  lua_pushboolean(L, h->exists);
  lua_setfield(L, -2, "exists");
  if (h->dangling) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "dangling");
  }
  lua_pushboolean(L, r[h->root].readonly);
  lua_setfield(L, -2, "readonly");
  return 2;
}


/* bw_lua_target's Handle (lroots.c has checked the Roots at roots_arg:
 * r, n): lent as view. */
const bw_root *bw_lua_handle_view(lua_State *L, int roots_arg, int arg, const bw_root *r, int n,
                                  int view, const char **rel) {
  lhandle *lh = luaL_checkudata(L, arg, HANDLE_MT);
  if (!lh->open) luaL_argerror(L, arg, "closed handle");
  lua_getiuservalue(L, arg, 1);
  int mine = lua_rawequal(L, -1, roots_arg);
  lua_pop(L, 1);
  if (!mine || lh->h->root >= n) luaL_argerror(L, arg, "handle of another workspace");
  bw_handle_view(lh->h, r, view, &lh->view[view], rel);
  return &lh->view[view];
}

/* bw_lua_handle's Handle (lroots.c has checked the Roots). */
const bw_handle *bw_lua_handle_check(lua_State *L, int roots_arg, int arg) {
  lhandle *lh = luaL_checkudata(L, arg, HANDLE_MT);
  if (!lh->open) luaL_argerror(L, arg, "closed handle");
  lua_getiuservalue(L, arg, 1);
  int mine = lua_rawequal(L, -1, roots_arg);
  lua_pop(L, 1);
  if (!mine) luaL_argerror(L, arg, "handle of another workspace");
  bw_clear_detail();
  return lh->h;
}

/* h:root() -> the index of the innermost root holding the object */
static int handle_root(lua_State *L) {
  lhandle *lh = luaL_checkudata(L, 1, HANDLE_MT);
  lua_pushinteger(L, lh->root + 1);
  return 1;
}

static const luaL_Reg handle_methods[] = {
    {"close", handle_gc}, {"root", handle_root}, {NULL, NULL}};


void bw_handle_register(lua_State *L) { bw_lua_new_class(L, HANDLE_MT, handle_methods, handle_gc, 0); }
