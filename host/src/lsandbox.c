/*
 * lsandbox.c - a Lua state of its own for operators' policy code
 * (core.sandbox): a restricted global table, an allocator with a memory
 * cap, a budget per call and a time limit behind it, text-only chunks.
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

#include "lcore.h"
#include "lstore.h"
#include "patcost.h"

#define SANDBOX_MT "burrow.Sandbox"

enum { COPY_DEPTH = 16, HOOK_EVERY = 1000, COPY_VALUES = 10000, ERROR_BYTES = 1000 };
enum { STOP_BYTES = 256 };
static const size_t COPY_BYTES = 1 << 20; /* strings crossing in one copy */

/* What one instruction unit of the budget buys inside a library call:
 * about the time a VM instruction takes (a few ns). */
enum {
  ALLOC_BYTES = 128, /* bytes allocated (copies, concatenation, results) */
  SCAN_BYTES = 16,   /* bytes parsed or decoded (tonumber, utf8, format) */
  PATTERN_STEPS = 16, /* steps of a pattern function's bound (a step is 0.2-0.7 ns) */
  PLAIN_BYTES = 16,  /* bytes a plain find searches (memmem: up to 4 ns a byte on near-matches) */
};

/* What a match costs gsub beyond the matcher, in steps: a replacement
 * function's call with up to 32 captures (its own work is counted as it
 * runs), a lookup per table of a replacement table's __index chain, the
 * bytes of a replacement string (scanned, escapes expanded); and pushing
 * gmatch's captures. */
enum { CALL_STEPS = 16, CAPTURE_STEPS = 4 * 32 };

typedef struct sandbox {
  lua_State *S;
  size_t used, limit;
  long budget, left;   /* instruction units per call, and what is left */
  long since_clock;    /* units charged by library calls since the clock was read */
  int64_t ms, deadline; /* the time limit per call (ms), and when this call's ends */
  char stop[STOP_BYTES]; /* why the call stops, once it must ("" until then) */
  lua_Integer epoch;   /* counts the calls: what a gmatch iterator paid for */
} sandbox;

/* Every thread of the sandbox finds its sandbox in its extra space (a
 * new thread copies the main thread's). */
static sandbox *sb_of(lua_State *S) {
  return *(sandbox **)lua_getextraspace(S);
}

/* Take n units off what is left; at worst -1, so it cannot wrap. */
static void take(sandbox *sb, double n) {
  if (n >= (double)sb->left + 1) sb->left = sb->left < 0 ? sb->left : -1;
  else if (n > 0) sb->left -= (long)n;
}

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

static int64_t now_ms(void) {
  struct timespec t; /* the coarse clock: a memory read, no system call */
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Whether the call must stop: the budget spent, or (when clock) the time.
 * Once it must, sb->stop says why until the next call starts. */
static int over(sandbox *sb, int clock) {
  if (sb->stop[0]) return 1;
  if (sb->left < 0)
    snprintf(sb->stop, sizeof sb->stop, "instruction budget exceeded (%ld)", sb->budget);
  else if (clock && now_ms() >= sb->deadline)
    snprintf(sb->stop, sizeof sb->stop, "time limit exceeded (%g s)", (double)sb->ms / 1000);
  return sb->stop[0] != 0;
}

static void budget_hook(lua_State *S, lua_Debug *ar);

/* Stop the call: from here on the hook fires on every instruction and
 * raises each time, so a pcall inside the policy may catch one error but
 * the next instruction of its caller raises again; the call unwinds for
 * good. */
static void halt(lua_State *S, sandbox *sb) {
  lua_sethook(S, budget_hook, LUA_MASKCOUNT, 1);
  luaL_error(S, "%s", sb->stop);
}

static void budget_hook(lua_State *S, lua_Debug *ar) {
  (void)ar;
  sandbox *sb = sb_of(S);
  take(sb, lua_gethookcount(S));
  if (over(sb, 1)) halt(S, sb);
}

/* Work a library function is about to do, in units: raises if the budget
 * cannot pay for it, and reads the clock every HOOK_EVERY units. */
static void charge(lua_State *S, double units) {
  sandbox *sb = sb_of(S);
  take(sb, units);
  sb->since_clock += units < HOOK_EVERY ? (long)units + 1 : HOOK_EVERY;
  int clock = sb->since_clock >= HOOK_EVERY;
  if (clock) sb->since_clock = 0;
  if (over(sb, clock)) halt(S, sb);
}

/* ---- library functions charged by the work they do ---- */

/* lua_tointeger with a default, never raising: a bad argument is left
 * for the real function to report. */
static lua_Integer opt_int(lua_State *S, int i, lua_Integer def) {
  int isnum;
  lua_Integer v = lua_tointegerx(S, i, &isnum);
  return isnum ? v : def;
}

static size_t str_len(lua_State *S, int i) {
  size_t n = 0;
  if (lua_type(S, i) == LUA_TSTRING) lua_tolstring(S, i, &n);
  return n;
}

/* string.byte's and find's positions: i relative to len, clipped to [1, len + 1) */
static lua_Integer pos_from(lua_Integer pos, size_t len) {
  if (pos > 0) return pos;
  if (pos == 0 || pos < -(lua_Integer)len) return 1;
  return (lua_Integer)len + pos + 1;
}

static lua_Integer pos_to(lua_Integer pos, size_t len) {
  if (pos > (lua_Integer)len) return (lua_Integer)len;
  if (pos >= 0) return pos;
  if (pos < -(lua_Integer)len) return 0;
  return (lua_Integer)len + pos + 1;
}

static double span(lua_Integer from, lua_Integer to) {
  return to >= from ? (double)to - (double)from + 1 : 0;
}

/* #t as the table library sees it (__len included), or 0 for a value
 * the real function will refuse */
static lua_Integer tlen(lua_State *S, int i) {
  if (lua_type(S, i) != LUA_TTABLE) return 0;
  lua_len(S, i);
  lua_Integer n = opt_int(S, -1, 0);
  lua_pop(S, 1);
  return n;
}

enum {
  C_ARGS,   /* the arguments: one unit each, and their strings' bytes */
  C_BYTE,   /* string.byte: the values pushed */
  C_REP,    /* string.rep: the copies (the bytes are allocated) */
  C_CONCAT, /* table.concat: the elements in [i, j] */
  C_UNPACK, /* table.unpack: the elements in [i, j] */
  C_MOVE,   /* table.move: the elements moved */
  C_INSERT, /* table.insert: the elements shifted */
  C_REMOVE, /* table.remove: the elements shifted */
  C_SORT,   /* table.sort: n log n comparisons */
  C_UTF8,   /* utf8.len, utf8.codepoint, utf8.offset: the bytes decoded */
  C_CODES,  /* utf8.codes' iterator: the continuation bytes skipped */
  C_FIND,   /* the pattern functions: the bound of their work (patcost.c) */
  C_MATCH,
  C_GMATCH,
  C_GSUB,
  C_STEP,   /* gmatch's iterator: what its gmatch paid, once per call */
};

/* How many tables one lookup in the value at idx may visit: the chain of
 * its metatables' `field` (__index or __newindex) while that is a table,
 * as the VM follows it (up to its 2,000; raw, as the VM looks). A library
 * function reading or writing n elements through it does up to n times
 * this work in C. */
static int bw_chain(lua_State *S, int idx, const char *field) {
  int n = 1;
  lua_pushvalue(S, idx);
  for (;;) {
    int t = luaL_getmetafield(S, -1, field); /* pushes nothing for nil */
    if (t == LUA_TNIL) break;
    lua_remove(S, -2);
    if (t != LUA_TTABLE || ++n >= 2000) break;
  }
  lua_pop(S, 1);
  return n;
}

/* The lookups per element of a table function on arg 1: reads follow
 * __index, writes __newindex */
static double reads(lua_State *S) {
  return bw_chain(S, 1, "__index");
}

static double rw(lua_State *S, int dst) {
  int r = bw_chain(S, 1, "__index"), w = bw_chain(S, dst, "__newindex");
  return r > w ? r : w;
}

static double cost(lua_State *S, int kind) {
  int n = lua_gettop(S);
  switch (kind) {
  case C_BYTE: {
    size_t l = str_len(S, 1);
    lua_Integer i = pos_from(opt_int(S, 2, 1), l);
    return span(i, pos_to(opt_int(S, 3, i), l));
  }
  case C_REP:
    return (double)opt_int(S, 2, 0) / ALLOC_BYTES; /* string.rep("", n) allocates nothing */
  case C_CONCAT: { /* concat(t, sep, i, j) */
    lua_Integer i = opt_int(S, 3, 1);
    return span(i, lua_isnoneornil(S, 4) ? tlen(S, 1) : opt_int(S, 4, 0)) * reads(S);
  }
  case C_UNPACK: { /* unpack(t, i, j); it refuses a million itself */
    lua_Integer i = opt_int(S, 2, 1);
    double c = span(i, lua_isnoneornil(S, 3) ? tlen(S, 1) : opt_int(S, 3, 0));
    return (c < 1e6 ? c : 1e6) * reads(S);
  }
  case C_MOVE: /* move(a1, f, e, t, a2) */
    return span(opt_int(S, 2, 1), opt_int(S, 3, 0)) * rw(S, n >= 5 ? 5 : 1);
  case C_INSERT:
    return (n == 3 ? span(opt_int(S, 2, 1), tlen(S, 1) + 1) : 1) * rw(S, 1);
  case C_REMOVE: {
    lua_Integer size = tlen(S, 1);
    return span(opt_int(S, 2, size), size) * rw(S, 1);
  }
  case C_SORT: { /* n times its bit length: n log2 n, without libm */
    lua_Integer e = tlen(S, 1);
    double bits = 0;
    for (lua_Integer k = e; k > 1; k >>= 1) bits++;
    return (e > 1 ? (double)e * bits : 1) * rw(S, 1);
  }
  case C_UTF8:
    return (double)str_len(S, 1) / SCAN_BYTES + 1;
  case C_CODES: { /* the iterator skips continuation bytes from (s, i) */
    size_t l = str_len(S, 1);
    lua_Integer i = opt_int(S, 2, 0), j = i;
    const char *s = lua_tostring(S, 1);
    if (s && i >= 0)
      while (j < (lua_Integer)l && (s[j] & 0xC0) == 0x80) j++;
    return (double)(j - i) / SCAN_BYTES + 1;
  }
  default: {
    double c = n;
    for (int i = 1; i <= n; i++) c += (double)str_len(S, i) / SCAN_BYTES;
    return c;
  }
  }
}

/* ---- the pattern functions: their bound paid first ---- */

#define PATTERN_TOO_COSTLY                                                   \
  "pattern too costly for the policy sandbox on a subject of %zu bytes (its " \
  "worst case passes the instruction budget left; anchor it with ^, use "      \
  "fewer * + - items, or find with plain = true)"
#define PLAIN_TOO_COSTLY                                                     \
  "plain find too costly for the policy sandbox on a subject of %zu bytes "  \
  "(it passes the instruction budget left)"

/* Stop the call as if its budget were spent, saying why: a pattern
 * function that would pass the budget does no work at all, and a pcall in
 * the policy cannot keep the call going. */
static void refuse(lua_State *S, sandbox *sb, const char *why, size_t n) {
  if (!sb->stop[0]) snprintf(sb->stop, sizeof sb->stop, why, n);
  sb->left = -1;
  halt(S, sb);
}

/* What is left of the budget, in steps, as the bounds' cap: a bound
 * reaching it passes the budget. */
static uint64_t steps_left(sandbox *sb) {
  if (sb->left < 0) return 0;
  uint64_t s = ((uint64_t)sb->left + 1) * PATTERN_STEPS;
  return s < BW_PAT_MAXCAP ? s : BW_PAT_MAXCAP;
}

/* Pay `steps` (a bound) for the call on a subject of n bytes, or refuse
 * it; a bound at BW_PAT_MAXCAP is refused whatever the budget. */
static void pay_steps(lua_State *S, sandbox *sb, uint64_t steps, size_t n) {
  uint64_t units = (steps + PATTERN_STEPS - 1) / PATTERN_STEPS;
  if (steps >= BW_PAT_MAXCAP || sb->left < 0 || units > (uint64_t)sb->left)
    refuse(S, sb, PATTERN_TOO_COSTLY, n);
  charge(S, (double)units);
}

/* find with plain = true, or a pattern without special characters: memmem,
 * linear in the subject (stock find compares the pattern at each place
 * its first byte is found, quadratic on near-matches). Stock results. */
static int plain_find(lua_State *S, sandbox *sb, const bw_patcall *c) {
  size_t rest = c->n - c->init;
  uint64_t units = (rest + c->lp) / PLAIN_BYTES + 1;
  if (units > (uint64_t)sb->left) refuse(S, sb, PLAIN_TOO_COSTLY, c->n);
  charge(S, (double)units);
  const char *at = c->s + c->init;
  if (c->lp > 0) at = c->lp <= rest ? memmem(at, rest, c->p, c->lp) : NULL;
  if (!at) {
    lua_pushnil(S);
    return 1;
  }
  lua_pushinteger(S, (lua_Integer)(at - c->s) + 1);
  lua_pushinteger(S, (lua_Integer)(at - c->s + c->lp));
  return 2;
}

/* The bound of the call: the pattern's own, and the subject's when that is
 * smaller and its analysis costs less than the difference; the analysis
 * takes its memory under the sandbox's cap. */
static uint64_t pattern_bound(lua_State *S, sandbox *sb, const bw_patcall *c) {
  pay_steps(S, sb, 2 * (uint64_t)c->lp, c->n); /* reading the pattern */
  uint64_t bound = bw_pat_coarse(c, steps_left(sb));
  size_t bytes;
  uint64_t plan = bw_pat_plan(c, &bytes);
  if (plan >= bound || !bytes || bytes > sb->limit - sb->used) return bound;
  pay_steps(S, sb, plan, c->n);
  void *mem = malloc(bytes);
  if (!mem) return bound;
  sb->used += bytes;
  uint64_t fine = bw_pat_bound(c, mem, steps_left(sb));
  sb->used -= bytes;
  free(mem);
  return fine < bound ? fine : bound;
}

/* Before find, match, gmatch or gsub: the arguments read as the stock
 * function reads them and the bound paid. Returns -1 to call the stock
 * function (which raises on bad arguments), or the number of results it
 * pushed itself (a plain find). *units: what gmatch's iterator pays,
 * *subject: the subject's length. */
static int pattern_pay(lua_State *S, int kind, lua_Integer *units, size_t *subject) {
  sandbox *sb = sb_of(S);
  int t1 = lua_type(S, 1), t2 = lua_type(S, 2), t3 = lua_type(S, 3);
  if ((t1 != LUA_TSTRING && t1 != LUA_TNUMBER) || (t2 != LUA_TSTRING && t2 != LUA_TNUMBER)) {
    charge(S, 1);
    return -1;
  }
  bw_patcall c = {0};
  c.s = lua_tolstring(S, 1, &c.n);
  c.p = lua_tolstring(S, 2, &c.lp);
  *subject = c.n;
  c.fn = kind == C_FIND ? BW_PAT_FIND : kind == C_MATCH ? BW_PAT_MATCH
       : kind == C_GMATCH ? BW_PAT_GMATCH : BW_PAT_GSUB;
  if (kind == C_GSUB) {
    if (t3 == LUA_TSTRING || t3 == LUA_TNUMBER) /* scanned, its escapes expanded */
      c.per_match = 3 * (uint64_t)str_len(S, 3) + 32;
    else if (t3 == LUA_TTABLE)
      c.per_match = CALL_STEPS * (uint64_t)bw_chain(S, 3, "__index") + 32;
    else if (t3 == LUA_TFUNCTION)
      c.per_match = CALL_STEPS + CAPTURE_STEPS;
    if (t3 == LUA_TNUMBER) c.per_match += 3 * 48; /* written as a string */
  } else {
    lua_Integer init = 1;
    int isnum = 1;
    if (!lua_isnoneornil(S, 3)) init = lua_tointegerx(S, 3, &isnum);
    init = pos_from(init, c.n);
    if (!isnum || init > (lua_Integer)c.n + 1) { /* it raises, or tries nothing */
      charge(S, 1);
      *units = 1;
      return -1;
    }
    c.init = (size_t)init - 1;
    c.per_match = kind == C_GMATCH ? CAPTURE_STEPS : 0;
  }
  if (kind == C_FIND) {
    charge(S, (double)(c.lp / PLAIN_BYTES)); /* looking for special characters */
    if (lua_toboolean(S, 4) || bw_pat_plain(c.p, c.lp)) return plain_find(S, sb, &c);
  }
  uint64_t steps = pattern_bound(S, sb, &c);
  pay_steps(S, sb, steps, c.n);
  *units = (lua_Integer)((steps + PATTERN_STEPS - 1) / PATTERN_STEPS) + 1;
  return -1;
}

/* A call of gmatch's iterator (upvalues 4 to 7: what its gmatch paid, the
 * call of the policy it paid in, whether it has ended, the subject's
 * length). gmatch paid for the whole walk; a later call of the policy pays
 * it again. The stock iterator starts where the last match ended each
 * time it is called: once it has ended it is not called again (it would
 * scan the rest again for nothing), and after an error it pays again (it
 * would redo the work up to the error). */
static int step_pay(lua_State *S) {
  sandbox *sb = sb_of(S);
  if (lua_toboolean(S, lua_upvalueindex(6))) return 0;
  if (lua_tointeger(S, lua_upvalueindex(5)) != sb->epoch) {
    lua_Integer units = lua_tointeger(S, lua_upvalueindex(4));
    if (units > sb->left)
      refuse(S, sb, PATTERN_TOO_COSTLY, (size_t)lua_tointeger(S, lua_upvalueindex(7)));
    charge(S, (double)units);
    lua_pushinteger(S, sb->epoch);
    lua_replace(S, lua_upvalueindex(5));
  }
  charge(S, 1);
  return -1;
}

/* The message handler of a charged call (upvalue: the function). An
 * error the function raises itself (a bad argument) is placed where the
 * policy called it, as stock errors are: the function is called from C
 * here, which has no line. Anything else passes as it is. */
static int locate(lua_State *S) {
  lua_Debug ar;
  if (lua_type(S, 1) != LUA_TSTRING || !lua_getstack(S, 1, &ar) || !lua_getinfo(S, "f", &ar))
    return 1;
  int own = lua_rawequal(S, -1, lua_upvalueindex(1));
  lua_pop(S, 1);
  if (own) { /* levels: 1 the function, 2 charged(), 3 the policy */
    luaL_where(S, 3);
    lua_insert(S, 1);
    lua_concat(S, 2);
  }
  return 1;
}

/* A library function behind its charge: upvalues the function, the kind
 * of cost, its locate() (and gmatch's iterator, what it paid). */
static int charged(lua_State *S) {
  int kind = (int)lua_tointeger(S, lua_upvalueindex(2)), r = -1;
  lua_Integer units = 0;
  size_t subject = 0;
  if (kind == C_STEP) r = step_pay(S);
  else if (kind >= C_FIND) r = pattern_pay(S, kind, &units, &subject);
  else charge(S, cost(S, kind));
  if (r >= 0) return r;
  int n = lua_gettop(S);
  lua_pushvalue(S, lua_upvalueindex(3));
  lua_pushvalue(S, lua_upvalueindex(1));
  lua_rotate(S, 1, 2);
  if (lua_pcall(S, n, LUA_MULTRET, 1) != LUA_OK) {
    if (kind == C_STEP) { /* it pays again */
      lua_pushinteger(S, 0);
      lua_replace(S, lua_upvalueindex(5));
    }
    return lua_error(S);
  }
  if (kind == C_STEP && lua_gettop(S) == 1) { /* it ended */
    lua_pushboolean(S, 1);
    lua_replace(S, lua_upvalueindex(6));
  }
  if (kind == C_GMATCH) { /* the iterator, charged in turn */
    lua_settop(S, 2);
    lua_pushinteger(S, C_STEP);
    lua_pushvalue(S, 2);
    lua_pushcclosure(S, locate, 1);
    lua_pushinteger(S, units);
    lua_pushinteger(S, sb_of(S)->epoch);
    lua_pushboolean(S, 0);
    lua_pushinteger(S, (lua_Integer)subject);
    lua_pushcclosure(S, charged, 7);
    return 1;
  }
  return lua_gettop(S) - 1;
}

/* Replace the function on top by its charged closure. */
static void push_charged(lua_State *S, int kind) {
  lua_pushinteger(S, kind);
  lua_pushvalue(S, -2);
  lua_pushcclosure(S, locate, 1);
  lua_pushcclosure(S, charged, 3);
}

/* utf8.codes: its iterator charged too (a policy may call it directly) */
static int charged_codes(lua_State *S) {
  charge(S, 1);
  lua_pushvalue(S, lua_upvalueindex(1));
  lua_insert(S, 1);
  lua_call(S, lua_gettop(S) - 1, 3);
  lua_pushvalue(S, -3);
  push_charged(S, C_CODES);
  lua_replace(S, -4);
  return 3;
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
    if (fns->cost >= 0) push_charged(S, fns->cost);
    lua_setfield(S, -2, fns->name);
  }
  lua_remove(S, -2);
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
    if (f->cost >= 0) push_charged(S, f->cost);
    lua_setfield(S, -2, f->name);
  }
  lua_pushcfunction(S, safe_getmetatable);
  lua_setfield(S, -2, "getmetatable");
  lua_pushcfunction(S, safe_setmetatable);
  lua_setfield(S, -2, "setmetatable");
  lua_pushcfunction(S, safe_xpcall);
  lua_setfield(S, -2, "xpcall");
  lua_pushcfunction(S, sb_size);
  push_charged(S, C_ARGS);
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
  lua_pushcclosure(S, charged_codes, 1);
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
} xfer;

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
      push_charged(S, C_ARGS); /* its calls count against the budget */
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
  sb->deadline = now_ms() + sb->ms;
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

/* sb:load(name, source, options [, store [, chunkname]]) -> true | nil, message
 * Runs the chunk with options as its argument in an _ENV of its own; it
 * must return a table with a check function, or declared rules. store: a
 * counter file the host opens (the operator's path), shared_add in that
 * _ENV. chunkname (Lua's: "@FILE" names a file) is what errors and
 * tracebacks show; default: name. */
static int sb_load(lua_State *L) {
  sandbox *sb = check_sb(L);
  const char *name = luaL_checkstring(L, 2);
  size_t len;
  const char *src = luaL_checklstring(L, 3, &len);
  const char *chunk = luaL_optstring(L, 6, name);
  lua_State *S = sb->S;
  int top = lua_gettop(S);
  const char *store = luaL_optstring(L, 5, NULL);
  xfer x = {L, 4, lua_isnoneornil(L, 4) ? 0 : 1, 1, NULL};
  if (store) {
    int src_rc = bw_counters_open(store, &x.store);
    if (src_rc) {
      const char *d = bw_detail();
      lua_pushnil(L);
      lua_pushfstring(L, "cannot open the store %s: %s%s%s", store, bw_code_name(src_rc), d ? ": " : "", d ? d : "");
      return 2;
    }
  }
  int rc = luaL_loadbufferx(S, src, len, chunk, "t"); /* text only */
  if (rc == LUA_OK) rc = run(sb, &x);
  bw_counters_close(x.store); /* not taken (the chunk did not load) */
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
  xfer x = {L, 4, n > 2 ? 2 : n, 0, NULL};
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
  luaL_openlibs(sb->S);
  build_base(sb->S);
  lua_newtable(sb->S);
  lua_setfield(sb->S, LUA_REGISTRYINDEX, "burrow.sandbox.policies");
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

/* The pattern bound, for tests and for measuring it (no sandbox):
 * core._pattern_bound(fn, s, p [, init [, per_match]]) -> the bound from
 * the pattern alone and the one from the subject too (nil if it cannot
 * run), in steps; fn is "find", "match", "gmatch" or "gsub"; init 1-based;
 * per_match: the steps each match adds.
 * core._pattern_states(s, p) -> for each start 1..#s+1 what the analysis
 * knows of a try of p there as gmatch reads it ('^' a plain byte): "F",
 * "S<end>" (the match's last byte), "U" or "M" (patcost.h). */
static int pattern_call(lua_State *L, bw_patcall *c, int fn) {
  static const char *const fns[] = {"find", "match", "gmatch", "gsub", NULL};
  static const int ids[] = {BW_PAT_FIND, BW_PAT_MATCH, BW_PAT_GMATCH, BW_PAT_GSUB};
  memset(c, 0, sizeof *c);
  c->fn = fn >= 0 ? fn : ids[luaL_checkoption(L, 1, NULL, fns)];
  int a = fn >= 0 ? 1 : 2;
  c->s = luaL_checklstring(L, a, &c->n);
  c->p = luaL_checklstring(L, a + 1, &c->lp);
  lua_Integer init = pos_from(luaL_optinteger(L, a + 2, 1), c->n);
  luaL_argcheck(L, c->fn != BW_PAT_GSUB || init == 1, a + 2, "gsub starts at 1");
  luaL_argcheck(L, init <= (lua_Integer)c->n + 1, a + 2, "past the end");
  c->init = (size_t)init - 1;
  c->per_match = (uint64_t)luaL_optinteger(L, a + 3, 0);
  return 0;
}

static int l_pattern_bound(lua_State *L) {
  bw_patcall c;
  pattern_call(L, &c, -1);
  lua_pushinteger(L, (lua_Integer)bw_pat_coarse(&c, BW_PAT_MAXCAP));
  size_t bytes;
  bw_pat_plan(&c, &bytes);
  void *mem = bytes ? malloc(bytes) : NULL;
  if (!mem) {
    lua_pushnil(L);
    return 2;
  }
  lua_pushinteger(L, (lua_Integer)bw_pat_bound(&c, mem, BW_PAT_MAXCAP));
  free(mem);
  return 2;
}

static int l_pattern_states(lua_State *L) {
  bw_patcall c;
  pattern_call(L, &c, BW_PAT_GMATCH);
  size_t bytes;
  bw_pat_plan(&c, &bytes);
  void *mem = bytes ? malloc(bytes) : NULL;
  if (!mem) return luaL_error(L, "no memory for the analysis");
  bw_pat_bound(&c, mem, BW_PAT_MAXCAP);
  lua_createtable(L, (int)c.n + 1, 0);
  for (size_t i = c.init; i <= c.n; i++) {
    size_t end;
    int st = bw_pat_state(&c, mem, i, &end);
    if (st == 'S') lua_pushfstring(L, "S%I", (lua_Integer)end);
    else lua_pushfstring(L, "%c", st);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  free(mem);
  return 1;
}

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
  lua_pushcfunction(L, l_pattern_bound);
  lua_setfield(L, -2, "_pattern_bound");
  lua_pushcfunction(L, l_pattern_states);
  lua_setfield(L, -2, "_pattern_states");
}
