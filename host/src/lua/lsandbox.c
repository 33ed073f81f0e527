/*
 * lsandbox.c - a Lua state of its own for operators' policy code
 * (core.sandbox): a restricted global table, an allocator with a memory
 * cap, a budget per call and a time limit behind it, text-only chunks
 * (but burrow's own standard policies, compiled at install: sb_load).
 * The budget counts VM instructions (a count hook) and the work library
 * functions do inside one instruction: bytes allocated, elements a table
 * function moves or compares, bytes scanned, and for the pattern
 * functions an upper bound of their work computed before they run
 * (patcost.c). Values cross between the host state and the sandbox by
 * copy: strings, numbers, booleans and tables of them. A policy that
 * errors, loops, runs out of memory or time makes the call fail with a
 * message; the caller turns that into a deny.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "lcore.h"
#include "lsandbox.h"
#include "lstore.h"
#include "state.h"
#include "patcost.h"

#define SANDBOX_MT "burrow.Sandbox"

enum { COPY_DEPTH = 16, HOOK_EVERY = 1000, COPY_VALUES = 10000, ERROR_BYTES = 1000 };
static const size_t COPY_BYTES = 1 << 20; /* strings crossing in one copy */

/* ---- the capped allocator ---- */

/* Growth is charged to the budget too: concatenation, string.rep and the
 * like do their work in the bytes they allocate. The allocator cannot
 * raise; the next hook or library call does. */
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
  if (p && nsize > old) take(sb, (double)((nsize - old) / ALLOC_BYTES));
  return p;
}

/* ---- the budget and the time limit ---- */

/* Whether the call must stop: the budget spent, or (when clock) the time.
 * Once it must, sb->stop says why until the next call starts. */
int bw_sb_over(sandbox *sb, int clock) {
  if (sb->stop[0]) return 1;
  if (sb->left < 0)
    snprintf(sb->stop, sizeof sb->stop, "instruction budget exceeded (%ld)", sb->budget);
  else if (clock && bw_now_ms_coarse() >= sb->deadline)
    snprintf(sb->stop, sizeof sb->stop, "time limit exceeded (%g s)", (double)sb->ms / 1000);
  return sb->stop[0] != 0;
}

static void budget_hook(lua_State *S, lua_Debug *ar);

/* Stop the call: from here on the hook fires on every instruction and
 * raises each time, so a pcall inside the policy may catch one error but
 * the next instruction of its caller raises again; the call unwinds for
 * good. */
void bw_sb_halt(lua_State *S, sandbox *sb) {
  lua_sethook(S, budget_hook, LUA_MASKCOUNT, 1);
  luaL_error(S, "%s", sb->stop);
}

static void budget_hook(lua_State *S, lua_Debug *ar) {
  (void)ar;
  sandbox *sb = sb_of(S);
  take(sb, lua_gethookcount(S));
  if (bw_sb_over(sb, 1)) bw_sb_halt(S, sb);
}

/* Work a library function is about to do, in units: raises if the budget
 * cannot pay for it, and reads the clock every HOOK_EVERY units. */
void bw_sb_charge(lua_State *S, double units) {
  sandbox *sb = sb_of(S);
  take(sb, units);
  sb->since_clock += units < HOOK_EVERY ? (long)units + 1 : HOOK_EVERY;
  int clock = sb->since_clock >= HOOK_EVERY;
  if (clock) sb->since_clock = 0;
  if (bw_sb_over(sb, clock)) bw_sb_halt(S, sb);
}

/* ---- the restricted environment ---- */

/* Stock getmetatable, except that a string's metatable is a read-only
 * view of it (getmetatable("").__index.upper works; writes raise). */
static int safe_getmetatable(lua_State *S) {
  luaL_checkany(S, 1);
  if (lua_type(S, 1) == LUA_TSTRING) {
    lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.stringmt");
    return 1;
  }
  if (!lua_getmetatable(S, 1)) {
    lua_pushnil(S);
    return 1;
  }
  luaL_getmetafield(S, 1, "__metatable"); /* a protected one answers for itself */
  return 1;
}

/* A metatable's own writes: no __mode ever (see safe_setmetatable) */
static int sealed_newindex(lua_State *S) {
  if (lua_type(S, 2) == LUA_TSTRING && !strcmp(lua_tostring(S, 2), "__mode") && !lua_isnil(S, 3))
    return luaL_error(S, "weak tables (__mode) are not available to policies");
  lua_settop(S, 3);
  lua_rawset(S, 1);
  return 0;
}

/* Give the table at idx the sealed metatable: it may then be a metatable
 * (or the metatable of _ENV) with no way to gain a __mode. */
static void seal(lua_State *S, int idx) {
  lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.sealed");
  lua_setmetatable(S, idx);
}

/* setmetatable(t, mt) as stock, with what runs outside the budget kept
 * out. __gc: a finalizer runs with hooks off, outside any call. __mode:
 * the collector converges weak-keyed tables (ephemerons) in time
 * quadratic in their entries, in one atomic step no hook interrupts
 * (40,000 chained in random order: 15 s); the GC reads __mode from the
 * metatable at every cycle, so mt is sealed: it may not have a metatable
 * of its own, and gets one that refuses a later __mode and cannot be
 * changed. Raw lookups, as the collector does. */
static int safe_setmetatable(lua_State *S) {
  int t = lua_type(S, 2);
  luaL_checktype(S, 1, LUA_TTABLE);
  luaL_argexpected(S, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
  if (luaL_getmetafield(S, 1, "__metatable") != LUA_TNIL)
    return luaL_error(S, "cannot change a protected metatable");
  if (t == LUA_TTABLE) {
    if (lua_rawequal(S, 1, 2)) /* sealing it would be undone right below */
      return luaL_error(S, "a table cannot be its own metatable in the policy sandbox");
    lua_pushliteral(S, "__gc");
    if (lua_rawget(S, 2) != LUA_TNIL) return luaL_error(S, "__gc is not available to policies");
    lua_pushliteral(S, "__mode");
    if (lua_rawget(S, 2) != LUA_TNIL)
      return luaL_error(S, "weak tables (__mode) are not available to policies");
    lua_pop(S, 2);
    if (!lua_getmetatable(S, 2))
      seal(S, 2);
    else {
      lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.sealed");
      if (!lua_rawequal(S, -1, -2))
        return luaL_error(S, "a table with a metatable of its own cannot be a metatable "
                             "in the policy sandbox (chain through __index instead)");
      lua_pop(S, 2);
    }
  }
  lua_settop(S, 2);
  lua_setmetatable(S, 1);
  return 1;
}

/* xpcall(f, msgh, ...): f in a pcall, then msgh on the error. Stock
 * xpcall runs msgh where the error is raised, and an error the budget
 * hook raises is raised with hooks off: msgh would run outside the budget
 * and the time limit. Here it runs after the unwinding, counted. */
static int safe_xpcall(lua_State *S) {
  int n = lua_gettop(S);
  luaL_checktype(S, 2, LUA_TFUNCTION);
  lua_pushboolean(S, 1);
  lua_pushvalue(S, 1);
  lua_rotate(S, 3, 2); /* f msgh true f args... */
  if (lua_pcall(S, n - 2, LUA_MULTRET, 0) == LUA_OK) return lua_gettop(S) - 2;
  lua_pushboolean(S, 0);
  lua_pushvalue(S, 2);
  lua_pushvalue(S, -3);
  lua_pcall(S, 1, 1, 0); /* msgh(err); an error in it is the answer */
  return 2;
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

/* A library's functions by name, each with its cost (-1: none beyond its
 * instruction). */
typedef struct fn {
  const char *name;
  int cost;
} fn;

static void copy_fields(lua_State *S, const char *lib, const fn *fns) {
  lua_getglobal(S, lib);
  lua_newtable(S);
  for (; fns->name; fns++) {
    lua_getfield(S, -2, fns->name);
    if (fns->cost >= 0) bw_sb_push_charged(S, fns->cost);
    lua_setfield(S, -2, fns->name);
  }
  lua_remove(S, -2);
}

/* The libraries build_base copies from, and no others: io, package,
 * coroutine and debug would only be opened to be left out (their opening
 * was a tenth of a `burrow call`'s start-up, docs/benchmarks.md). */
static void open_libs(lua_State *S) {
  static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},
                                  {LUA_STRLIBNAME, luaopen_string},
                                  {LUA_TABLIBNAME, luaopen_table},
                                  {LUA_OSLIBNAME, luaopen_os},
                                  {LUA_MATHLIBNAME, luaopen_math},
                                  {LUA_UTF8LIBNAME, luaopen_utf8},
                                  {NULL, NULL}};
  for (const luaL_Reg *l = libs; l->name; l++) {
    luaL_requiref(S, l->name, l->func, 1);
    lua_pop(S, 1);
  }
}

/* The table every policy's _ENV reads through, a read-only view (each
 * policy writes globals of its own). */
static void build_base(lua_State *S) {
  static const fn base[] = {
      {"assert", -1}, {"error", -1}, {"ipairs", -1}, {"next", -1},
      {"pairs", -1}, {"pcall", -1}, {"select", -1}, {"tonumber", C_ARGS},
      {"tostring", -1}, {"type", -1}, {"rawequal", -1}, {"rawlen", -1},
      {"rawget", -1}, {"_VERSION", -1}, {NULL, 0}};
  static const fn str[] = {
      {"byte", C_BYTE}, {"char", C_ARGS}, {"format", C_ARGS}, {"len", -1},
      {"lower", -1}, {"rep", C_REP}, {"reverse", -1}, {"sub", -1},
      {"upper", -1}, {"find", C_FIND}, {"match", C_MATCH}, {"gmatch", C_GMATCH},
      {"gsub", C_GSUB}, {NULL, 0}};
  static const fn os[] = {{"time", -1}, {"clock", -1}, {"date", C_ARGS},
                          {"difftime", -1}, {NULL, 0}};
  static const fn tbl[] = {{"concat", C_CONCAT}, {"insert", C_INSERT},
                           {"remove", C_REMOVE}, {"sort", C_SORT},
                           {"unpack", C_UNPACK}, {"pack", C_ARGS},
                           {"move", C_MOVE}, {NULL, 0}};
  static const fn utf8[] = {{"char", C_ARGS}, {"charpattern", -1},
                            {"codepoint", C_UTF8}, {"len", C_UTF8},
                            {"offset", C_UTF8}, {NULL, 0}};
  lua_createtable(S, 0, 2); /* the metatable of every metatable policies set */
  lua_pushcfunction(S, sealed_newindex);
  lua_setfield(S, -2, "__newindex");
  lua_pushboolean(S, 0);
  lua_setfield(S, -2, "__metatable");
  lua_setfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.sealed");
  lua_newtable(S);
  for (const fn *f = base; f->name; f++) {
    lua_getglobal(S, f->name);
    if (f->cost >= 0) bw_sb_push_charged(S, f->cost);
    lua_setfield(S, -2, f->name);
  }
  lua_pushcfunction(S, safe_getmetatable);
  lua_setfield(S, -2, "getmetatable");
  lua_pushcfunction(S, safe_setmetatable);
  lua_setfield(S, -2, "setmetatable");
  lua_pushcfunction(S, safe_xpcall);
  lua_setfield(S, -2, "xpcall");
  lua_pushcfunction(S, bw_sb_size);
  bw_sb_push_charged(S, C_ARGS);
  lua_setfield(S, -2, "size");
  copy_fields(S, "string", str);
  freeze(S);
  /* s:match() must see the sandbox's functions too; getmetatable("")
   * answers with a read-only view of the string metatable */
  lua_pushliteral(S, "");
  lua_getmetatable(S, -1);
  lua_pushvalue(S, -3);
  lua_setfield(S, -2, "__index");
  freeze(S);
  lua_setfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.stringmt");
  lua_pop(S, 1);
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
  copy_fields(S, "utf8", utf8);
  lua_getglobal(S, "utf8");
  lua_getfield(S, -1, "codes");
  lua_pushcclosure(S, bw_sb_charged_codes, 1);
  lua_setfield(S, -3, "codes");
  lua_pop(S, 1);
  freeze(S);
  lua_setfield(S, -2, "utf8");
  freeze(S); /* getmetatable(_ENV).__index is this view */
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
  bw_counters *store; /* load: the shared counter store given to it */
  bw_state *state;    /* load: the state store its state.* functions use */
} xfer;

/* a policy's state.* functions are charged as library calls are */
static void charge_args(lua_State *S) { bw_sb_push_charged(S, C_ARGS); }

/* trampoline(fn, xfer): copy the arguments in, then call fn */
static int trampoline(lua_State *S) {
  xfer *x = lua_touserdata(S, 2);
  lua_settop(S, 1);
  if (x->load) { /* the chunk's _ENV: globals of its own over the base,
                   * through a sealed metatable (no __mode on _ENV) */
    lua_newtable(S);
    lua_newtable(S);
    lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.base");
    lua_setfield(S, -2, "__index");
    seal(S, lua_gettop(S));
    lua_setmetatable(S, -2);
    if (x->store) { /* the operator gave it a store: shared_add (lstore.c) */
      lua_pushliteral(S, "shared_add");
      bw_store_push(S, &x->store);
      bw_sb_push_charged(S, C_ARGS); /* its calls count against the budget */
      lua_rawset(S, -3);
    }
    if (x->state) { /* state.add/once/get/cas/del (lstate.c) */
      lua_pushliteral(S, "state");
      bw_lstate_push_api(S, x->state, charge_args);
      lua_rawset(S, -3);
    }
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

/* A fresh budget and time limit, and the hook that counts them. */
static void arm(sandbox *sb) {
  sb->left = sb->budget;
  sb->epoch++;
  sb->since_clock = 0;
  sb->stop[0] = '\0';
  sb->deadline = bw_now_ms_coarse() + sb->ms; /* the coarse clock: checked very often */
  lua_sethook(sb->S, budget_hook, LUA_MASKCOUNT, HOOK_EVERY);
}

/* Call the function on top of S's stack through the trampoline, budgeted.
 * Leaves two results, or the error message, on S's stack. */
static int run(sandbox *sb, xfer *x) {
  lua_State *S = sb->S;
  lua_pushcfunction(S, trampoline);
  lua_insert(S, -2);
  lua_pushlightuserdata(S, x);
  arm(sb);
  int rc = lua_pcall(S, 2, 2, 0);
  lua_sethook(S, NULL, 0, 0);
  return rc;
}

/* Push on L the error of a failed run, cut to ERROR_BYTES: it crosses
 * like any value (error(("x"):rep(1e7)) is not a 10 MB denial). */
static void push_error(lua_State *L, sandbox *sb, int rc) {
  size_t n = 0;
  const char *m = rc == LUA_ERRMEM ? NULL : lua_tolstring(sb->S, -1, &n);
  if (rc == LUA_ERRMEM)
    lua_pushliteral(L, "out of memory (the policy memory cap)");
  else if (!m)
    lua_pushliteral(L, "error without a message");
  else if (n <= ERROR_BYTES)
    lua_pushlstring(L, m, n);
  else {
    lua_pushlstring(L, m, ERROR_BYTES);
    lua_pushfstring(L, "... (%I bytes)", (lua_Integer)n);
    lua_concat(L, 2);
  }
}

static sandbox *check_sb(lua_State *L) {
  sandbox *sb = luaL_checkudata(L, 1, SANDBOX_MT);
  if (!sb->S) luaL_error(L, "attempt to use a closed sandbox");
  return sb;
}

/* sb:load(name, source, options [, store [, chunkname [, state [, binary]]]]) -> true | nil, message
 * Runs the chunk with options as its argument in an _ENV of its own; it
 * must return a table with a check function, or declared rules. store: a
 * counter file the host opens (the operator's path), shared_add in that
 * _ENV, and state.* on that file. state: the deployment's state store
 * (core.state_open's or core.state()'s object), state.* in that _ENV when
 * no store is named. chunkname (Lua's: "@FILE" names a file) is what
 * errors and tracebacks show; default: name. binary (true): source is a
 * binary chunk, which burrow.policy passes only for burrow's own standard
 * policy, compiled at install from the very text it checked (its NAME.luac,
 * host/luac.lua); every other chunk is text, and a binary one is refused. */
static int sb_load(lua_State *L) {
  sandbox *sb = check_sb(L);
  const char *name = luaL_checkstring(L, 2);
  size_t len;
  const char *src = luaL_checklstring(L, 3, &len);
  const char *chunk = luaL_optstring(L, 6, name);
  lua_State *S = sb->S;
  int top = lua_gettop(S);
  const char *store = luaL_optstring(L, 5, NULL);
  xfer x = {L, 4, lua_isnoneornil(L, 4) ? 0 : 1, 1, NULL, NULL};
  if (store) {
    int src_rc = bw_counters_open(store, &x.store);
    if (!src_rc) src_rc = bw_state_open_file(store, &x.state);
    if (src_rc) {
      bw_counters_close(x.store);
      const char *d = bw_detail();
      lua_pushnil(L);
      lua_pushfstring(L, "cannot open the store %s: %s%s%s", store, bw_code_name(src_rc), d ? ": " : "", d ? d : "");
      return 2;
    }
  } else if (!lua_isnoneornil(L, 7)) {
    x.state = bw_lstate_at(L, 7);
    if (!x.state) return luaL_argerror(L, 7, "a state store (core.state_open, core.state)");
    bw_state_ref(x.state);
  }
  const char *mode = lua_toboolean(L, 8) ? "b" : "t"; /* text, but burrow's own */
  int rc = luaL_loadbufferx(S, src, len, chunk, mode);
  if (rc == LUA_OK) rc = run(sb, &x);
  bw_counters_close(x.store); /* not taken (the chunk did not load) */
  bw_state_close(x.state);    /* the sandbox's functions hold their own reference */
  if (rc != LUA_OK) {
    lua_pushnil(L);
    push_error(L, sb, rc);
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
    lua_pushfstring(L, "%s: a policy must return a table with a check function or rules",
                    chunk[0] == '@' ? chunk + 1 : name);
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
  xfer x = {L, 4, n > 2 ? 2 : n, 0, NULL, NULL};
  int rc = run(sb, &x);
  if (rc != LUA_OK) {
    lua_pushboolean(L, 0);
    push_error(L, sb, rc);
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
  if (sb->S) { /* __close and finalizers run in lua_close: under the budget too */
    arm(sb);
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

/* core.sandbox{memory = bytes, instructions = n, time = seconds} */
static int l_sandbox(lua_State *L) {
  lua_Integer mem = 16 << 20, ins = 1000000;
  lua_Number secs = 2;
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "memory");
    mem = luaL_optinteger(L, -1, mem);
    lua_getfield(L, 1, "instructions");
    ins = luaL_optinteger(L, -1, ins);
    lua_getfield(L, 1, "time");
    secs = luaL_optnumber(L, -1, secs);
    lua_pop(L, 3);
  }
  if (!(secs > 0 && secs <= 86400)) return luaL_error(L, "sandbox time must be 0 < seconds <= 86400");
  sandbox *sb = lua_newuserdatauv(L, sizeof *sb, 0);
  memset(sb, 0, sizeof *sb);
  luaL_setmetatable(L, SANDBOX_MT);
  sb->limit = SIZE_MAX; /* the libraries load uncapped, then the cap holds */
  sb->budget = ins > 0 ? (long)ins : 1;
  sb->ms = (int64_t)(secs * 1000 + 0.5);
  sb->S = lua_newstate(sb_alloc, sb);
  if (!sb->S) return luaL_error(L, "cannot create the policy sandbox");
  *(sandbox **)lua_getextraspace(sb->S) = sb;
  open_libs(sb->S);
  build_base(sb->S);
  lua_newtable(sb->S);
  lua_setfield(sb->S, LUA_REGISTRYINDEX, "burrow.sandbox.policies");
  lua_gc(sb->S, LUA_GCCOLLECT);
  sb->limit = sb->used + (size_t)(mem > 0 ? mem : 0);
  return 1;
}

/* sb:outages(): how many of its policies' state calls the store did not
 * answer, ever (the engine compares it around a check: policy.lua). */
static int sb_outages(lua_State *L) {
  sandbox *sb = check_sb(L);
  lua_pushinteger(L, bw_lstate_outages(sb->S));
  return 1;
}

static const luaL_Reg sb_methods[] = {{"load", sb_load},
                                      {"outages", sb_outages},
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
