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

enum { COPY_DEPTH = 16, HOOK_EVERY = 1000 };
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

static void budget_hook(lua_State *S, lua_Debug *ar) {
  (void)ar;
  lua_getfield(S, LUA_REGISTRYINDEX, BUDGET_KEY);
  sandbox *sb = lua_touserdata(S, -1);
  lua_pop(S, 1);
  if (sb && (sb->left -= HOOK_EVERY) < 0)
    luaL_error(S, "instruction budget exceeded (%d)", (int)sb->budget);
}

/* ---- patterns with a bounded worst case ---- */

/* Upper bound of the steps Lua's matcher may take for pattern p on a
 * subject of n bytes: each quantified item (*, +, -) may try every
 * length, each ? two ways, and an unanchored search every start. */
static double pattern_cost(const char *p, size_t pl, size_t n, int anchored) {
  double cost = anchored ? 1 : (double)n + 1;
  for (size_t i = 0; i < pl; i++) {
    char c = p[i];
    if (c == '%' && i + 1 < pl) {
      i++;
      if (p[i] == 'b') i += 2; /* %bxy: linear in the subject */
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
  return cost * ((double)n + 1); /* captures and back-references: linear */
}

static int checked_pattern(lua_State *S, int global) {
  size_t n, pl;
  luaL_checklstring(S, 1, &n);
  const char *p = luaL_checklstring(S, 2, &pl);
  int anchored = pl > 0 && p[0] == '^' && !global;
  if (global) n = n * (n + 1) / 2 + 1; /* gmatch/gsub: from every start */
  if (pattern_cost(p, pl, n, anchored) > PATTERN_LIMIT)
    return luaL_error(S, "pattern too costly for the policy sandbox on a "
                         "subject of this length (use fewer * + - items, "
                         "anchor it, or plain find)");
  return 0;
}

/* string.find/match/gmatch/gsub, checked first, then the real one */
static int guarded(lua_State *S) {
  int global = (int)lua_tointeger(S, lua_upvalueindex(2));
  int plain = lua_toboolean(S, 4) && !global;
  if (!plain && lua_type(S, 2) == LUA_TSTRING) checked_pattern(S, global);
  lua_pushvalue(S, lua_upvalueindex(1));
  lua_insert(S, 1);
  lua_call(S, lua_gettop(S) - 1, LUA_MULTRET);
  return lua_gettop(S);
}

/* ---- the restricted environment ---- */

static int safe_getmetatable(lua_State *S) {
  if (lua_type(S, 1) != LUA_TTABLE) return 0; /* the string metatable stays hidden */
  if (!lua_getmetatable(S, 1)) return 0;
  return 1;
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

/* The table every policy's _ENV reads through (never written: each policy
 * gets its own globals). */
static void build_base(lua_State *S) {
  static const char *const base[] = {
      "assert",  "error",    "ipairs", "next",     "pairs",    "pcall",
      "select",  "tonumber", "tostring", "type",   "xpcall",   "rawequal",
      "rawlen",  "rawget",   "rawset", "setmetatable", "_VERSION", NULL};
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
  copy_fields(S, "string", str);
  static const char *const pats[] = {"find", "match", "gmatch", "gsub"};
  lua_getglobal(S, "string");
  for (int i = 0; i < 4; i++) {
    lua_getfield(S, -1, pats[i]);
    lua_pushinteger(S, i >= 2); /* gmatch and gsub scan every start */
    lua_pushcclosure(S, guarded, 2);
    lua_setfield(S, -3, pats[i]);
  }
  lua_pop(S, 1);
  /* s:match() must see the guarded functions too */
  lua_pushliteral(S, "");
  lua_getmetatable(S, -1);
  lua_pushvalue(S, -3);
  lua_setfield(S, -2, "__index");
  lua_pop(S, 2);
  lua_setfield(S, -2, "string");
  copy_fields(S, "table", tbl);
  lua_setfield(S, -2, "table");
  copy_fields(S, "os", os);
  lua_setfield(S, -2, "os");
  lua_getglobal(S, "math");
  lua_setfield(S, -2, "math");
  lua_getglobal(S, "utf8");
  lua_setfield(S, -2, "utf8");
  lua_setfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.base");
}

/* ---- copying values between states ---- */

static int copy_value(lua_State *from, int idx, lua_State *to, int depth);

static int copy_table(lua_State *from, int idx, lua_State *to, int depth) {
  if (depth > COPY_DEPTH) return 0;
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
  for (int i = 0; i < x->n; i++)
    if (!copy_value(x->L, x->first + i, S, 0)) lua_pushnil(S);
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
 * must return a table with a check function. */
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
  int ok = lua_istable(S, -1);
  if (ok) {
    lua_getfield(S, -1, "check");
    ok = lua_isfunction(S, -1);
    lua_pop(S, 1);
  }
  if (!ok) {
    lua_settop(S, top);
    lua_pushnil(L);
    lua_pushfstring(L, "%s: a policy must return a table with a check function", name);
    return 2;
  }
  lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.policies");
  lua_insert(S, -2);
  lua_setfield(S, -2, name);
  lua_settop(S, top);
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
  lua_getfield(S, LUA_REGISTRYINDEX, "burrow.sandbox.policies");
  lua_getfield(S, -1, name);
  if (!lua_istable(S, -1)) {
    lua_settop(S, top);
    return luaL_error(L, "no policy %s in the sandbox", name);
  }
  lua_getfield(S, -1, fn);
  if (!lua_isfunction(S, -1)) {
    lua_settop(S, top);
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
    return 2;
  }
  lua_pushboolean(L, 1);
  for (int i = -2; i <= -1; i++)
    if (!copy_value(S, i, L, 0)) lua_pushnil(L);
  lua_settop(S, top);
  return 3;
}

static int sb_memory(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_sb(L)->used);
  return 1;
}

static int sb_gc(lua_State *L) {
  sandbox *sb = luaL_checkudata(L, 1, SANDBOX_MT);
  if (sb->S) lua_close(sb->S);
  sb->S = NULL;
  return 0;
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
