/*
 * lsandbox.c - a Lua state of its own for operators' policy code
 * (core.sandbox): a restricted global table, an allocator with a memory
 * cap, an instruction budget per call, text-only chunks, and Lua string
 * patterns whose worst case is bounded before they run (a pattern runs
 * inside one C call where no hook fires). Values cross between the host
 * state and the sandbox by copy: strings, numbers, booleans and tables of
 * them. A policy that errors, loops or runs out of memory makes the call
 * fail with a message; the caller turns that into a deny.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lcore.h"

#define SANDBOX_MT "burrow.Sandbox"
#define BUDGET_KEY "burrow.sandbox.budget"

enum { COPY_DEPTH = 16, HOOK_EVERY = 1000, COPY_VALUES = 10000 };
static const size_t COPY_BYTES = 1 << 20; /* strings crossing in one copy */
static const double PATTERN_LIMIT = 1e8; /* worst-case steps of one match */

typedef struct sandbox {
  lua_State *S;
  size_t used, limit;
  long budget, left; /* instructions per call, and what is left */
} sandbox;

/* ---- the capped allocator ---- */

static void *sb_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  sandbox *sb = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    free(ptr);
    sb->used -= old;
    return NULL;
  }
  if (nsize > old && sb->used + (nsize - old) > sb->limit) return NULL;
  void *p = realloc(ptr, nsize);
  if (p) sb->used = sb->used - old + nsize;
  return p;
}

/* ---- the instruction budget ---- */

/* Once the budget is spent the hook fires on every instruction and raises
 * each time: a pcall inside the policy may catch one error, but the next
 * instruction of its caller raises again, so the call unwinds for good. */
static void budget_hook(lua_State *S, lua_Debug *ar) {
  (void)ar;
  lua_getfield(S, LUA_REGISTRYINDEX, BUDGET_KEY);
  sandbox *sb = lua_touserdata(S, -1);
  lua_pop(S, 1);
  if (!sb || (sb->left -= HOOK_EVERY) >= 0) return;
  lua_sethook(S, budget_hook, LUA_MASKCOUNT, 1);
  luaL_error(S, "instruction budget exceeded (%d)", (int)sb->budget);
}

/* ---- patterns with a bounded worst case ---- */

/* Upper bound of the steps Lua's matcher may take for pattern p on a
 * subject of n bytes: every start (unless anchored), times every length
 * each quantified item (*, +, -) may take, twice per ?, and once more the
 * subject for a back-reference (%1..%9). gmatch and gsub try every start,
 * which is the unanchored case. */
static double pattern_cost(const char *p, size_t pl, size_t n, int anchored) {
  double cost = anchored ? 1 : (double)n + 1;
  int backref = 0;
  for (size_t i = 0; i < pl; i++) {
    char c = p[i];
    if (c == '%' && i + 1 < pl) {
      i++;
      if (p[i] >= '1' && p[i] <= '9') backref = 1;
      else if (p[i] == 'b') i += 2; /* %bxy: linear in the subject */
      else if (p[i] == 'f' && i + 1 < pl && p[i + 1] == '[') {
        while (i < pl && p[i] != ']') i++;
      }
    } else if (c == '[') {
      i++;
      if (i < pl && p[i] == '^') i++;
      if (i < pl && p[i] == ']') i++;
      while (i < pl && p[i] != ']') i += p[i] == '%' ? 2 : 1;
    }
    if (i + 1 < pl) {
      char q = p[i + 1];
      if (q == '*' || q == '+' || q == '-') cost *= (double)n + 1;
      else if (q == '?') cost *= 2;
    }
    if (cost > PATTERN_LIMIT) return cost;
  }
  return backref ? cost * ((double)n + 1) : cost;
}

enum { PAT_FIND, PAT_MATCH, PAT_GMATCH, PAT_GSUB };

/* string.find/match/gmatch/gsub: the cost checked first, then the real one.
 * Only find has a plain flag (its 4th argument). */
static int guarded(lua_State *S) {
  int kind = (int)lua_tointeger(S, lua_upvalueindex(2));
  int plain = kind == PAT_FIND && lua_toboolean(S, 4);
  if (!plain && lua_type(S, 2) == LUA_TSTRING) {
    size_t n, pl;
    luaL_checklstring(S, 1, &n);
    const char *p = luaL_checklstring(S, 2, &pl);
    int anchored = pl > 0 && p[0] == '^' && kind != PAT_GMATCH;
    if (pattern_cost(p, pl, n, anchored) > PATTERN_LIMIT)
      return luaL_error(S, "pattern too costly for the policy sandbox on a "
                           "subject of %d bytes (use fewer * + - items, "
                           "anchor it with ^, or find with plain = true)",
                        (int)n);
  }
  lua_pushvalue(S, lua_upvalueindex(1));
  lua_insert(S, 1);
  lua_call(S, lua_gettop(S) - 1, LUA_MULTRET);
  return lua_gettop(S);
}

/* size("100MB") -> 100000000: the host's size syntax, for options */
static int sb_size(lua_State *S) {
  if (lua_type(S, 1) == LUA_TNUMBER) {
    lua_settop(S, 1);
    return 1;
  }
  const char *s = luaL_checkstring(S, 1);
  char *end;
  double v = strtod(s, &end);
  while (*end == ' ') end++;
  static const struct { const char *u; double m; } units[] = {
      {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  for (size_t i = 0; end != s && v >= 0 && i < sizeof units / sizeof *units; i++)
    if (!strcmp(end, units[i].u)) {
      lua_pushinteger(S, (lua_Integer)(v * units[i].m));
      return 1;
    }
  return luaL_error(S, "invalid size %s (use a number with B, KB, MB, GB, KiB, MiB or GiB)", s);
}

/* ---- the restricted environment ---- */

static int safe_getmetatable(lua_State *S) {
  if (lua_type(S, 1) != LUA_TTABLE) return 0; /* the string metatable stays hidden */
  luaL_getmetafield(S, 1, "__metatable");
  if (!lua_isnil(S, -1)) return 1; /* a protected metatable answers for itself */
  lua_pop(S, 1);
  if (!lua_getmetatable(S, 1)) return 0;
  return 1;
}

/* setmetatable without __gc: a finalizer would run outside any call */
static int safe_setmetatable(lua_State *S) {
  if (lua_istable(S, 2) && luaL_getmetafield(S, 1, "__metatable") == LUA_TNIL) {
    lua_getfield(S, 2, "__gc");
    if (!lua_isnil(S, -1)) return luaL_error(S, "__gc is not available to policies");
    lua_pop(S, 1);
  }
  lua_settop(S, 2);
  lua_getglobal(S, "setmetatable");
  lua_insert(S, 1);
  lua_call(S, 2, 1);
  return 1;
}

static int read_only(lua_State *S) {
  return luaL_error(S, "the sandbox's libraries are read-only");
}

/* Replace the table on top by a read-only view of it: policies share the
 * libraries, so none may change what another one calls. */
static void freeze(lua_State *S) {
  lua_newtable(S);             /* the view */
  lua_createtable(S, 0, 3);    /* its metatable */
  lua_pushvalue(S, -3);
  lua_setfield(S, -2, "__index");
  lua_pushcfunction(S, read_only);
  lua_setfield(S, -2, "__newindex");
  lua_pushboolean(S, 0);
  lua_setfield(S, -2, "__metatable");
  lua_setmetatable(S, -2);
  lua_remove(S, -2);
}

static void copy_fields(lua_State *S, const char *lib, const char *const *names) {
  lua_getglobal(S, lib);
  lua_newtable(S);
  for (; *names; names++) {
    lua_getfield(S, -2, *names);
    lua_setfield(S, -2, *names);
  }
  lua_remove(S, -2);
}

/* The table every policy's _ENV reads through (behind a protected
 * metatable; each policy writes globals of its own). */
static void build_base(lua_State *S) {
  static const char *const base[] = {
      "assert",  "error",    "ipairs", "next",     "pairs",    "pcall",
      "select",  "tonumber", "tostring", "type",   "xpcall",   "rawequal",
      "rawlen",  "rawget",   "_VERSION", NULL};
  static const char *const str[] = {
      "byte", "char", "format", "len", "lower", "rep", "reverse", "sub",
      "upper", NULL};
  static const char *const os[] = {"time", "clock", "date", "difftime", NULL};
  static const char *const tbl[] = {"concat", "insert", "remove", "sort",
                                    "unpack", "pack", "move", NULL};
  lua_newtable(S);
  for (const char *const *n = base; *n; n++) {
    lua_getglobal(S, *n);
    lua_setfield(S, -2, *n);
  }
  lua_pushcfunction(S, safe_getmetatable);
  lua_setfield(S, -2, "getmetatable");
  lua_pushcfunction(S, safe_setmetatable);
  lua_setfield(S, -2, "setmetatable");
  lua_pushcfunction(S, sb_size);
  lua_setfield(S, -2, "size");
  copy_fields(S, "string", str);
  static const char *const pats[] = {"find", "match", "gmatch", "gsub"};
  lua_getglobal(S, "string");
  for (int i = 0; i < 4; i++) {
    lua_getfield(S, -1, pats[i]);
    lua_pushinteger(S, i); /* PAT_FIND .. PAT_GSUB */
    lua_pushcclosure(S, guarded, 2);
    lua_setfield(S, -3, pats[i]);
  }
  lua_pop(S, 1);
  freeze(S);
  /* s:match() must see the guarded functions too */
  lua_pushliteral(S, "");
  lua_getmetatable(S, -1);
  lua_pushvalue(S, -3);
  lua_setfield(S, -2, "__index");
  lua_pop(S, 2);
  lua_setfield(S, -2, "string");
  copy_fields(S, "table", tbl);
  freeze(S);
  lua_setfield(S, -2, "table");
  copy_fields(S, "os", os);
  freeze(S);
  lua_setfield(S, -2, "os");
  lua_getglobal(S, "math");
  freeze(S);
  lua_setfield(S, -2, "math");
  lua_getglobal(S, "utf8");
  freeze(S);
  lua_setfield(S, -2, "utf8");
  lua_setfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.base");
}

/* ---- copying values between states ---- */

/* What one copy may still carry: a table shared by reference is copied
 * each time it is met, so values and bytes are counted, not just depth. */
typedef struct quota {
  long values;
  size_t bytes;
} quota;

static __thread quota *copy_quota;

static int copy_value(lua_State *from, int idx, lua_State *to, int depth);

static int spend(size_t bytes) {
  quota *q = copy_quota;
  if (!q) return 1;
  if (q->values-- <= 0 || bytes > q->bytes) {
    q->values = -1;
    return 0;
  }
  q->bytes -= bytes;
  return 1;
}

static int copy_table(lua_State *from, int idx, lua_State *to, int depth) {
  if (depth > COPY_DEPTH || !spend(0)) return 0;
  idx = lua_absindex(from, idx);
  lua_newtable(to);
  lua_pushnil(from);
  while (lua_next(from, idx)) {
    int kt = lua_type(from, -2), top = lua_gettop(to);
    if ((kt == LUA_TSTRING || kt == LUA_TNUMBER) &&
        copy_value(from, -2, to, depth + 1) &&
        copy_value(from, -1, to, depth + 1))
      lua_rawset(to, -3);
    else
      lua_settop(to, top); /* skip what cannot cross (functions...) */
    lua_pop(from, 1);
  }
  return 1;
}

/* Push a copy of from[idx] on to; 0 (nothing pushed) if it cannot cross. */
static int copy_value(lua_State *from, int idx, lua_State *to, int depth) {
  luaL_checkstack(to, 4, "sandbox copy");
  switch (lua_type(from, idx)) {
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(from, idx, &n);
    if (!spend(n)) return 0;
    lua_pushlstring(to, s, n);
    return 1;
  }
  case LUA_TNUMBER:
    if (lua_isinteger(from, idx)) lua_pushinteger(to, lua_tointeger(from, idx));
    else lua_pushnumber(to, lua_tonumber(from, idx));
    return 1;
  case LUA_TBOOLEAN:
    lua_pushboolean(to, lua_toboolean(from, idx));
    return 1;
  case LUA_TTABLE:
    return copy_table(from, idx, to, depth);
  default:
    return 0;
  }
}

/* ---- calls into the sandbox ---- */

/* The host's own bookkeeping in the sandbox (looking up a policy by name,
 * storing it) runs outside a protected call: lift the cap around it so an
 * allocation there can never hit the cap and panic. Returns the cap. */
static size_t lift(sandbox *sb) {
  size_t limit = sb->limit;
  sb->limit = SIZE_MAX;
  return limit;
}

/* Everything that allocates in the sandbox runs inside one protected call
 * there, so hitting the memory cap is an error, never a panic. */
typedef struct xfer {
  lua_State *L; /* the host state holding the arguments */
  int first, n; /* its stack slots to copy in */
  int load;     /* 1: set up a chunk's _ENV before calling it */
} xfer;

/* trampoline(fn, xfer): copy the arguments in, then call fn */
static int trampoline(lua_State *S) {
  xfer *x = lua_touserdata(S, 2);
  lua_settop(S, 1);
  if (x->load) { /* the chunk's _ENV: globals of its own over the base */
    lua_newtable(S);
    lua_newtable(S);
    lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.base");
    lua_setfield(S, -2, "__index");
    lua_setmetatable(S, -2);
    if (!lua_setupvalue(S, 1, 1)) lua_pop(S, 1);
  }
  luaL_checkstack(S, x->n + 4, "sandbox arguments");
  quota q = {COPY_VALUES, COPY_BYTES};
  copy_quota = &q;
  for (int i = 0; i < x->n; i++)
    if (!copy_value(x->L, x->first + i, S, 0)) lua_pushnil(S);
  copy_quota = NULL;
  if (q.values < 0) return luaL_error(S, "arguments too large for the sandbox");
  lua_call(S, x->n, 2);
  return 2;
}

/* Call the function on top of S's stack through the trampoline, budgeted.
 * Leaves two results, or the error message, on S's stack. */
static int run(sandbox *sb, xfer *x) {
  lua_State *S = sb->S;
  lua_pushcfunction(S, trampoline);
  lua_insert(S, -2);
  lua_pushlightuserdata(S, x);
  sb->left = sb->budget;
  lua_sethook(S, budget_hook, LUA_MASKCOUNT, HOOK_EVERY);
  int rc = lua_pcall(S, 2, 2, 0);
  lua_sethook(S, NULL, 0, 0);
  return rc;
}

static const char *run_error(sandbox *sb, int rc) {
  if (rc == LUA_ERRMEM) return "out of memory (the policy memory cap)";
  const char *m = lua_tostring(sb->S, -1);
  return m ? m : "error without a message";
}

static sandbox *check_sb(lua_State *L) {
  sandbox *sb = luaL_checkudata(L, 1, SANDBOX_MT);
  if (!sb->S) luaL_error(L, "attempt to use a closed sandbox");
  return sb;
}

/* sb:load(name, source, options) -> true | nil, message
 * Runs the chunk with options as its argument in an _ENV of its own; it
 * must return a table with a check function, or declared rules. */
static int sb_load(lua_State *L) {
  sandbox *sb = check_sb(L);
  const char *name = luaL_checkstring(L, 2);
  size_t len;
  const char *src = luaL_checklstring(L, 3, &len);
  lua_State *S = sb->S;
  int top = lua_gettop(S);
  int rc = luaL_loadbufferx(S, src, len, name, "t"); /* text only */
  xfer x = {L, 4, lua_isnoneornil(L, 4) ? 0 : 1, 1};
  if (rc == LUA_OK) rc = run(sb, &x);
  if (rc != LUA_OK) {
    lua_pushnil(L);
    lua_pushstring(L, run_error(sb, rc));
    lua_settop(S, top);
    return 2;
  }
  lua_pop(S, 1); /* keep the first result */
  size_t limit = lift(sb);
  int ok = lua_istable(S, -1);
  if (ok) { /* raw: a metatable could run code outside the budget */
    lua_pushliteral(S, "check");
    lua_rawget(S, -2);
    lua_pushliteral(S, "rules");
    lua_rawget(S, -3);
    ok = lua_isfunction(S, -2) || (lua_isnil(S, -2) && lua_istable(S, -1));
    lua_pop(S, 2);
  }
  if (ok) {
    lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.policies");
    lua_insert(S, -2);
    lua_setfield(S, -2, name);
  }
  sb->limit = limit;
  lua_settop(S, top);
  if (!ok) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: a policy must return a table with a check function or rules", name);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* sb:call(name, fn, arg1, arg2) -> true, r1, r2 | false, message
 * Calls policies[name][fn](arg1, arg2) on copies of the arguments and
 * returns copies of two results. A missing fn returns just true. */
static int sb_call(lua_State *L) {
  sandbox *sb = check_sb(L);
  const char *name = luaL_checkstring(L, 2);
  const char *fn = luaL_checkstring(L, 3);
  lua_State *S = sb->S;
  int top = lua_gettop(S);
  size_t limit = lift(sb);
  lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.policies");
  lua_getfield(S, -1, name);
  if (lua_istable(S, -1)) { /* raw: no metamethod runs outside the budget */
    lua_pushstring(S, fn);
    lua_rawget(S, -2);
  }
  sb->limit = limit;
  if (!lua_isfunction(S, -1)) {
    int known = lua_istable(S, top + 2);
    lua_settop(S, top);
    if (!known) return luaL_error(L, "no policy %s in the sandbox", name);
    lua_pushboolean(L, 1);
    return 1;
  }
  int n = lua_gettop(L) - 3;
  xfer x = {L, 4, n > 2 ? 2 : n, 0};
  int rc = run(sb, &x);
  if (rc != LUA_OK) {
    lua_pushboolean(L, 0);
    lua_pushstring(L, run_error(sb, rc));
    lua_settop(S, top);
    lua_gc(S, LUA_GCCOLLECT); /* what the failed call held is free again */
    return 2;
  }
  quota q = {COPY_VALUES, COPY_BYTES};
  copy_quota = &q;
  lua_pushboolean(L, 1);
  for (int i = -2; i <= -1; i++)
    if (!copy_value(S, i, L, 0)) lua_pushnil(L);
  copy_quota = NULL;
  lua_settop(S, top);
  if (q.values < 0) { /* an answer larger than a policy may give */
    lua_pop(L, 3);
    lua_pushboolean(L, 0);
    lua_pushfstring(L, "the policy's answer is too large (over %d values or %d bytes)",
                    (int)COPY_VALUES, (int)COPY_BYTES);
    return 2;
  }
  return 3;
}

static int sb_memory(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_sb(L)->used);
  return 1;
}

static int sb_gc(lua_State *L) {
  sandbox *sb = luaL_checkudata(L, 1, SANDBOX_MT);
  if (sb->S) { /* finalizers run in lua_close: under the budget too */
    sb->left = sb->budget;
    lua_sethook(sb->S, budget_hook, LUA_MASKCOUNT, HOOK_EVERY);
    lua_close(sb->S);
  }
  sb->S = NULL;
  return 0;
}

/* sb:get(name, field) -> a copy of policies[name][field] (bounded) */
static int sb_get(lua_State *L) {
  sandbox *sb = check_sb(L);
  lua_State *S = sb->S;
  int top = lua_gettop(S);
  const char *name = luaL_checkstring(L, 2), *field = luaL_checkstring(L, 3);
  size_t limit = lift(sb);
  lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.policies");
  lua_getfield(S, -1, name);
  if (lua_istable(S, -1)) {
    lua_pushstring(S, field);
    lua_rawget(S, -2);
  }
  sb->limit = limit;
  quota q = {COPY_VALUES, COPY_BYTES};
  copy_quota = &q;
  int ok = copy_value(S, -1, L, 0);
  copy_quota = NULL;
  lua_settop(S, top);
  if (!ok) lua_pushnil(L);
  return 1;
}

/* sb:has(name, field) -> whether policies[name][field] is a function
 * (raw lookup: no policy code runs) */
static int sb_has(lua_State *L) {
  sandbox *sb = check_sb(L);
  lua_State *S = sb->S;
  int top = lua_gettop(S);
  const char *name = luaL_checkstring(L, 2), *field = luaL_checkstring(L, 3);
  lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.policies");
  lua_getfield(S, -1, name);
  int yes = 0;
  if (lua_istable(S, -1)) {
    lua_pushstring(S, field);
    lua_rawget(S, -2);
    yes = lua_isfunction(S, -1);
  }
  lua_settop(S, top);
  lua_pushboolean(L, yes);
  return 1;
}

/* core.sandbox{memory = bytes, instructions = n} */
static int l_sandbox(lua_State *L) {
  lua_Integer mem = 16 << 20, ins = 1000000;
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "memory");
    mem = luaL_optinteger(L, -1, mem);
    lua_getfield(L, 1, "instructions");
    ins = luaL_optinteger(L, -1, ins);
    lua_pop(L, 2);
  }
  sandbox *sb = lua_newuserdatauv(L, sizeof *sb, 0);
  memset(sb, 0, sizeof *sb);
  luaL_setmetatable(L, SANDBOX_MT);
  sb->limit = SIZE_MAX; /* the libraries load uncapped, then the cap holds */
  sb->budget = ins > 0 ? (long)ins : 1;
  sb->S = lua_newstate(sb_alloc, sb);
  if (!sb->S) return luaL_error(L, "cannot create the policy sandbox");
  luaL_openlibs(sb->S);
  build_base(sb->S);
  lua_newtable(sb->S);
  lua_setfield(sb->S, LUA_REGISTRYINDEX, "burrow.sandbox.policies");
  lua_pushlightuserdata(sb->S, sb);
  lua_setfield(sb->S, LUA_REGISTRYINDEX, BUDGET_KEY);
  lua_gc(sb->S, LUA_GCCOLLECT);
  sb->limit = sb->used + (size_t)(mem > 0 ? mem : 0);
  return 1;
}

static const luaL_Reg sb_methods[] = {{"load", sb_load},
                                      {"call", sb_call},
                                      {"memory", sb_memory},
                                      {"get", sb_get}, {"has", sb_has},
                                      {"close", sb_gc},
                                      {NULL, NULL}};

void bw_sandbox_register(lua_State *L) {
  luaL_newmetatable(L, SANDBOX_MT);
  lua_newtable(L);
  luaL_setfuncs(L, sb_methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, sb_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, sb_gc);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_sandbox);
  lua_setfield(L, -2, "sandbox");
}
