/*
 * lroots.c - the burrow.Roots class: a workspace's roots (core.roots),
 * opened and settled (what killed writers and crashed staged changes
 * left), an agent's path mapped onto one, stat, write, canonical,
 * Landlock, handles (lhandle.c, below); and bw_lua_target, how every
 * binding takes a root index and a path, or a Handle. roots:read and its
 * File are lfile.c's, above.
 */
#include <fcntl.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "lcore.h"
#include "stage.h"

#define ROOTS_MT "burrow.Roots"

typedef struct roots {
  int n;
  bw_root *r;
} roots;

static roots *check_roots(lua_State *L) {
  roots *rs = luaL_checkudata(L, 1, ROOTS_MT);
  bw_clear_detail();
  if (!rs->r) luaL_error(L, "attempt to use a closed workspace");
  return rs;
}

static const bw_root *check_root(lua_State *L, roots *rs, int arg) {
  lua_Integer i = luaL_checkinteger(L, arg);
  luaL_argcheck(L, i >= 1 && i <= rs->n, arg, "no such root");
  return &rs->r[i - 1];
}

/* A path argument: NUL bytes are kept so the core can refuse them. */
static const char *check_rel(lua_State *L, int arg) {
  size_t len;
  const char *s = luaL_checklstring(L, arg, &len);
  if (len > BW_PATH_MAX || strlen(s) != len)
    luaL_argerror(L, arg, "relative path must come from roots:map");
  return s;
}

const bw_root *bw_lua_root(lua_State *L, int roots_arg, int index_arg) {
  roots *rs = luaL_checkudata(L, roots_arg, ROOTS_MT);
  if (!rs->r) luaL_error(L, "attempt to use a closed workspace");
  bw_clear_detail();
  return check_root(L, rs, index_arg);
}

const char *bw_lua_rel(lua_State *L, int arg) { return check_rel(L, arg); }

void bw_lua_nest(lua_State *L, int roots_arg, const bw_root *r, bw_nest *out) {
  roots *rs = luaL_checkudata(L, roots_arg, ROOTS_MT);
  memset(out, 0, sizeof *out);
  out->self = -1;
  for (int k = 0; rs->r && k < rs->n && out->n < BW_NEST_MAX; k++) {
    if (rs->r[k].dev == r->dev && rs->r[k].ino == r->ino) { /* the walk's own */
      out->self = k + 1;
      continue;
    }
    out->v[out->n].dev = rs->r[k].dev;
    out->v[out->n].ino = rs->r[k].ino;
    out->v[out->n++].root = k + 1;
  }
}

void bw_lua_push_nested(lua_State *L, bw_nest *nest) {
  lua_newtable(L);
  for (size_t i = 0, j = 0; i < nest->n; i++) {
    char *met = atomic_load(&nest->v[i].met);
    if (!met) continue;
    lua_createtable(L, 0, 2);
    lua_pushstring(L, met);
    lua_setfield(L, -2, "path");
    lua_pushinteger(L, nest->v[i].root);
    lua_setfield(L, -2, "root");
    lua_rawseti(L, -2, (lua_Integer)++j);
  }
  bw_nest_clear(nest);
}

const bw_root *bw_lua_target(lua_State *L, int roots_arg, int arg, int view,
                             const char **rel) {
  roots *rs = luaL_checkudata(L, roots_arg, ROOTS_MT);
  if (!rs->r) luaL_error(L, "attempt to use a closed workspace");
  bw_clear_detail();
  if (lua_type(L, arg) == LUA_TNUMBER) {
    const bw_root *r = check_root(L, rs, arg);
    *rel = check_rel(L, arg + 1);
    return r;
  }
  return bw_lua_handle_view(L, roots_arg, arg, rs->r, rs->n, view, rel);
}

const bw_handle *bw_lua_handle(lua_State *L, int roots_arg, int arg) {
  roots *rs = luaL_checkudata(L, roots_arg, ROOTS_MT);
  if (!rs->r) luaL_error(L, "attempt to use a closed workspace");
  return bw_lua_handle_check(L, roots_arg, arg);
}

void bw_lua_roots_methods(lua_State *L, const luaL_Reg *m) { bw_lua_add_methods(L, ROOTS_MT, m); }

void bw_lua_roots_push_methods(lua_State *L) {
  luaL_getmetatable(L, ROOTS_MT);
  lua_getfield(L, -1, "__index");
  lua_remove(L, -2);
}

static int roots_gc(lua_State *L) {
  roots *rs = luaL_checkudata(L, 1, ROOTS_MT);
  for (int i = 0; rs->r && i < rs->n; i++) {
    if (!rs->r[i].readonly) bw_intent_tidy(&rs->r[i]); /* the journal, when empty */
    bw_root_close(&rs->r[i]);
  }
  free(rs->r);
  rs->r = NULL;
  rs->n = 0;
  return 0;
}

/* core.roots{{path=, mount=, readonly=}, ...} */
static int l_roots(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)luaL_len(L, 1);
  roots *rs = lua_newuserdatauv(L, sizeof *rs, 0);
  rs->n = 0;
  rs->r = NULL; /* closed until filled, like liolib's newprefile */
  luaL_setmetatable(L, ROOTS_MT);
  rs->r = calloc((size_t)(n > 0 ? n : 1), sizeof *rs->r);
  if (!rs->r) return luaL_error(L, "out of memory");
  for (int i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    luaL_checktype(L, -1, LUA_TTABLE);
    lua_getfield(L, -1, "path");
    lua_getfield(L, -2, "mount");
    lua_getfield(L, -3, "readonly");
    lua_getfield(L, -4, "resolver");
    const char *path = luaL_checkstring(L, -4);
    const char *mount = luaL_optstring(L, -3, NULL);
    int ro = lua_toboolean(L, -2);
    const char *resolver = luaL_optstring(L, -1, NULL);
    int backend = -1;
    if (resolver && !strcmp(resolver, "walk")) backend = BW_WALK;
    else if (resolver && !strcmp(resolver, "openat2")) backend = BW_OPENAT2;
    else if (resolver) luaL_error(L, "root %d: resolver must be openat2 or walk", i);
    int rc = bw_root_open(&rs->r[i - 1], path, mount, ro);
    if (rc == BW_OK) rs->r[i - 1].backend = backend;
    lua_pop(L, 5);
    if (rc) {
      const char *d = bw_detail();
      lua_pushnil(L);
      lua_pushstring(L, d ? d : "");
      lua_pushstring(L, bw_code_name(rc));
      bw_clear_detail();
      lua_createtable(L, 0, 2); /* nil, detail, CODE, {on = "root", index = i} */
      lua_pushliteral(L, "root");
      lua_setfield(L, -2, "on");
      lua_pushinteger(L, i);
      lua_setfield(L, -2, "index");
      return 4;
    }
    rs->n = i;
    for (int k = 0; k < i - 1; k++) /* one directory has one mode and one mount */
      if (rs->r[k].dev == rs->r[i - 1].dev && rs->r[k].ino == rs->r[i - 1].ino) {
        lua_pushnil(L);
        lua_pushfstring(L, "the same directory as root %d; serve it once, with one mode", k + 1);
        lua_pushstring(L, bw_code_name(BW_INVALID_ARGUMENT));
        lua_createtable(L, 0, 2);
        lua_pushliteral(L, "root");
        lua_setfield(L, -2, "on");
        lua_pushinteger(L, i);
        lua_setfield(L, -2, "index");
        return 4;
      }
  }
  for (int i = 0; i < rs->n; i++) { /* leftovers of killed writers and staged changes */
    if (rs->r[i].readonly) continue;
    bw_intent_settle_root(&rs->r[i]); /* records first: the sweep drops copy stages */
  }
  return 1;
}

/* roots:map(path) -> index, rel */
static int roots_map(lua_State *L) {
  roots *rs = check_roots(L);
  size_t len;
  const char *path = luaL_checklstring(L, 2, &len);
  char rel[BW_PATH_MAX + 1];
  int idx = 0, rc = bw_map_path(rs->r, rs->n, path, len, &idx, rel);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushinteger(L, idx + 1);
  lua_pushstring(L, rel);
  return 2;
}

static int roots_info(lua_State *L) {
  roots *rs = check_roots(L);
  const bw_root *r = check_root(L, rs, 2);
  lua_createtable(L, 0, 3);
  lua_pushstring(L, r->mount);
  lua_setfield(L, -2, "mount");
  lua_pushboolean(L, r->readonly);
  lua_setfield(L, -2, "readonly");
  lua_pushstring(L, bw_root_backend(r) == BW_WALK ? "walk" : "openat2");
  lua_setfield(L, -2, "resolver");
  if (r->alias) {
    lua_pushstring(L, r->alias);
    lua_setfield(L, -2, "alias");
  }
  return 1;
}

/* roots:landlock({reads}, {log dirs}) -> abi (0: no Landlock here)
 * Restricts the process to the roots (by their modes), files to read
 * (each a file, or a directory whose files may be read: Lua code, config,
 * tool and policy files) and directories to log into (the audit log). */
static int roots_landlock(lua_State *L) {
  roots *rs = check_roots(L);
  int nr = lua_istable(L, 2) ? (int)luaL_len(L, 2) : 0;
  int nw = lua_istable(L, 3) ? (int)luaL_len(L, 3) : 0;
  bw_landlock_rule *rules = calloc((size_t)(rs->n + nr + nw) + 1, sizeof *rules);
  if (!rules) return luaL_error(L, "out of memory");
  int n = 0, rc = BW_OK;
  for (int i = 0; i < rs->n; i++, n++) {
    rules[n].fd = rs->r[i].fd;
    rules[n].access = rs->r[i].readonly ? BW_LANDLOCK_READ : BW_LANDLOCK_ALL;
  }
  for (int t = 2; t <= 3 && rc == BW_OK; t++) {
    for (int i = 1; i <= (t == 2 ? nr : nw); i++) {
      lua_geti(L, t, i);
      const char *path = lua_tostring(L, -1);
      int fd = path ? open(path, O_PATH | O_CLOEXEC) : -1;
      lua_pop(L, 1);
      if (fd < 0) continue; /* a path that is not there needs no rule */
      rules[n].fd = fd;
      rules[n++].access = t == 3 ? BW_LANDLOCK_LOG : BW_LANDLOCK_FILES;
    }
  }
  int abi = 0;
  rc = bw_landlock(rules, n, &abi);
  for (int i = rs->n; i < n; i++) close(rules[i].fd);
  free(rules);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushinteger(L, abi);
  return 1;
}

/* roots:canonical(i, rel) -> the in-root path after following links */
static int roots_canonical(lua_State *L) {
  roots *rs = check_roots(L);
  const bw_root *r = check_root(L, rs, 2);
  char out[BW_PATH_MAX + 1];
  int rc = bw_canonical(r, check_rel(L, 3), out, sizeof out);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushstring(L, out);
  return 1;
}

static int roots_count(lua_State *L) {
  lua_pushinteger(L, check_roots(L)->n);
  return 1;
}

/* roots:stat(i, rel) -> table (lstat semantics) */
static int roots_stat(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_READ, &rel);
  struct stat st;
  char target[BW_PATH_MAX + 1];
  int rc = bw_stat(r, rel, &st, target, sizeof target);
  if (rc) return bw_lua_fail(L, rc);
  bw_lua_push_stat(L, &st);
  if (S_ISLNK(st.st_mode)) {
    lua_pushstring(L, target);
    lua_setfield(L, -2, "target");
  }
  return 1;
}

/* roots:handle(i, rel, nofollow) -> Handle, info | nil, detail, CODE
 * info: {root = index of the innermost root, rel = in-root path there,
 * exists, and the lstat/stat fields when it exists}. */
static int roots_handle(lua_State *L) {
  roots *rs = check_roots(L);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && i <= rs->n, 2, "no such root");
  const char *rel = check_rel(L, 3);
  int how = lua_toboolean(L, 4) ? BW_NOFOLLOW : 0;
  return bw_lua_handle_open(L, 1, rs->r, rs->n, (int)i - 1, rel, how);
}

static size_t opt_size(lua_State *L, int t, const char *k, size_t dflt) {
  lua_getfield(L, t, k);
  lua_Integer v = luaL_optinteger(L, -1, (lua_Integer)dflt);
  lua_pop(L, 1);
  return v < 0 ? 0 : (size_t)v;
}

/* roots:write(i, rel, data, {create_dirs=, expected_hash=}) */
static int roots_write(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &rel);
  size_t len;
  const char *data = luaL_checklstring(L, 4, &len);
  bw_write_opts o = {0};
  if (lua_istable(L, 5)) {
    lua_getfield(L, 5, "create_dirs");
    o.create_dirs = lua_toboolean(L, -1);
    lua_getfield(L, 5, "expected_hash");
    o.expected_hash = lua_tostring(L, -1);
    lua_pop(L, 2); /* the string stays alive in the options table */
    o.max_compare = opt_size(L, 5, "max_compare", 0);
  }
  bw_write_res res;
  int rc = bw_write_file(r, rel, data, len, &o, &res);
  if (rc == BW_HASH_MISMATCH) {
    int n = bw_lua_fail(L, rc);
    lua_pushstring(L, res.current_hash);
    return n + 1;
  }
  if (rc) return bw_lua_fail(L, rc);
  lua_createtable(L, 0, 2);
  lua_pushboolean(L, res.created);
  lua_setfield(L, -2, "created");
  lua_pushstring(L, res.hash);
  lua_setfield(L, -2, "content_hash");
  return 1;
}

static const luaL_Reg roots_methods[] = {
    {"map", roots_map},     {"info", roots_info},   {"count", roots_count},
    {"stat", roots_stat},   {"write", roots_write},
    {"canonical", roots_canonical},
    {"landlock", roots_landlock}, {"handle", roots_handle},
    {"close", roots_gc},    {NULL, NULL}};


void bw_roots_register(lua_State *L) {
  bw_lua_new_class(L, ROOTS_MT, roots_methods, roots_gc, 16); /* from five binding files */
  lua_pushcfunction(L, l_roots);
  lua_setfield(L, -2, "roots");
}
