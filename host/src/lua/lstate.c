/*
 * lstate.c - the state store (core/state.c) as burrow.core.state_open and
 * burrow.core.state: per-principal state under (tenant, key), every entry
 * expiring. The store is a C object outside every Lua state; core.state()
 * is the process's own embedded one, so every Lua state of the process
 * (each HTTP worker's, an API host's) sees the same entries.
 *
 *   core.state_open{kind = "memory", max_entries_per_tenant =, max_bytes_per_tenant =,
 *                   max_entries =, max_bytes =} | {kind = "file", path =}
 *               | {kind = "redis", url = "redis://host:port/db" | "rediss://...",
 *                  password_file =, ca_file =, verify = true, timeout = s, connect_timeout = s,
 *                  pool =, max_entries_per_tenant =, max_bytes_per_tenant =} -> store
 *   core.state() -> the process's store (the same object in this state)
 *   st:add(tenant, key, delta, limit, ttl) -> added, value   (limit nil or -1: none)
 *   st:once(tenant, key, ttl)              -> first
 *   st:get(tenant, key)                    -> value, version | false, 0 (absent)
 *   st:cas(tenant, key, expected, value, ttl) -> done, version (expected 0: create)
 *   st:del(tenant, key [, expected])       -> deleted
 *   st:count(tenant) -> n;  st:stats() -> {entries =, bytes =};  st:kind();  st:close()
 *   st:publish(tenant, channel, message) -> true  (none on the file store: INVALID_ARGUMENT)
 *   st:subscribe(tenant, {channel, ...}) -> sub:  sub:fd() (poll it), sub:next() ->
 *       "message", channel, message | "gap" (some were missed) | nil (none waits), sub:close()
 *   st:change(tenant, mount, rel, gone) -> true: burrow's own write told to every
 *       instance's watches (changes.c)
 *
 * An expected failure (a full share, a wrong kind, the file's lock, Redis
 * unreachable: STORE_UNAVAILABLE) is
 * nil, "CODE: message", "CODE": never an answer a caller could take for
 * a yes. Wrong argument types and a closed store raise.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "lcore.h"
#include "state.h"

#define STATE_MT "burrow.State"
#define SUB_MT "burrow.StateSub"
#define DEFAULT_KEY "burrow.state.default"
#define OUTAGES_KEY "burrow.state.outages" /* a policy sandbox's calls the store did not answer */

typedef struct box {
  bw_state *s;
} box;

static bw_state *check(lua_State *L) {
  box *b = luaL_checkudata(L, 1, STATE_MT);
  if (!b->s) luaL_error(L, "attempt to use a closed state store");
  bw_clear_detail();
  return b->s;
}

static int fail(lua_State *L, int code) {
  const char *d = bw_detail();
  lua_pushnil(L);
  lua_pushfstring(L, "%s%s%s", bw_code_name(code), d ? ": " : "", d ? d : "");
  lua_pushstring(L, bw_code_name(code));
  bw_clear_detail();
  return 3;
}

/* A tenant or key argument: a string without NUL (the core's are C
 * strings); NULL after pushing the failure. */
static const char *name_arg(lua_State *L, int arg) {
  size_t n;
  const char *s = luaL_checklstring(L, arg, &n);
  if (strlen(s) != n) return NULL;
  return s;
}

static int bad_name(lua_State *L) {
  return fail(L, bw_fail(BW_INVALID_ARGUMENT, "state store: a tenant or key holds no NUL byte"));
}

static int st_add(lua_State *L) {
  bw_state *s = check(L);
  const char *tenant = name_arg(L, 2), *key = name_arg(L, 3);
  lua_Integer delta = luaL_checkinteger(L, 4);
  lua_Integer limit = luaL_optinteger(L, 5, -1);
  lua_Number ttl = luaL_checknumber(L, 6);
  if (!tenant || !key) return bad_name(L);
  int added = 0;
  int64_t value = 0;
  int rc = bw_state_add(s, tenant, key, delta, limit, ttl, &added, &value);
  if (rc) return fail(L, rc);
  lua_pushboolean(L, added);
  lua_pushinteger(L, value);
  return 2;
}

static int st_once(lua_State *L) {
  bw_state *s = check(L);
  const char *tenant = name_arg(L, 2), *key = name_arg(L, 3);
  lua_Number ttl = luaL_checknumber(L, 4);
  if (!tenant || !key) return bad_name(L);
  int first = 0;
  int rc = bw_state_once(s, tenant, key, ttl, &first);
  if (rc) return fail(L, rc);
  lua_pushboolean(L, first);
  return 1;
}

static int st_get(lua_State *L) {
  bw_state *s = check(L);
  const char *tenant = name_arg(L, 2), *key = name_arg(L, 3);
  if (!tenant || !key) return bad_name(L);
  char **val = bw_lua_new_box(L); /* freed by __gc should Lua raise */
  size_t len = 0;
  uint64_t version = 0;
  int rc = bw_state_get(s, tenant, key, val, &len, &version);
  if (rc) return fail(L, rc);
  if (!*val) {
    lua_pushboolean(L, 0);
    lua_pushinteger(L, 0);
    return 2;
  }
  bw_lua_push_boxed(L, val, len);
  lua_pushinteger(L, (lua_Integer)version);
  return 2;
}

static uint64_t version_arg(lua_State *L, int arg, int optional) {
  lua_Integer v = optional ? luaL_optinteger(L, arg, 0) : luaL_checkinteger(L, arg);
  luaL_argcheck(L, v >= 0, arg, "a version is 0 or more");
  return (uint64_t)v;
}

static int st_cas(lua_State *L) {
  bw_state *s = check(L);
  const char *tenant = name_arg(L, 2), *key = name_arg(L, 3);
  uint64_t expected = version_arg(L, 4, 0);
  size_t len;
  const char *val = luaL_checklstring(L, 5, &len);
  lua_Number ttl = luaL_checknumber(L, 6);
  if (!tenant || !key) return bad_name(L);
  int done = 0;
  uint64_t version = 0;
  int rc = bw_state_cas(s, tenant, key, expected, val, len, ttl, &done, &version);
  if (rc) return fail(L, rc);
  lua_pushboolean(L, done);
  lua_pushinteger(L, (lua_Integer)version);
  return 2;
}

static int st_del(lua_State *L) {
  bw_state *s = check(L);
  const char *tenant = name_arg(L, 2), *key = name_arg(L, 3);
  uint64_t expected = version_arg(L, 4, 1);
  if (!tenant || !key) return bad_name(L);
  int deleted = 0;
  int rc = bw_state_del(s, tenant, key, expected, &deleted);
  if (rc) return fail(L, rc);
  lua_pushboolean(L, deleted);
  return 1;
}

static int st_count(lua_State *L) {
  bw_state *s = check(L);
  const char *tenant = name_arg(L, 2);
  if (!tenant) return bad_name(L);
  size_t n = 0;
  int rc = bw_state_count(s, tenant, &n);
  if (rc) return fail(L, rc);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

static int st_stats(lua_State *L) {
  bw_state *s = check(L);
  bw_state_totals st;
  int rc = bw_state_stats(s, &st);
  if (rc) return fail(L, rc);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)st.entries);
  lua_setfield(L, -2, "entries");
  lua_pushinteger(L, (lua_Integer)st.bytes);
  lua_setfield(L, -2, "bytes");
  return 1;
}

static int st_kind(lua_State *L) {
  lua_pushstring(L, bw_state_kind(check(L)));
  return 1;
}

static int st_publish(lua_State *L) {
  bw_state *s = check(L);
  const char *tenant = name_arg(L, 2), *channel = name_arg(L, 3);
  size_t len;
  const char *msg = luaL_checklstring(L, 4, &len);
  if (!tenant || !channel) return bad_name(L);
  int rc = bw_state_publish(s, tenant, channel, msg, len);
  if (rc) return fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int st_change(lua_State *L) {
  bw_state *s = check(L);
  const char *tenant = name_arg(L, 2), *mount = name_arg(L, 3), *rel = name_arg(L, 4);
  int gone = lua_toboolean(L, 5);
  if (!tenant || !mount || !rel) return bad_name(L);
  int rc = bw_changes_publish(s, tenant, mount, rel, gone);
  if (rc) return fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

typedef struct subbox {
  bw_state_sub *sub;
} subbox;

static bw_state_sub *check_sub(lua_State *L) {
  subbox *b = luaL_checkudata(L, 1, SUB_MT);
  if (!b->sub) luaL_error(L, "attempt to use a closed subscription");
  return b->sub;
}

static int sub_close(lua_State *L) {
  subbox *b = luaL_checkudata(L, 1, SUB_MT);
  bw_state_unsubscribe(b->sub);
  b->sub = NULL;
  return 0;
}

static int sub_fd(lua_State *L) {
  lua_pushinteger(L, bw_state_sub_fd(check_sub(L)));
  return 1;
}

static int sub_next(lua_State *L) {
  bw_state_sub *sub = check_sub(L);
  char *channel, *msg;
  size_t len;
  int gap;
  int rc = bw_state_sub_next(sub, &channel, &msg, &len, &gap);
  if (rc == BW_EAGAIN) return 0;
  if (rc) return fail(L, rc);
  if (gap) {
    lua_pushliteral(L, "gap");
    return 1;
  }
  lua_pushliteral(L, "message");
  lua_pushstring(L, channel);
  lua_pushlstring(L, msg, len);
  free(channel);
  free(msg);
  return 3;
}

static int st_subscribe(lua_State *L) {
  bw_state *s = check(L);
  const char *tenant = name_arg(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  if (!tenant) return bad_name(L);
  const char *ch[BW_STATE_SUB_CHANNELS];
  lua_Integer n = luaL_len(L, 3);
  if (n < 1 || n > BW_STATE_SUB_CHANNELS)
    return fail(L, bw_fail(BW_INVALID_ARGUMENT, "state store: a subscription has 1 to 8 channels"));
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 3, i);
    ch[i - 1] = lua_tostring(L, -1); /* held by the table */
    lua_pop(L, 1);
    if (!ch[i - 1]) return luaL_argerror(L, 3, "channels are strings");
  }
  subbox *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->sub = NULL;
  luaL_setmetatable(L, SUB_MT);
  int rc = bw_state_subscribe(s, tenant, ch, (int)n, &b->sub);
  if (rc) return fail(L, rc);
  return 1;
}

/* __gc, __close and close: this object's reference dropped, once */
static int st_close(lua_State *L) {
  box *b = luaL_checkudata(L, 1, STATE_MT);
  bw_state_close(b->s);
  b->s = NULL;
  return 0;
}

/* A closed box with its metatable, opened by the caller. */
static box *new_box(lua_State *L) {
  box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->s = NULL;
  luaL_setmetatable(L, STATE_MT);
  return b;
}

/* A cap of the options at 1: absent, or an integer >= 1. */
static size_t cap_arg(lua_State *L, const char *name) {
  lua_getfield(L, 1, name);
  lua_Integer v = 0;
  if (!lua_isnil(L, -1)) {
    int ok;
    v = lua_tointegerx(L, -1, &ok);
    if (!ok || v < 1) luaL_error(L, "state_open: %s must be an integer of 1 or more", name);
  }
  lua_pop(L, 1);
  return (size_t)v;
}

/* An optional string option of the table at 1, left on the stack. */
static const char *string_opt(lua_State *L, const char *name) {
  lua_getfield(L, 1, name);
  if (lua_isnil(L, -1)) return NULL;
  if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "state_open: %s must be a string", name);
  return lua_tostring(L, -1);
}

/* An optional number of seconds > 0 (0: absent). */
static double seconds_opt(lua_State *L, const char *name) {
  lua_getfield(L, 1, name);
  double v = 0;
  if (!lua_isnil(L, -1)) {
    int ok;
    v = lua_tonumberx(L, -1, &ok);
    if (!ok || !(v > 0 && v <= 3600)) luaL_error(L, "state_open: %s is seconds, more than 0 and at most 3600", name);
  }
  lua_pop(L, 1);
  return v;
}

static int open_redis(lua_State *L, box **b, int *down) {
  const char *url = string_opt(L, "url");
  if (!url) return luaL_error(L, "state_open: a redis store needs a url");
  bw_state_redis_opts o = {
      .password_file = string_opt(L, "password_file"),
      .ca_file = string_opt(L, "ca_file"),
      .timeout = seconds_opt(L, "timeout"),
      .pool = cap_arg(L, "pool"),
      .max_entries_per_tenant = cap_arg(L, "max_entries_per_tenant"),
      .max_bytes_per_tenant = cap_arg(L, "max_bytes_per_tenant"),
  };
  o.connect_timeout = seconds_opt(L, "connect_timeout");
  if (!o.connect_timeout) o.connect_timeout = o.timeout;
  lua_getfield(L, 1, "verify");
  if (!lua_isnil(L, -1) && !lua_isboolean(L, -1)) return luaL_error(L, "state_open: verify must be a boolean");
  o.verify_off = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, 1, "outage_ok"); /* a server not reached now: open all the same */
  if (lua_toboolean(L, -1)) o.down = down;
  lua_pop(L, 1);
  *b = new_box(L);
  return bw_state_open_redis(url, &o, &(*b)->s);
}

/* core.state_open{kind = "memory" | "file" | "redis", ...} -> store | nil, message, code;
 * a redis store with outage_ok = true whose server was not reached: the
 * store and why (its calls STORE_UNAVAILABLE until the server answers) */
static int l_state_open(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "kind");
  const char *kind = luaL_optstring(L, -1, "memory");
  box *b;
  int rc;
  if (!strcmp(kind, "memory")) {
    bw_state_caps caps = {
        .max_entries_per_tenant = cap_arg(L, "max_entries_per_tenant"),
        .max_bytes_per_tenant = cap_arg(L, "max_bytes_per_tenant"),
        .max_entries = cap_arg(L, "max_entries"),
        .max_bytes = cap_arg(L, "max_bytes"),
    };
    b = new_box(L);
    rc = bw_state_open_memory(&caps, &b->s);
  } else if (!strcmp(kind, "file")) {
    lua_getfield(L, 1, "path");
    const char *path = lua_tostring(L, -1);
    if (!path) return luaL_error(L, "state_open: a file store needs a path");
    b = new_box(L);
    rc = bw_state_open_file(path, &b->s);
    if (rc) {
      const char *d = bw_detail();
      lua_pushnil(L);
      lua_pushfstring(L, "%s: %s%s%s", path, bw_code_name(rc), d ? ": " : "", d ? d : "");
      lua_pushstring(L, bw_code_name(rc));
      bw_clear_detail();
      return 3;
    }
  } else if (!strcmp(kind, "redis")) {
    int down = 0;
    rc = open_redis(L, &b, &down);
    if (!rc && down) { /* opened with outage_ok, its server not reached: why, second */
      const char *d = bw_detail();
      lua_pushstring(L, d ? d : "the server was not reached");
      bw_clear_detail();
      return 2;
    }
  } else {
    return luaL_error(L, "state_open: kind is \"memory\", \"file\" or \"redis\", not \"%s\"", kind);
  }
  if (rc) return fail(L, rc);
  return 1;
}

/* core.state() -> the process's embedded store; one object per Lua state
 * (kept in its registry), one C store for the process */
static int l_state(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, DEFAULT_KEY) == LUA_TUSERDATA &&
      ((box *)lua_touserdata(L, -1))->s)
    return 1; /* (one closed by st:close() is replaced) */
  lua_pop(L, 1);
  box *b = new_box(L);
  int rc = bw_state_default(&b->s);
  if (rc) return fail(L, rc);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, DEFAULT_KEY);
  return 1;
}

/* ------------------------------------------------ a policy's state */

/* state.NAME(...) in a policy's sandbox: the method, with the store's box
 * (upvalue 1) as its first argument */
static int api_thunk(lua_State *S) {
  lua_pushvalue(S, lua_upvalueindex(1));
  lua_insert(S, 1);
  int n = lua_tocfunction(S, lua_upvalueindex(2))(S);
  /* the store did not answer: counted, so a refusal the policy then gives
   * is told as the outage it is (bw_lstate_outages) */
  if (n == 3 && lua_isnil(S, -3) && lua_type(S, -1) == LUA_TSTRING &&
      strcmp(lua_tostring(S, -1), bw_code_name(BW_STORE_UNAVAILABLE)) == 0) {
    lua_Integer k = lua_getfield(S, LUA_REGISTRYINDEX, OUTAGES_KEY) == LUA_TNUMBER ? lua_tointeger(S, -1) : 0;
    lua_pop(S, 1);
    lua_pushinteger(S, k + 1);
    lua_setfield(S, LUA_REGISTRYINDEX, OUTAGES_KEY);
  }
  return n;
}

lua_Integer bw_lstate_outages(lua_State *S) {
  lua_Integer k = lua_getfield(S, LUA_REGISTRYINDEX, OUTAGES_KEY) == LUA_TNUMBER ? lua_tointeger(S, -1) : 0;
  lua_pop(S, 1);
  return k;
}

bw_state *bw_lstate_at(lua_State *L, int idx) {
  box *b = luaL_testudata(L, idx, STATE_MT);
  return b ? b->s : NULL;
}

void bw_lstate_push_api(lua_State *S, bw_state *s, void (*wrap)(lua_State *S)) {
  static const luaL_Reg api[] = {
      {"add", st_add}, {"once", st_once}, {"get", st_get}, {"cas", st_cas}, {"del", st_del}, {NULL, NULL},
  };
  if (luaL_newmetatable(S, STATE_MT)) { /* the sandbox's own: no methods, only the reference's end */
    lua_pushcfunction(S, st_close);
    lua_setfield(S, -2, "__gc");
    lua_pushboolean(S, 0);
    lua_setfield(S, -2, "__metatable");
  }
  lua_pop(S, 1);
  lua_createtable(S, 0, 5);
  box *b = new_box(S);
  b->s = bw_state_ref(s);
  for (const luaL_Reg *f = api; f->name; f++) {
    lua_pushvalue(S, -1);
    lua_pushcfunction(S, f->func);
    lua_pushcclosure(S, api_thunk, 2);
    if (wrap) wrap(S);
    lua_setfield(S, -3, f->name);
  }
  lua_pop(S, 1); /* the box: the closures hold it */
}

static const luaL_Reg methods[] = {
    {"add", st_add},     {"once", st_once},   {"get", st_get},   {"cas", st_cas},
    {"del", st_del},     {"count", st_count}, {"stats", st_stats}, {"kind", st_kind},
    {"close", st_close}, {"publish", st_publish}, {"subscribe", st_subscribe},
    {"change", st_change}, {NULL, NULL},
};

static const luaL_Reg sub_methods[] = {
    {"fd", sub_fd}, {"next", sub_next}, {"close", sub_close}, {NULL, NULL},
};

void bw_state_register(lua_State *L) {
  luaL_newmetatable(L, STATE_MT);
  lua_pushcfunction(L, st_close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, st_close);
  lua_setfield(L, -2, "__close");
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newmetatable(L, SUB_MT);
  lua_pushcfunction(L, sub_close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, sub_close);
  lua_setfield(L, -2, "__close");
  luaL_newlib(L, sub_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_state_open);
  lua_setfield(L, -2, "state_open");
  lua_pushcfunction(L, l_state);
  lua_setfield(L, -2, "state");
}
