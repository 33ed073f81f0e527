/*
 * lsbcharge.c - the policy sandbox's library functions charged by the
 * work they do (lsandbox.c puts them in a policy's environment): table,
 * string and utf8 functions pay for the elements and bytes they touch
 * before they run, and the pattern functions pay an upper bound of their
 * work first (patcost.c), or are refused without running; a plain find
 * is memmem. What they pay goes to the budget of lsandbox.c.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsandbox.h"
#include "patcost.h"

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
  bw_sb_halt(S, sb);
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
  bw_sb_charge(S, (double)units);
}

/* find with plain = true, or a pattern without special characters: memmem,
 * linear in the subject (stock find compares the pattern at each place
 * its first byte is found, quadratic on near-matches). Stock results. */
static int plain_find(lua_State *S, sandbox *sb, const bw_patcall *c) {
  size_t rest = c->n - c->init;
  uint64_t units = (rest + c->lp) / PLAIN_BYTES + 1;
  if (units > (uint64_t)sb->left) refuse(S, sb, PLAIN_TOO_COSTLY, c->n);
  bw_sb_charge(S, (double)units);
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
    bw_sb_charge(S, 1);
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
      bw_sb_charge(S, 1);
      *units = 1;
      return -1;
    }
    c.init = (size_t)init - 1;
    c.per_match = kind == C_GMATCH ? CAPTURE_STEPS : 0;
  }
  if (kind == C_FIND) {
    bw_sb_charge(S, (double)(c.lp / PLAIN_BYTES)); /* looking for special characters */
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
    bw_sb_charge(S, (double)units);
    lua_pushinteger(S, sb->epoch);
    lua_replace(S, lua_upvalueindex(5));
  }
  bw_sb_charge(S, 1);
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
  else bw_sb_charge(S, cost(S, kind));
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
void bw_sb_push_charged(lua_State *S, int kind) {
  lua_pushinteger(S, kind);
  lua_pushvalue(S, -2);
  lua_pushcclosure(S, locate, 1);
  lua_pushcclosure(S, charged, 3);
}

/* utf8.codes: its iterator charged too (a policy may call it directly) */
int bw_sb_charged_codes(lua_State *S) {
  bw_sb_charge(S, 1);
  lua_pushvalue(S, lua_upvalueindex(1));
  lua_insert(S, 1);
  lua_call(S, lua_gettop(S) - 1, 3);
  lua_pushvalue(S, -3);
  bw_sb_push_charged(S, C_CODES);
  lua_replace(S, -4);
  return 3;
}

/* size("100MB") -> 100000000: the host's size syntax, for options */
int bw_sb_size(lua_State *S) {
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
