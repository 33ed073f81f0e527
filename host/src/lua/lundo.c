/*
 * lundo.c - undo stores (core/undo.c) as burrow.core.undo_store and
 * burrow.core.undo_find: the session's record of what files were before
 * its changes, outside the Lua state so an HTTP session's calls find it
 * from any worker (burrow.toolkit.undo is its one user); core.undo_shared, one
 * whose records live in the deployment's state store (any instance).
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "lcore.h"
#include "undo.h"

#define UNDO_MT "burrow.UndoStore"

static const char *const KINDS[] = {NULL,        "content", "absent", "truncate",
                                    "too_large", "no_room", "splice", NULL};

typedef struct box {
  bw_undo *u;
} box;

static bw_undo *check(lua_State *L) {
  box *b = luaL_checkudata(L, 1, UNDO_MT);
  if (!b->u) luaL_error(L, "the undo store is closed");
  return b->u;
}

static void push_store(lua_State *L, bw_undo *u) {
  box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->u = u;
  luaL_setmetatable(L, UNDO_MT);
}

/* A store's caps from the table at idx {cap=, max_records=, budget=name,
 * budget_cap=} (what: the function, for its errors); budget stays on the
 * stack. */
typedef struct caps {
  size_t cap, most, bcap;
  const char *budget;
} caps;

static caps read_caps(lua_State *L, int idx, const char *what) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_getfield(L, idx, "cap");
  lua_getfield(L, idx, "max_records");
  lua_getfield(L, idx, "budget");
  lua_getfield(L, idx, "budget_cap");
  lua_Integer cap = luaL_checkinteger(L, -4), most = luaL_checkinteger(L, -3);
  const char *budget = luaL_optstring(L, -2, NULL);
  lua_Integer bcap = luaL_optinteger(L, -1, 0);
  if (cap < 0 || most < 1 || bcap < 0)
    luaL_error(L, "%s: cap, max_records and budget_cap must be positive", what);
  return (caps){(size_t)cap, (size_t)most, (size_t)bcap, budget};
}

/* core.undo_store{cap=, max_records=, budget=name, budget_cap=} -> store */
static int l_undo_store(lua_State *L) {
  caps c = read_caps(L, 1, "undo_store");
  bw_undo *u = bw_undo_new(c.cap, c.most, c.budget, c.bcap);
  if (!u) return luaL_error(L, "undo_store: out of memory");
  push_store(L, u);
  return 1;
}

/* core.undo_named(id, {cap=, max_records=, budget=, budget_cap=}) ->
 * store: the one published as id (32 characters), made with these caps
 * when there is none (bw_undo_named) */
static int l_undo_named(lua_State *L) {
  size_t n;
  const char *id = luaL_checklstring(L, 1, &n);
  if (n != 32) return luaL_error(L, "undo_named: the id must be 32 characters");
  caps c = read_caps(L, 2, "undo_named");
  bw_undo *u = bw_undo_named(id, c.cap, c.most, c.budget, c.bcap);
  if (!u) return luaL_error(L, "undo_named: out of memory");
  push_store(L, u);
  return 1;
}

/* core.undo_shared(state, tenant, id, {cap=, max_records=, budget=,
 * entry_cost=, ttl=}) -> store: its records in the state store (a
 * core.state_open object) under tenant, "undo/<id>/...": every instance
 * that names the same id sees them (bw_undo_shared) */
static int l_undo_shared(lua_State *L) {
  bw_state *st = bw_lstate_at(L, 1);
  if (!st) return luaL_argerror(L, 1, "a state store (core.state_open)");
  size_t tn, n;
  const char *tenant = luaL_checklstring(L, 2, &tn), *id = luaL_checklstring(L, 3, &n);
  if (n != 32 || strlen(id) != n) return luaL_error(L, "undo_shared: the id must be 32 characters");
  if (strlen(tenant) != tn) return luaL_error(L, "undo_shared: a tenant holds no NUL byte");
  luaL_checktype(L, 4, LUA_TTABLE);
  lua_getfield(L, 4, "cap");
  lua_getfield(L, 4, "max_records");
  lua_getfield(L, 4, "budget");
  lua_getfield(L, 4, "entry_cost");
  lua_getfield(L, 4, "ttl");
  lua_Integer cap = luaL_checkinteger(L, -5), most = luaL_checkinteger(L, -4);
  lua_Integer budget = luaL_optinteger(L, -3, 0), cost = luaL_optinteger(L, -2, 0);
  lua_Number ttl = luaL_checknumber(L, -1);
  if (cap < 0 || most < 1 || budget < 0 || cost < 0 || !(ttl > 0))
    return luaL_error(L, "undo_shared: cap, max_records, budget, entry_cost and ttl must be positive");
  bw_undo *u = bw_undo_shared(st, tenant, id, (size_t)cap, (size_t)most, (size_t)budget, (size_t)cost, ttl);
  if (!u) return luaL_error(L, "undo_shared: out of memory");
  push_store(L, u);
  return 1;
}

/* core.undo_find(id) -> store | nil: one published by store:id() */
static int l_undo_find(lua_State *L) {
  bw_undo *u = bw_undo_find(luaL_checkstring(L, 1));
  if (!u) return 0;
  push_store(L, u);
  return 1;
}

/* store:id() -> its published id (other threads find it by it) */
static int u_id(lua_State *L) {
  char id[33];
  if (bw_undo_publish(check(L), id) < 0) return luaL_error(L, "undo store: no random bytes for its id");
  lua_pushstring(L, id);
  return 1;
}

/* store:record(key, kind, before, size, after[, cut[, group]]) -> the kind
 * kept (a splice: before was at offset size, where the change wrote cut
 * bytes; group: the change of several files it is one of) */
static int u_record(lua_State *L) {
  bw_undo *u = check(L);
  const char *key = luaL_checkstring(L, 2);
  int kind = luaL_checkoption(L, 3, NULL, KINDS + 1) + 1;
  size_t len = 0;
  const char *before = luaL_optlstring(L, 4, NULL, &len);
  lua_Integer size = luaL_optinteger(L, 5, 0);
  const char *after = luaL_checkstring(L, 6);
  if ((kind == BW_UNDO_CONTENT || kind == BW_UNDO_SPLICE) && !before)
    return luaL_error(L, "undo store: %s needs its bytes", KINDS[kind]);
  int got;
  if (kind == BW_UNDO_SPLICE) {
    lua_Integer cut = luaL_checkinteger(L, 7);
    if (size < 0 || cut < 0) return luaL_error(L, "undo store: a splice's offset and cut must not be negative");
    got = bw_undo_record_splice(u, key, before, len, size, cut, after);
  } else {
    const char *group = luaL_optstring(L, 8, NULL);
    got = bw_undo_record_group(u, key, kind, before ? before : "", len, size, after, group);
  }
  if (got == -BW_ENOMEM) return luaL_error(L, "undo store: out of memory");
  if (got < 0) return bw_lua_fail(L, -got); /* a shared store: nil, why, CODE */
  lua_pushstring(L, KINDS[got]);
  return 1;
}

/* store:peek(key) -> {kind, before, size, after[, cut]} | nil (none) |
 * nil, why, CODE (a shared store that does not answer) */
static int u_peek(lua_State *L) {
  bw_undo_entry e;
  int rc = bw_undo_peek(check(L), luaL_checkstring(L, 2), &e);
  if (rc == -BW_ENOMEM) return luaL_error(L, "undo store: out of memory");
  if (rc < 0) return bw_lua_fail(L, -rc);
  if (rc == 0) return 0;
  lua_createtable(L, 0, 5);
  lua_pushstring(L, KINDS[e.kind]);
  lua_setfield(L, -2, "kind");
  if (e.before) {
    lua_pushlstring(L, e.before, e.len);
    lua_setfield(L, -2, "before");
  }
  lua_pushinteger(L, (lua_Integer)e.size);
  lua_setfield(L, -2, "size");
  lua_pushstring(L, e.after);
  lua_setfield(L, -2, "after");
  if (e.kind == BW_UNDO_SPLICE) {
    lua_pushinteger(L, (lua_Integer)e.cut);
    lua_setfield(L, -2, "cut");
  }
  if (e.group) {
    lua_pushstring(L, e.group);
    lua_setfield(L, -2, "group");
  }
  bw_undo_entry_free(&e);
  return 1;
}

typedef struct keys {
  char **v;
  size_t n, cap;
  int oom;
} keys;

static void add_key(void *arg, const char *key) {
  keys *k = arg;
  if (k->oom) return;
  if (k->n == k->cap) {
    size_t cap = k->cap ? k->cap * 2 : 16;
    char **v = realloc(k->v, cap * sizeof *v);
    if (!v) {
      k->oom = 1;
      return;
    }
    k->v = v;
    k->cap = cap;
  }
  if (!(k->v[k->n] = strdup(key))) k->oom = 1;
  else k->n++;
}

/* store:members(group) -> {key...}: the keys whose records carry group,
 * newest first (copied under the lock, pushed after it) */
static int u_members(lua_State *L) {
  keys k = {0};
  bw_undo_members(check(L), luaL_checkstring(L, 2), add_key, &k);
  if (!k.oom) {
    lua_createtable(L, (int)k.n, 0);
    for (size_t i = 0; i < k.n; i++) {
      lua_pushstring(L, k.v[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  }
  for (size_t i = 0; i < k.n; i++) free(k.v[i]);
  free(k.v);
  if (k.oom) return luaL_error(L, "undo store: out of memory");
  return 1;
}

/* store:take_group(group) -> {key...} | false | nil, why, CODE: the files
 * of a change of several, in the change's order, for one undo of it
 * (bw_undo_group_take: a shared store's group record held for this call;
 * false when it is not there; EAGAIN while another call holds it) */
static int u_take_group(lua_State *L) {
  keys k = {0};
  long n = bw_undo_group_take(check(L), luaL_checkstring(L, 2), add_key, &k);
  if (n > 0 && !k.oom) {
    lua_createtable(L, (int)k.n, 0);
    for (size_t i = 0; i < k.n; i++) {
      lua_pushstring(L, k.v[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  }
  for (size_t i = 0; i < k.n; i++) free(k.v[i]);
  free(k.v);
  if (k.oom) return luaL_error(L, "undo store: out of memory");
  if (n < 0) return bw_lua_fail(L, (int)-n);
  if (n == 0) lua_pushboolean(L, 0);
  return 1;
}

/* store:put_group(group, {key...}) -> true | nil, why, CODE */
static int u_put_group(lua_State *L) {
  bw_undo *u = check(L);
  const char *group = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  size_t n = lua_rawlen(L, 3);
  if (n > 100000) return luaL_error(L, "put_group: too many keys");
  const char **v = calloc(n ? n : 1, sizeof *v);
  if (!v) return luaL_error(L, "undo store: out of memory");
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 3, (lua_Integer)i + 1);
    v[i] = lua_tostring(L, -1); /* kept alive by the table */
    lua_pop(L, 1);
    if (!v[i]) {
      free(v);
      return luaL_error(L, "put_group: keys are strings");
    }
  }
  int rc = bw_undo_group_put(u, group, v, n);
  free(v);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* store:group_done(group) -> true | nil, why, CODE: its undo went through
 * (a shared store's group record dropped) */
static int u_group_done(lua_State *L) {
  int rc = bw_undo_group_done(check(L), luaL_checkstring(L, 2));
  if (rc) return bw_lua_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* store:group_release(group) -> true | nil, why, CODE: its undo failed
 * (the hold let go; the record kept) */
static int u_group_release(lua_State *L) {
  int rc = bw_undo_group_release(check(L), luaL_checkstring(L, 2));
  if (rc) return bw_lua_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* store:pop(key) -> true | nil, why, CODE */
static int u_pop(lua_State *L) {
  int rc = bw_undo_pop(check(L), luaL_checkstring(L, 2));
  if (rc) return bw_lua_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* store:depth(key) -> records left | nil, why, CODE (a shared store that
 * does not answer: asked before a change, it refuses the change) */
static int u_depth(lua_State *L) {
  size_t d;
  int rc = bw_undo_check(check(L), luaL_checkstring(L, 2), &d);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushinteger(L, (lua_Integer)d);
  return 1;
}

/* store:shared() -> true when its records are in a state store */
static int u_shared(lua_State *L) {
  lua_pushboolean(L, bw_undo_is_shared(check(L)));
  return 1;
}

/* store:totals() -> bytes, records, the budget's bytes in all */
static int u_totals(lua_State *L) {
  size_t bytes, count, budget;
  bw_undo_totals(check(L), &bytes, &count, &budget);
  lua_pushinteger(L, (lua_Integer)bytes);
  lua_pushinteger(L, (lua_Integer)count);
  lua_pushinteger(L, (lua_Integer)budget);
  return 3;
}

/* store:drop(): forget every record and the published id (session end) */
static int u_drop(lua_State *L) {
  bw_undo_drop(check(L));
  return 0;
}

static int u_gc(lua_State *L) {
  box *b = luaL_checkudata(L, 1, UNDO_MT);
  bw_undo_unref(b->u);
  b->u = NULL;
  return 0;
}

static const luaL_Reg methods[] = {
    {"id", u_id},       {"record", u_record}, {"peek", u_peek},
    {"pop", u_pop},     {"depth", u_depth},   {"totals", u_totals},
    {"members", u_members},
    {"take_group", u_take_group},
    {"put_group", u_put_group},
    {"group_done", u_group_done},
    {"group_release", u_group_release},
    {"drop", u_drop},   {"shared", u_shared}, {NULL, NULL}};

void bw_undo_register(lua_State *L) {
  luaL_newmetatable(L, UNDO_MT);
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, u_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_undo_store);
  lua_setfield(L, -2, "undo_store");
  lua_pushcfunction(L, l_undo_find);
  lua_setfield(L, -2, "undo_find");
  lua_pushcfunction(L, l_undo_named);
  lua_setfield(L, -2, "undo_named");
  lua_pushcfunction(L, l_undo_shared);
  lua_setfield(L, -2, "undo_shared");
}
