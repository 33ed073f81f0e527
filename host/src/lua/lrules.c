/*
 * lrules.c - globs and policies' path rules as Lua values:
 *
 *   core.glob(pattern [, {casefold = false, basename = false, braces = true,
 *                         dir_itself = false}])
 *     -> burrow.Glob | nil, "pattern \"...\": reason", "INVALID_ARGUMENT"
 *   glob:match(path) -> boolean;  glob:close()
 *
 * The one glob matcher the Lua side uses (globmatch.c: linear in the path for a
 * given pattern, never backtracking); packs never turn a glob into a Lua
 * pattern. basename: a pattern of one segment is matched against the
 * path's last component; dir_itself: a trailing ** also matches the
 * directory itself (minimatch's a/ then ** matches a).
 *
 *   core.rules{ {patterns = {"**" .. "/.env"}, except = {...}, ops = {"read", "list"},
 *                casefold = false, id = 1}, ... }
 *     -> burrow.Rules | nil, "rule N: pattern \"...\": reason", "INVALID_ARGUMENT"
 *   rules:match(path [, op = "read"]) -> id | nil
 *   rules:close()
 *
 * The rules are compiled once (rules.c) and handed to walks as the option
 * `rules` of roots:grep, roots:glob and roots:list, whose worker threads
 * read them: a walk keeps the value on the Lua stack (so it cannot be
 * collected) and marks it busy (so close refuses) while it runs.
 */
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <string.h>

#include "lcore.h"
#include "lrules.h"

#define RULES_MT "burrow.Rules"
#define GLOB_MT "burrow.Glob"

typedef struct lglob {
  bw_glob *g; /* NULL once closed */
  int base;   /* match a one-segment pattern against the last component */
} lglob;

struct bw_lrules {
  bw_rules *rs; /* NULL once closed */
  int busy;     /* walks running on it */
};

static const char *const OPS[] = {"read", "list", "write", "delete", NULL};
static const int OP_BITS[] = {BW_OP_READ, BW_OP_LIST, BW_OP_WRITE, BW_OP_DELETE};
static const char *const FIELDS[] = {"patterns", "except", "ops", "casefold", "id", "root", NULL};

static int op_bit(const char *s) {
  for (int i = 0; OPS[i]; i++)
    if (!strcmp(s, OPS[i])) return OP_BITS[i];
  return 0;
}

/* nil, "rule N: ...", "INVALID_ARGUMENT" */
static int bad(lua_State *L, int i, const char *what) {
  lua_pushnil(L);
  lua_pushfstring(L, "rule %d: %s", i, what);
  lua_pushstring(L, "INVALID_ARGUMENT");
  return 3;
}

/* rule[k] as an array of strings (or one string) in a scratch userdata
 * left on the stack; the strings stay alive in the rule. NULL and *err set
 * if it is something else. */
static const char **strings(lua_State *L, int rule, const char *k, int *n,
                            const char **err) {
  *n = 0;
  lua_getfield(L, rule, k);
  int v = lua_gettop(L);
  if (lua_isnil(L, v)) return NULL;
  if (lua_type(L, v) == LUA_TSTRING) {
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, v);
    lua_rawseti(L, -2, 1);
    lua_replace(L, v);
  }
  if (!lua_istable(L, v)) {
    *err = lua_pushfstring(L, "%s must be a list of globs", k);
    return NULL;
  }
  lua_Integer len = luaL_len(L, v);
  if (len > INT_MAX / 2) len = INT_MAX / 2;
  const char **a = lua_newuserdatauv(L, (size_t)(len ? len : 1) * sizeof *a, 0);
  for (lua_Integer j = 1; j <= len; j++) {
    lua_geti(L, v, j);
    size_t sl;
    const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &sl) : NULL;
    lua_pop(L, 1); /* alive in the list */
    if (!s || strlen(s) != sl) {
      *err = lua_pushfstring(L, "%s[%d] must be a glob without NUL bytes", k, (int)j);
      return NULL;
    }
    a[j - 1] = s;
  }
  lua_remove(L, v); /* the list lives in the rule; the scratch stays */
  *n = (int)len;
  return a;
}

/* Parse and add rule i (the table at idx); 0, or an error message. */
static const char *add_rule(lua_State *L, bw_rules *rs, int idx, int i) {
  const char *err = NULL;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    int known = 0;
    for (int f = 0; k && FIELDS[f]; f++) known |= !strcmp(k, FIELDS[f]);
    if (!known) {
      const char *name = k ? k : luaL_typename(L, -1);
      return lua_pushfstring(
          L, "unknown field %s (use patterns, except, ops, casefold, id, root)", name);
    }
  }
  int npat, nexc, ops = 0;
  const char **pat = strings(L, idx, "patterns", &npat, &err);
  if (err) return err;
  if (!npat) return "patterns must list at least one glob";
  const char **exc = strings(L, idx, "except", &nexc, &err);
  if (err) return err;
  lua_getfield(L, idx, "ops");
  if (lua_isnil(L, -1)) {
    ops = BW_OP_READ | BW_OP_LIST | BW_OP_WRITE | BW_OP_DELETE;
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    ops = op_bit(lua_tostring(L, -1));
    if (!ops) return "ops must name read, list, write or delete";
  } else if (lua_istable(L, -1)) {
    lua_Integer len = luaL_len(L, -1);
    for (lua_Integer j = 1; j <= len; j++) {
      lua_geti(L, -1, j);
      int b = lua_type(L, -1) == LUA_TSTRING ? op_bit(lua_tostring(L, -1)) : 0;
      lua_pop(L, 1);
      if (!b) return "ops must name read, list, write or delete";
      ops |= b;
    }
    if (!ops) return "ops is empty";
  } else {
    return "ops must be a list of read, list, write, delete";
  }
  lua_pop(L, 1);
  lua_getfield(L, idx, "casefold");
  if (!lua_isnil(L, -1) && !lua_isboolean(L, -1)) return "casefold must be a boolean";
  int fold = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, idx, "id");
  int isint = 1;
  lua_Integer id = lua_isnil(L, -1) ? i : lua_tointegerx(L, -1, &isint);
  if (!lua_isnil(L, -1) && (!isint || id < 0 || id > INT_MAX))
    return "id must be an integer from 0";
  lua_pop(L, 1);
  lua_getfield(L, idx, "root"); /* the root whose objects it is about (nested roots) */
  lua_Integer root = lua_isnil(L, -1) ? -1 : lua_tointegerx(L, -1, &isint);
  if (!lua_isnil(L, -1) && (!isint || root < 1 || root > INT_MAX)) return "root must be a root's index";
  lua_pop(L, 1);
  const char *why;
  int rc = bw_rules_add(rs, pat, npat, exc, nexc, ops, fold, (int)id, &why);
  if (rc == BW_ENOMEM) return "out of memory";
  if (!rc && root > 0) bw_rules_scope(rs, (int)root);
  if (!rc) return NULL;
  int b = bw_rules_bad_index();
  if (b == INT_MIN) return lua_pushstring(L, why);
  if (b >= 0) return lua_pushfstring(L, "pattern \"%s\": %s", pat[b], why);
  return lua_pushfstring(L, "except \"%s\": %s", exc[-b - 1], why);
}

/* core.rules(list) */
static int l_rules(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  bw_lrules *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->rs = NULL; /* closed until built, as liolib's newprefile */
  u->busy = 0;
  luaL_setmetatable(L, RULES_MT);
  if (!(u->rs = bw_rules_new())) return bw_lua_fail(L, BW_ENOMEM);
  lua_Integer n = luaL_len(L, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    int top = lua_gettop(L);
    luaL_checkstack(L, 24, "rules");
    lua_geti(L, 1, i);
    if (!lua_istable(L, -1)) return bad(L, (int)i, "not a table");
    const char *err = add_rule(L, u->rs, top + 1, (int)i);
    if (err) return bad(L, (int)i, err);
    lua_settop(L, top);
  }
  return 1;
}

static bw_lrules *check_open(lua_State *L) {
  bw_lrules *u = luaL_checkudata(L, 1, RULES_MT);
  if (!u->rs) luaL_error(L, "attempt to use closed rules");
  return u;
}

/* rules:match(path [, op]) -> id | nil */
static int rules_match(lua_State *L) {
  bw_lrules *u = check_open(L);
  size_t len;
  const char *path = luaL_checklstring(L, 2, &len);
  int op = op_bit(luaL_optstring(L, 3, "read"));
  if (!op) return luaL_argerror(L, 3, "expected read, list, write or delete");
  int id = bw_rules_match(u->rs, path, len, op);
  if (id < 0) lua_pushnil(L);
  else lua_pushinteger(L, id);
  return 1;
}

/* close and __close: idempotent, refused while a walk reads the rules */
static int rules_close(lua_State *L) {
  bw_lrules *u = luaL_checkudata(L, 1, RULES_MT);
  if (u->busy) return luaL_error(L, "rules are in use by a walk");
  bw_rules_free(u->rs);
  u->rs = NULL;
  return 0;
}

/* __gc: unreachable, so no walk holds it (a walk keeps it on its stack) */
static int rules_gc(lua_State *L) {
  bw_lrules *u = luaL_checkudata(L, 1, RULES_MT);
  bw_rules_free(u->rs);
  u->rs = NULL;
  return 0;
}

static int rules_tostring(lua_State *L) {
  bw_lrules *u = luaL_checkudata(L, 1, RULES_MT);
  if (!u->rs) lua_pushliteral(L, "burrow.Rules (closed)");
  else lua_pushfstring(L, "burrow.Rules (%d rules)", bw_rules_count(u->rs));
  return 1;
}

bw_lrules *bw_lua_rules_opt(lua_State *L, int t, const char *key) {
  lua_getfield(L, t, key);
  if (lua_isnil(L, -1)) return NULL;
  bw_lrules *u = luaL_testudata(L, -1, RULES_MT);
  if (!u) luaL_error(L, "%s must be rules made by core.rules", key);
  if (!u->rs) luaL_error(L, "attempt to use closed rules");
  return u;
}

const bw_rules *bw_lua_rules_enter(bw_lrules *u) {
  if (!u) return NULL;
  u->busy++;
  return u->rs;
}

void bw_lua_rules_leave(bw_lrules *u) {
  if (u) u->busy--;
}

/* ---- core.glob ---- */

static const char *const GLOB_OPTS[] = {"casefold", "basename", "braces",
                                        "dir_itself", NULL};

/* opts[k] as a boolean (def when nil); raises on another type */
static int opt_bool(lua_State *L, int t, const char *k, int def) {
  if (lua_isnoneornil(L, t)) return def;
  lua_getfield(L, t, k);
  int v = lua_isnil(L, -1) ? def : lua_toboolean(L, -1);
  if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
    luaL_error(L, "bad option '%s' to 'glob' (boolean expected, got %s)", k,
               luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* core.glob(pattern [, opts]) */
static int l_glob(lua_State *L) {
  size_t len;
  const char *pat = luaL_checklstring(L, 1, &len);
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
      lua_pop(L, 1);
      const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
      int known = 0;
      for (int i = 0; GLOB_OPTS[i]; i++) known |= !strcmp(k, GLOB_OPTS[i]);
      if (!known)
        luaL_error(L, "unknown option '%s' to 'glob' (use casefold, basename, "
                      "braces, dir_itself)", k);
    }
  }
  int flags = (opt_bool(L, 2, "casefold", 0) ? BW_GLOB_CASEFOLD : 0) |
              (opt_bool(L, 2, "braces", 1) ? BW_GLOB_BRACES : 0) |
              (opt_bool(L, 2, "dir_itself", 0) ? BW_GLOB_DIR_ITSELF : 0);
  int base = opt_bool(L, 2, "basename", 0);
  lglob *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->g = NULL; /* closed until compiled */
  u->base = 0;
  luaL_setmetatable(L, GLOB_MT);
  const char *why = NULL;
  if (!(u->g = bw_glob_compile(pat, len, flags, &why))) {
    lua_pushnil(L);
    const char *shown = lua_pushlstring(L, pat, len > 64 ? 64 : len);
    lua_pushfstring(L, "pattern \"%s%s\": %s", shown, len > 64 ? "..." : "",
                    why);
    lua_remove(L, -2);
    lua_pushstring(L, "INVALID_ARGUMENT");
    return 3;
  }
  u->base = base && bw_glob_is_basename(u->g);
  return 1;
}

/* glob:match(path) -> boolean */
static int glob_match(lua_State *L) {
  lglob *u = luaL_checkudata(L, 1, GLOB_MT);
  size_t len;
  const char *path = luaL_checklstring(L, 2, &len);
  if (!u->g) return luaL_error(L, "attempt to use a closed glob");
  if (u->base) {
    const char *slash = memrchr(path, '/', len);
    if (slash) len -= (size_t)(slash + 1 - path), path = slash + 1;
  }
  lua_pushboolean(L, bw_glob_matchn(u->g, path, len));
  return 1;
}

/* close, __close and __gc: idempotent */
static int glob_close(lua_State *L) {
  lglob *u = luaL_checkudata(L, 1, GLOB_MT);
  bw_glob_free(u->g);
  u->g = NULL;
  return 0;
}

static int glob_tostring(lua_State *L) {
  lglob *u = luaL_checkudata(L, 1, GLOB_MT);
  lua_pushstring(L, u->g ? "burrow.Glob" : "burrow.Glob (closed)");
  return 1;
}

static const luaL_Reg glob_methods[] = {
    {"match", glob_match}, {"close", glob_close}, {NULL, NULL}};

static const luaL_Reg methods[] = {
    {"match", rules_match}, {"close", rules_close}, {NULL, NULL}};

void bw_rules_register(lua_State *L) {
  luaL_newmetatable(L, RULES_MT);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, rules_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, rules_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, rules_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_rules);
  lua_setfield(L, -2, "rules");
  luaL_newmetatable(L, GLOB_MT);
  lua_newtable(L);
  luaL_setfuncs(L, glob_methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, glob_close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, glob_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, glob_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_glob);
  lua_setfield(L, -2, "glob");
}
