/*
 * lyaml.c - core.yaml_decode(text): YAML text (libyaml) to Lua values for
 * the configuration, with the position of every key, value and item so
 * that errors can say file:line:column.
 *
 *   value, positions = core.yaml_decode(text)
 *   nil, "line L, column C: problem"        -- bad YAML or outside the subset
 *
 * The subset is small on purpose:
 * - one document; mappings become tables, sequences tables with
 *   core.json.array_mt, mapping keys are always strings;
 * - plain scalars resolve by the YAML 1.2 core schema: null, ~ and empty
 *   are core.json.null; true/True/TRUE and false/False/FALSE are booleans
 *   (yes/no/on/off stay strings: those are YAML 1.1); decimal, 0o and 0x
 *   integers are integers (beyond 64 bits is an error, never a rounded
 *   float); decimals, exponents, .inf and .nan are floats; anything else,
 *   and every quoted or block scalar, is a string;
 * - anchors, aliases, merge keys (<<), tags and %TAG directives are
 *   refused, so there are no alias bombs and no type tricks; duplicate
 *   keys are refused;
 * - at most 1 MiB of input and 64 levels of nesting.
 *
 * positions[t] = {line=, col=, keys = {k = {line=, col=}},
 *                 values = {k = {line=, col=}}, items = {{line=, col=}...}}
 * for every table t in the value (keys/values for mappings, items for
 * sequences); lines and columns are 1-based, columns count characters.
 */
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "lyaml.h"

#define PARSER_MT "burrow.yaml.parser"
#define YAML_MAX_BYTES ((size_t)1 << 20)
#define YAML_MAX_DEPTH 64

/* upvalues of yaml_decode: core.json.null and core.json.array_mt */
#define NULL_IDX lua_upvalueindex(1)
#define ARRAY_MT_IDX lua_upvalueindex(2)

/* The libyaml state lives in a userdata whose __gc frees it, so a Lua
 * error while building tables (out of memory) cannot leak it. */
typedef struct yparser {
  yaml_parser_t p;
  yaml_event_t ev;
  int live;   /* p is initialised */
  int has_ev; /* ev holds an event to delete */
} yparser;

typedef struct dec {
  lua_State *L;
  yparser *y;
  const char *text;
  size_t len;
  int pos; /* stack index of the positions table */
  char err[256];
} dec;

static int parser_gc(lua_State *L) {
  yparser *y = luaL_checkudata(L, 1, PARSER_MT);
  if (y->has_ev) yaml_event_delete(&y->ev);
  if (y->live) yaml_parser_delete(&y->p);
  y->has_ev = y->live = 0;
  return 0;
}

/* ---- errors: "line L, column C: ..." with 1-based numbers ---- */

static int fail_at(dec *d, yaml_mark_t m, const char *fmt, ...) {
  int n = snprintf(d->err, sizeof d->err, "line %zu, column %zu: ",
                   m.line + 1, m.column + 1);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof d->err)
    vsnprintf(d->err + n, sizeof d->err - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* The mark of a byte offset: libyaml's reader errors carry only that. */
static yaml_mark_t mark_of(const dec *d, size_t off) {
  yaml_mark_t m = {0, 0, 0};
  for (size_t i = 0; i < off && i < d->len; i++) {
    unsigned char c = (unsigned char)d->text[i];
    if (c == '\n' || (c == '\r' && (i + 1 >= d->len || d->text[i + 1] != '\n'))) {
      m.line++;
      m.column = 0;
    } else if ((c & 0xC0) != 0x80 && c != '\r') {
      m.column++;
    }
  }
  return m;
}

static int parse_error(dec *d) {
  const yaml_parser_t *p = &d->y->p;
  const char *prob = p->problem ? p->problem : "invalid YAML";
  yaml_mark_t none = {0, 0, 0};
  switch (p->error) {
  case YAML_MEMORY_ERROR:
    snprintf(d->err, sizeof d->err, "out of memory while parsing YAML");
    return -1;
  case YAML_READER_ERROR:
    return fail_at(d, mark_of(d, p->problem_offset), "%s", prob);
  case YAML_SCANNER_ERROR:
  case YAML_PARSER_ERROR:
    if (p->context)
      return fail_at(d, p->problem_mark, "%s (%s at line %zu, column %zu)", prob,
                     p->context, p->context_mark.line + 1,
                     p->context_mark.column + 1);
    return fail_at(d, p->problem_mark, "%s", prob);
  default:
    return fail_at(d, none, "%s", prob);
  }
}

/* ---- events ---- */

static int next_event(dec *d) {
  yparser *y = d->y;
  if (y->has_ev) yaml_event_delete(&y->ev);
  y->has_ev = 0;
  if (!yaml_parser_parse(&y->p, &y->ev)) return parse_error(d);
  y->has_ev = 1;
  return 0;
}

/* Refuses what the subset leaves out: aliases, anchors, tags. */
static int check_node(dec *d) {
  const yaml_event_t *e = &d->y->ev;
  const yaml_char_t *anchor = NULL, *tag = NULL;
  switch (e->type) {
  case YAML_ALIAS_EVENT:
    return fail_at(d, e->start_mark, "aliases (*%s) are not supported",
                   (const char *)e->data.alias.anchor);
  case YAML_SCALAR_EVENT:
    anchor = e->data.scalar.anchor;
    tag = e->data.scalar.tag;
    break;
  case YAML_SEQUENCE_START_EVENT:
    anchor = e->data.sequence_start.anchor;
    tag = e->data.sequence_start.tag;
    break;
  case YAML_MAPPING_START_EVENT:
    anchor = e->data.mapping_start.anchor;
    tag = e->data.mapping_start.tag;
    break;
  default:
    return fail_at(d, e->start_mark, "a value was expected");
  }
  if (anchor)
    return fail_at(d, e->start_mark, "anchors (&%s) are not supported",
                   (const char *)anchor);
  if (tag)
    return fail_at(d, e->start_mark, "tags (%s) are not supported",
                   (const char *)tag);
  return 0;
}

static void push_mark(lua_State *L, yaml_mark_t m) {
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)m.line + 1);
  lua_setfield(L, -2, "line");
  lua_pushinteger(L, (lua_Integer)m.column + 1);
  lua_setfield(L, -2, "col");
}

/* ---- scalars (YAML 1.2 core schema) ---- */

static int one_of(const char *s, size_t n, const char *const *words) {
  for (; *words; words++)
    if (strlen(*words) == n && memcmp(s, *words, n) == 0) return 1;
  return 0;
}

static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
static const char *const trues[] = {"true", "True", "TRUE", NULL};
static const char *const falses[] = {"false", "False", "FALSE", NULL};
static const char *const infs[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf",
                                   "+.INF", NULL};
static const char *const ninfs[] = {"-.inf", "-.Inf", "-.INF", NULL};
static const char *const nans[] = {".nan", ".NaN", ".NAN", NULL};

static int digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

/* [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+: pushes it and returns 1;
 * 0 if s is no integer; -1 if it is one beyond 64 bits. */
static int push_int(dec *d, const char *s, size_t n, yaml_mark_t m) {
  int base = 10, neg = 0;
  size_t i = 0;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    base = s[1] == 'x' ? 16 : 8;
    i = 2;
  } else if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    i = 1;
  }
  if (i == n) return 0;
  uint64_t v = 0;
  int over = 0;
  for (; i < n; i++) {
    int g = digit(s[i]);
    if (g >= base) return 0;
    if (v > (UINT64_MAX - (uint64_t)g) / (uint64_t)base) over = 1;
    else v = v * (uint64_t)base + (uint64_t)g;
  }
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  if (over || v > limit)
    return fail_at(d, m, "integer %.*s does not fit in 64 bits", (int)(n > 40 ? 40 : n), s);
  if (!neg) lua_pushinteger(d->L, (lua_Integer)v);
  else if (v == (uint64_t)INT64_MAX + 1) lua_pushinteger(d->L, LUA_MININTEGER);
  else lua_pushinteger(d->L, -(lua_Integer)v);
  return 1;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int is_float(const char *s, size_t n) {
  size_t i = 0, whole = 0, frac = 0, exp = 0;
  if (i < n && (s[i] == '-' || s[i] == '+')) i++;
  for (; i < n && is_digit(s[i]); i++) whole++;
  if (i < n && s[i] == '.')
    for (i++; i < n && is_digit(s[i]); i++) frac++;
  if (whole == 0 && frac == 0) return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    for (; i < n && is_digit(s[i]); i++) exp++;
    if (exp == 0) return 0;
  }
  return i == n;
}

static int push_plain(dec *d, const char *s, size_t n, yaml_mark_t m) {
  lua_State *L = d->L;
  if (n == 0 || one_of(s, n, nulls)) lua_pushvalue(L, NULL_IDX);
  else if (one_of(s, n, trues)) lua_pushboolean(L, 1);
  else if (one_of(s, n, falses)) lua_pushboolean(L, 0);
  else if (one_of(s, n, infs)) lua_pushnumber(L, HUGE_VAL);
  else if (one_of(s, n, ninfs)) lua_pushnumber(L, -HUGE_VAL);
  else if (one_of(s, n, nans)) lua_pushnumber(L, NAN);
  else {
    int r = push_int(d, s, n, m);
    if (r < 0) return -1;
    if (r > 0) return 0;
    /* lua_stringtonumber copes with the C locale's decimal point */
    if (!(is_float(s, n) && strlen(s) == n && lua_stringtonumber(L, s) == n + 1))
      lua_pushlstring(L, s, n);
  }
  return 0;
}

/* ---- collections ---- */

static int parse_node(dec *d, int depth);

/* Pushes a new table t and its positions entry; returns t's index. */
static int new_collection(dec *d, int array, yaml_mark_t m) {
  lua_State *L = d->L;
  lua_newtable(L); /* t */
  if (array) {
    lua_pushvalue(L, ARRAY_MT_IDX);
    lua_setmetatable(L, -2);
  }
  push_mark(L, m); /* info */
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  lua_rawset(L, d->pos); /* positions[t] = info */
  return lua_gettop(L) - 1;
}

/* Adds a subtable info[name] and pushes it. */
static void info_field(lua_State *L, int t, const char *name) {
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, t + 1, name);
}

static int parse_seq(dec *d, int depth) {
  lua_State *L = d->L;
  int t = new_collection(d, 1, d->y->ev.start_mark);
  info_field(L, t, "items");
  for (lua_Integer n = 1;; n++) {
    if (next_event(d)) return -1;
    if (d->y->ev.type == YAML_SEQUENCE_END_EVENT) break;
    push_mark(L, d->y->ev.start_mark);
    lua_rawseti(L, t + 2, n);
    if (parse_node(d, depth)) return -1;
    lua_rawseti(L, t, n);
  }
  lua_settop(L, t);
  return 0;
}

static int parse_map(dec *d, int depth) {
  lua_State *L = d->L;
  int t = new_collection(d, 0, d->y->ev.start_mark);
  info_field(L, t, "keys");
  info_field(L, t, "values");
  for (;;) {
    if (next_event(d)) return -1;
    const yaml_event_t *e = &d->y->ev;
    if (e->type == YAML_MAPPING_END_EVENT) break;
    if (check_node(d)) return -1;
    if (e->type != YAML_SCALAR_EVENT)
      return fail_at(d, e->start_mark, "a key must be a plain value, not a list or mapping");
    const char *k = (const char *)e->data.scalar.value;
    size_t kn = e->data.scalar.length;
    int shown = (int)(kn > 60 ? 60 : kn);
    if (e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && kn == 2 && memcmp(k, "<<", 2) == 0)
      return fail_at(d, e->start_mark, "merge keys (<<) are not supported");
    lua_pushlstring(L, k, kn); /* key */
    lua_pushvalue(L, -1);
    if (lua_rawget(L, t) != LUA_TNIL)
      return fail_at(d, e->start_mark, "duplicate key \"%.*s\"", shown, k);
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    push_mark(L, e->start_mark);
    lua_rawset(L, t + 2); /* keys[key] */
    if (next_event(d)) return -1;
    lua_pushvalue(L, -1);
    push_mark(L, d->y->ev.start_mark);
    lua_rawset(L, t + 3); /* values[key] */
    if (parse_node(d, depth)) return -1;
    lua_rawset(L, t);
  }
  lua_settop(L, t);
  return 0;
}

/* Pushes the value of the node whose first event is current; depth counts
 * the collections around it. */
static int parse_node(dec *d, int depth) {
  const yaml_event_t *e = &d->y->ev;
  if (check_node(d)) return -1;
  luaL_checkstack(d->L, 12, "YAML nesting");
  if (e->type == YAML_SCALAR_EVENT) {
    const char *s = (const char *)e->data.scalar.value;
    if (e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
      return push_plain(d, s, e->data.scalar.length, e->start_mark);
    lua_pushlstring(d->L, s, e->data.scalar.length);
    return 0;
  }
  if (depth >= YAML_MAX_DEPTH)
    return fail_at(d, e->start_mark, "nesting deeper than %d levels", YAML_MAX_DEPTH);
  if (e->type == YAML_SEQUENCE_START_EVENT) return parse_seq(d, depth + 1);
  return parse_map(d, depth + 1);
}

static int parse_stream(dec *d) {
  if (next_event(d) || next_event(d)) return -1; /* stream start, then ... */
  const yaml_event_t *e = &d->y->ev;
  if (e->type == YAML_STREAM_END_EVENT) { /* empty text */
    lua_pushvalue(d->L, NULL_IDX);
    return 0;
  }
  if (e->data.document_start.tag_directives.start != e->data.document_start.tag_directives.end)
    return fail_at(d, e->start_mark, "%%TAG directives are not supported");
  if (next_event(d) || parse_node(d, 0)) return -1;
  if (next_event(d) || next_event(d)) return -1; /* document end, then ... */
  if (d->y->ev.type != YAML_STREAM_END_EVENT)
    return fail_at(d, d->y->ev.start_mark, "only one YAML document is supported");
  return 0;
}

/* yaml_decode(text) -> value, positions | nil, "line L, column C: ..." */
static int l_decode(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_settop(L, 1);
  if (len > YAML_MAX_BYTES) {
    lua_pushnil(L);
    lua_pushfstring(L, "YAML text too large: %I bytes (the limit is %I)",
                    (lua_Integer)len, (lua_Integer)YAML_MAX_BYTES);
    return 2;
  }
  yparser *y = lua_newuserdatauv(L, sizeof *y, 0); /* 2 */
  y->live = y->has_ev = 0; /* closed until initialised */
  luaL_setmetatable(L, PARSER_MT);
  if (!yaml_parser_initialize(&y->p)) return luaL_error(L, "out of memory");
  y->live = 1;
  yaml_parser_set_input_string(&y->p, (const unsigned char *)s, len);
  lua_newtable(L); /* 3: positions */
  dec d = {L, y, s, len, 3, ""};
  if (parse_stream(&d)) {
    lua_pushnil(L);
    lua_pushstring(L, d.err);
  } else {
    lua_pushvalue(L, 3);
  }
  lua_pushcfunction(L, parser_gc); /* free libyaml's buffers now */
  lua_pushvalue(L, 2);
  lua_call(L, 1, 0);
  return 2;
}

void bw_yaml_register(lua_State *L) {
  if (luaL_newmetatable(L, PARSER_MT)) {
    lua_pushcfunction(L, parser_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, -1, "json") != LUA_TTABLE)
    luaL_error(L, "burrow.core: json must be registered before yaml");
  lua_getfield(L, -1, "null");
  lua_getfield(L, -2, "array_mt");
  lua_remove(L, -3);
  lua_pushcclosure(L, l_decode, 2);
  lua_setfield(L, -2, "yaml_decode");
}
