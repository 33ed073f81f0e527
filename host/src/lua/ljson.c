/*
** ljson.c
** JSON for burrow.core.
** Decoding goes through jansson (strict parser, UTF-8 checking, depth
** limit of JSON_PARSER_MAX_DEPTH, 2048), and refuses nesting deeper than
** 500 levels, half what encoding takes, so that anything decoded can be
** encoded back, also inside a reply. Jansson also rejects integers
** beyond 64 bits and "\u0000" inside object keys (not inside strings).
** Encoding is our own: tool results can be tens of MiB, so it writes
** straight from the Lua value into one growing buffer, copying safe
** bytes eight at a time, and never builds an intermediate tree.
**
** Lua-side conventions:
** - JSON null is 'null', a light userdata (the same value in every state;
**   also in the registry as "burrow.json.null").
** - decoded arrays carry the metatable 'array_mt', so "[]" and "{}" stay
**   apart and round-trip; 'array(t)' marks a table the same way. Such a
**   table encodes as t[1..#t]; other keys are ignored. Other tables are
**   arrays when their keys are exactly 1..n (n >= 1), else objects.
** - strings are encoded as valid UTF-8 whatever they hold: each
**   ill-formed part becomes U+FFFD.
** - encoded floats use the fewest of 15, 16 or 17 significant digits that
**   read back exactly; an integral float gets ".0" ("1.0", "-0.0") so it
**   decodes as a float again. Lua integers are written exactly.
** - object keys are written sorted (bytewise), so output is deterministic.
** - tables are read with raw access: metamethods are not called.
*/

#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <errno.h>
#include <unistd.h>

#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>

#include "core.h"
#include "lcore.h"
#include "ljson.h"


/* the null sentinel: its address is the value, so it is unique */
static char null_sentinel;
#define NULL_VALUE	((void *)&null_sentinel)

#define ARRAY_MT	"burrow.json.array"
#define ENCODER_MT	"burrow.json.encoder"
#define FRAGMENT_MT	BW_JSON_FRAGMENT_MT
/* fragments from this size are spliced rather than copied (ljson.h) */
#define SPLICE_MIN	((size_t)65536)
#define TREE_MT		"burrow.json.tree"

/* deepest nesting 'encode' accepts; it also stops cycles */
#define ENCODE_MAXDEPTH	1000
/* deepest nesting 'decode' accepts (jansson's own limit is 2048): well
   below the encoder's, so a value decoded from a request and sent back
   inside a reply (an id, a progress token) can always be encoded */
#define DECODE_MAXDEPTH	(ENCODE_MAXDEPTH / 2)


/* pushes the array metatable, creating it on first use */
static void push_array_mt (lua_State *L) {
  luaL_newmetatable(L, ARRAY_MT);
}


/*
** {======================================================
** Decoding
** =======================================================
*/

/*
** The jansson tree lives in a userdata whose __gc frees it, so a Lua
** error while converting (out of memory, stack overflow) cannot leak it.
*/
typedef struct Tree {
  json_t *root;
} Tree;


static int tree_gc (lua_State *L) {
  Tree *t = (Tree *)lua_touserdata(L, 1);
  if (t->root != NULL) {
    json_decref(t->root);
    t->root = NULL;
  }
  return 0;
}


static Tree *new_tree (lua_State *L) {
  Tree *t = (Tree *)lua_newuserdatauv(L, sizeof(Tree), 0);
  t->root = NULL;
  if (luaL_newmetatable(L, TREE_MT)) {
    lua_pushcfunction(L, tree_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return t;
}


static int push_json (lua_State *L, json_t *j, int amt, int depth);


static int push_object (lua_State *L, json_t *o, int amt, int depth) {
  const char *key;
  size_t klen;
  json_t *v;
  size_t n = json_object_size(o);
  lua_createtable(L, 0, n <= INT_MAX ? (int)n : 0);
  json_object_keylen_foreach(o, key, klen, v) {
    lua_pushlstring(L, key, klen);  /* keys may hold "\u0000" */
    if (!push_json(L, v, amt, depth))
      return 0;
    lua_rawset(L, -3);
  }
  return 1;
}


static int push_array (lua_State *L, json_t *a, int amt, int depth) {
  size_t i;
  size_t n = json_array_size(a);
  lua_createtable(L, n <= INT_MAX ? (int)n : 0, 0);
  for (i = 0; i < n; i++) {
    if (!push_json(L, json_array_get(a, i), amt, depth))
      return 0;
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushvalue(L, amt);
  lua_setmetatable(L, -2);
  return 1;
}


/* pushes the Lua value of 'j' ('amt' is the stack index of array_mt);
   0 if it nests deeper than DECODE_MAXDEPTH (the stack is then left
   unbalanced: the caller resets it) */
static int push_json (lua_State *L, json_t *j, int amt, int depth) {
  /* each level needs a few slots of Lua stack */
  luaL_checkstack(L, 3, "json decode: nesting too deep");
  switch (json_typeof(j)) {
    case JSON_OBJECT:
    case JSON_ARRAY:
      if (depth == DECODE_MAXDEPTH)
        return 0;
      if (json_typeof(j) == JSON_OBJECT)
        return push_object(L, j, amt, depth + 1);
      return push_array(L, j, amt, depth + 1);
    case JSON_STRING:
      lua_pushlstring(L, json_string_value(j), json_string_length(j));
      break;
    case JSON_INTEGER:
      lua_pushinteger(L, (lua_Integer)json_integer_value(j));
      break;
    case JSON_REAL: lua_pushnumber(L, (lua_Number)json_real_value(j)); break;
    case JSON_TRUE: lua_pushboolean(L, 1); break;
    case JSON_FALSE: lua_pushboolean(L, 0); break;
    case JSON_NULL:
    default: lua_pushlightuserdata(L, NULL_VALUE); break;
  }
  return 1;
}


/* decode(s): value, or fail plus a message for invalid JSON */
static int l_decode (lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  json_error_t err;
  Tree *t;
  lua_settop(L, 1);
  t = new_tree(L);  /* 2 */
  push_array_mt(L);  /* 3 */
  t->root = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
  if (t->root == NULL) {
    luaL_pushfail(L);
    lua_pushfstring(L, "json decode: %s (line %d, column %d)",
                       err.text, err.line, err.column);
    return 2;
  }
  if (!push_json(L, t->root, 3, 0)) {
    lua_settop(L, 3);
    json_decref(t->root);
    t->root = NULL;
    luaL_pushfail(L);
    lua_pushfstring(L, "json decode: nesting deeper than %d levels",
                       DECODE_MAXDEPTH);
    return 2;
  }
  json_decref(t->root);  /* free it now rather than at the next GC */
  t->root = NULL;
  return 1;
}

/* core.json.valid(s) -> true, or nil and why: whether s is one JSON
 * value, as decode would take it, without building it in Lua (a 50 MB
 * notebook checked before it is written). */
static int l_valid (lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  json_error_t err;
  json_t *root = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
  if (root == NULL) {
    luaL_pushfail(L);
    lua_pushfstring(L, "json decode: %s (line %d, column %d)",
                       err.text, err.line, err.column);
    return 2;
  }
  json_decref(root);
  lua_pushboolean(L, 1);
  return 1;
}

/* }====================================================== */


/*
** {======================================================
** Encoding
** =======================================================
*/

/* an object key waiting to be written (after sorting) */
typedef struct Key {
  const char *s;  /* string key (kept alive by its table); NULL if integer */
  size_t len;
  lua_Integer i;  /* integer key */
  char ibuf[24];  /* integer key as text */
} Key;


/*
** Encoder state. It lives in a userdata whose __gc frees the buffers, so
** a Lua error in the middle (memory errors only: everything else is
** reported through 'err') cannot leak them.
** On failure the Lua stack is left unbalanced; callers discard it.
*/
typedef struct Enc {
  lua_State *L;
  char *buf;  /* output */
  size_t n, cap;
  Key *keys;  /* keys of the open objects: one segment per nesting level */
  size_t nkeys, capkeys;
  int depth;
  int amt;  /* stack index of array_mt */
  const char *err;  /* static message, set on failure */
  bw_json_splice *sp;  /* big fragments left out of 'buf', or NULL */
  int nsp;
} Enc;


#define E_MEM		"json encode: out of memory"
#define E_DEPTH		"json encode: nesting deeper than 1000 levels (or a cycle)"
#define E_STACK		"json encode: Lua stack overflow"
#define E_NUMBER	"json encode: cannot encode NaN or infinity"
#define E_DUPKEY	"json encode: duplicate object key " \
			"(same integer and string key)"
#define E_VALUE(t)	"json encode: cannot encode " t
#define E_KEY(t)	"json encode: object key must be a string or " \
			"an integer, got " t


static int fail (Enc *e, const char *msg) {
  e->err = msg;
  return 0;
}


static void enc_free (Enc *e) {
  free(e->buf);
  free(e->keys);
  e->buf = NULL;
  e->keys = NULL;
}


static int enc_gc (lua_State *L) {
  enc_free((Enc *)lua_touserdata(L, 1));
  return 0;
}


/* pushes a new encoder and then array_mt */
static Enc *new_encoder (lua_State *L) {
  Enc *e = (Enc *)lua_newuserdatauv(L, sizeof(Enc), 0);
  memset(e, 0, sizeof(Enc));
  e->L = L;
  if (luaL_newmetatable(L, ENCODER_MT)) {
    lua_pushcfunction(L, enc_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  push_array_mt(L);
  e->amt = lua_gettop(L);
  return e;
}


/*
** Big outputs (a 50 MiB file read) would otherwise take one page fault
** per 4 KiB written; asking for the pages up front in one call is
** markedly cheaper. Only a hint: failure (old kernel) changes nothing.
*/
static void prefault (char *p, size_t len) {
  bw_huge_advise(p, len); /* before the populate, so it takes huge pages */
#if defined(MADV_POPULATE_WRITE)
  uintptr_t page = 4096;
  uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1);
  uintptr_t z = ((uintptr_t)p + len) & ~(page - 1);
  if (len >= ((size_t)1 << 20) && z > a)
    (void)madvise((void *)a, z - a, MADV_POPULATE_WRITE);
#else
  (void)p; (void)len;
#endif
}


/* makes room for 'extra' more bytes plus a final NUL */
static int grow (Enc *e, size_t extra) {
  size_t cap = (e->cap > 0) ? e->cap : 256;
  char *b;
  while (cap - e->n <= extra) {
    if (cap > SIZE_MAX / 2)
      return fail(e, E_MEM);
    cap *= 2;
  }
  b = (char *)realloc(e->buf, cap);
  if (b == NULL)
    return fail(e, E_MEM);
  e->buf = b;
  e->cap = cap;
  prefault(b + e->n, extra);
  return 1;
}


static int reserve (Enc *e, size_t extra) {
  return (e->cap - e->n > extra) || grow(e, extra);
}


static int put_bytes (Enc *e, const void *s, size_t len) {
  if (!reserve(e, len))
    return 0;
  memcpy(e->buf + e->n, s, len);
  e->n += len;
  return 1;
}


static int put_char (Enc *e, char c) {
  if (!reserve(e, 1))
    return 0;
  e->buf[e->n++] = c;
  return 1;
}


#define put_lit(e, s)	put_bytes(e, s, sizeof(s) - 1)


/*
** Strings: escaped by bw_json_escape (jsonesc.c) in blocks, room for the
** worst case of a block (every byte becoming "\u00XX") reserved first.
*/

/* input bytes escaped per capacity check */
#define BLOCK		((size_t)65536)
#define WORST(n)	BW_JSON_WORST(n)


static int put_string (Enc *e, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  const unsigned char *end = p + len;
  /* first guess: no escapes, so a long plain string grows the buffer once */
  if (len > SIZE_MAX / 2 || !reserve(e, len + 2))
    return fail(e, E_MEM);
  e->buf[e->n++] = '"';
  while (p < end) {
    size_t chunk = ((size_t)(end - p) < BLOCK) ? (size_t)(end - p) : BLOCK;
    char *o;
    if (!reserve(e, WORST(chunk)))
      return 0;
    o = bw_json_escape(e->buf + e->n, &p, p + chunk, end);
    e->n = (size_t)(o - e->buf);
  }
  return put_char(e, '"');
}


/*
** Numbers
*/

/* decimal digits of i into the end of buf[32]; returns where they start
** (snprintf's parsing of the format was a tenth of encoding a big grep) */
static char *int_digits (char *end, lua_Integer i) {
  lua_Unsigned u = (i < 0) ? 0u - (lua_Unsigned)i : (lua_Unsigned)i;
  char *p = end;
  do {
    *--p = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u != 0);
  if (i < 0)
    *--p = '-';
  return p;
}


static int put_integer (Enc *e, lua_Integer i) {
  char buf[32];
  char *p = int_digits(buf + sizeof(buf), i);
  return put_bytes(e, p, (size_t)(buf + sizeof(buf) - p));
}


/* JSON wants '.', whatever the C locale says */
static void fix_decimal_point (char *s) {
  char dp = localeconv()->decimal_point[0];
  if (dp != '.') {
    for (; *s != '\0'; s++)
      if (*s == dp) *s = '.';
  }
}


static int put_float (Enc *e, lua_Number x) {
  char buf[48];
  int prec, len = 0;
  double d = (double)x;
  if (!isfinite(d))
    return fail(e, E_NUMBER);
  /* fewest digits that read back exactly; 17 always do for a double */
  for (prec = 15; prec <= 17; prec++) {
    len = snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (strtod(buf, NULL) == d)
      break;
  }
  fix_decimal_point(buf);
  if (strspn(buf, "-0123456789") == (size_t)len) {
    /* looks like an integer: mark it as a float so it decodes as one */
    buf[len++] = '.';
    buf[len++] = '0';
  }
  return put_bytes(e, buf, (size_t)len);
}


/*
** Tables
*/

static int put_value (Enc *e, int idx);


static const char *value_error (int type) {
  switch (type) {
    case LUA_TNIL: return E_VALUE("nil (use json.null)");
    case LUA_TFUNCTION: return E_VALUE("function");
    case LUA_TUSERDATA: return E_VALUE("userdata");
    case LUA_TLIGHTUSERDATA: return E_VALUE("light userdata");
    default: return E_VALUE("thread");
  }
}


static const char *key_error (lua_State *L, int idx) {
  switch (lua_type(L, idx)) {
    case LUA_TNUMBER: return E_KEY("float");
    case LUA_TBOOLEAN: return E_KEY("boolean");
    case LUA_TTABLE: return E_KEY("table");
    case LUA_TFUNCTION: return E_KEY("function");
    case LUA_TUSERDATA: return E_KEY("userdata");
    case LUA_TLIGHTUSERDATA: return E_KEY("light userdata");
    default: return E_KEY("thread");
  }
}


/*
** Is table 't' an array? Yes if its metatable is array_mt (then its
** length is #t), or if its keys are exactly 1..n with n >= 1.
*/
static int array_len (Enc *e, int t, lua_Unsigned *n) {
  lua_State *L = e->L;
  lua_Unsigned count = 0;
  *n = lua_rawlen(L, t);
  if (lua_getmetatable(L, t)) {
    int isarray = lua_rawequal(L, -1, e->amt);
    lua_pop(L, 1);
    if (isarray)
      return 1;
  }
  if (*n == 0)  /* no t[1]: empty, or an object */
    return 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_Integer k;
    lua_pop(L, 1);  /* value */
    if (!lua_isinteger(L, -1) || (k = lua_tointeger(L, -1)) < 1 ||
        (lua_Unsigned)k > *n) {
      lua_pop(L, 1);  /* key */
      return 0;
    }
    count++;
  }
  return count == *n;  /* n distinct keys in 1..n: all of them */
}


static int put_array (Enc *e, int t, lua_Unsigned n) {
  lua_Unsigned i;
  if (!put_char(e, '['))
    return 0;
  for (i = 1; i <= n; i++) {
    if (i > 1 && !put_char(e, ','))
      return 0;
    lua_rawgeti(e->L, t, (lua_Integer)i);
    if (!put_value(e, lua_gettop(e->L)))
      return 0;
    lua_pop(e->L, 1);
  }
  return put_char(e, ']');
}


static Key *new_key (Enc *e) {
  if (e->nkeys == e->capkeys) {
    size_t cap = (e->capkeys > 0) ? e->capkeys * 2 : 32;
    Key *k = (cap < SIZE_MAX / sizeof(Key))
           ? (Key *)realloc(e->keys, cap * sizeof(Key)) : NULL;
    if (k == NULL) {
      fail(e, E_MEM);
      return NULL;
    }
    e->keys = k;
    e->capkeys = cap;
  }
  return &e->keys[e->nkeys++];
}


/* pushes the keys of table 't' on the key stack */
static int collect_keys (Enc *e, int t) {
  lua_State *L = e->L;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    Key *k;
    lua_pop(L, 1);  /* value: fetched again after sorting */
    if ((k = new_key(e)) == NULL)
      return 0;
    if (lua_type(L, -1) == LUA_TSTRING)
      k->s = lua_tolstring(L, -1, &k->len);
    else if (lua_isinteger(L, -1)) {
      k->s = NULL;
      k->i = lua_tointeger(L, -1);
      char tmp[32];
      char *p = int_digits(tmp + sizeof(tmp), k->i);
      k->len = (size_t)(tmp + sizeof(tmp) - p);
      memcpy(k->ibuf, p, k->len);
      k->ibuf[k->len] = '\0';
    }
    else
      return fail(e, key_error(L, -1));
  }
  return 1;
}


static const char *key_str (const Key *k) {
  return (k->s != NULL) ? k->s : k->ibuf;
}


/* bytewise order; for valid UTF-8 that is code point order */
static int key_cmp (const void *a, const void *b) {
  const Key *x = (const Key *)a;
  const Key *y = (const Key *)b;
  size_t n = (x->len < y->len) ? x->len : y->len;
  int c = memcmp(key_str(x), key_str(y), n);
  if (c != 0)
    return c;
  return (x->len > y->len) - (x->len < y->len);
}


static void push_field (Enc *e, int t, const Key *k) {
  if (k->s == NULL)
    lua_rawgeti(e->L, t, k->i);
  else {
    lua_pushlstring(e->L, k->s, k->len);
    lua_rawget(e->L, t);
  }
}


static int put_object (Enc *e, int t) {
  size_t base = e->nkeys;
  size_t i, n;
  if (!collect_keys(e, t))
    return 0;
  n = e->nkeys - base;
  if (n > 1 && n <= 8) { /* most objects: a few keys, insertion is cheaper */
    Key *a = e->keys + base;
    for (i = 1; i < n; i++) {
      Key v = a[i];
      size_t j = i;
      for (; j > 0 && key_cmp(&a[j - 1], &v) > 0; j--) a[j] = a[j - 1];
      a[j] = v;
    }
  }
  else if (n > 8) /* keys stays NULL until some object had a key */
    qsort(e->keys + base, n, sizeof(Key), key_cmp);
  if (!put_char(e, '{'))
    return 0;
  for (i = 0; i < n; i++) {
    /* re-read each time: nested objects may move 'e->keys' */
    const Key *k = &e->keys[base + i];
    if (i > 0) {
      if (key_cmp(k - 1, k) == 0)
        return fail(e, E_DUPKEY);
      if (!put_char(e, ','))
        return 0;
    }
    if (!put_string(e, key_str(k), k->len) || !put_char(e, ':'))
      return 0;
    push_field(e, t, k);
    if (!put_value(e, lua_gettop(e->L)))
      return 0;
    lua_pop(e->L, 1);
  }
  e->nkeys = base;
  return put_char(e, '}');
}


static int put_table (Enc *e, int t) {
  lua_Unsigned n;
  int ok;
  if (++e->depth > ENCODE_MAXDEPTH)
    return fail(e, E_DEPTH);
  if (!lua_checkstack(e->L, 4))
    return fail(e, E_STACK);
  if (array_len(e, t, &n))
    ok = put_array(e, t, n);
  else
    ok = put_object(e, t);
  e->depth--;
  return ok;
}


/* writes the value at (absolute) index 'idx' */
static int put_value (Enc *e, int idx) {
  lua_State *L = e->L;
  int type = lua_type(L, idx);
  switch (type) {
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, idx, &len);
      return put_string(e, s, len);
    }
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx))
        return put_integer(e, lua_tointeger(L, idx));
      return put_float(e, lua_tonumber(L, idx));
    case LUA_TBOOLEAN:
      return lua_toboolean(L, idx) ? put_lit(e, "true") : put_lit(e, "false");
    case LUA_TTABLE:
      return put_table(e, idx);
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL_VALUE)
        return put_lit(e, "null");
      return fail(e, value_error(type));
    case LUA_TUSERDATA: {
      const bw_json_frag *f = (const bw_json_frag *)luaL_testudata(L, idx,
                                                              FRAGMENT_MT);
      if (f == NULL)
        return fail(e, value_error(type));
      if (!f->value && !put_char(e, '"'))
        return 0;
      if (e->sp != NULL && f->len >= SPLICE_MIN && e->nsp < BW_JSON_SPLICES) {
        /* written from the fragment itself (kept alive by the value) */
        bw_json_splice *sp = &e->sp[e->nsp++];
        sp->at = e->n; sp->p = f->buf; sp->n = f->len;
      }
      else if (!put_bytes(e, f->buf, f->len))
        return 0;
      return f->value || put_char(e, '"');
    }
    default:
      return fail(e, value_error(type));
  }
}


/* encode(v): JSON text of 'v'; raises an error if 'v' has no encoding */
static int l_encode (lua_State *L) {
  Enc *e;
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  e = new_encoder(L);
  if (!put_value(e, 1)) {
    const char *msg = e->err;
    enc_free(e);
    return luaL_error(L, "%s", msg);
  }
  lua_pushlstring(L, e->buf, e->n);
  enc_free(e);
  return 1;
}


/* what 'bw_json_encode_value' gets back from its protected call */
typedef struct Result {
  char *buf;
  size_t len;
  const char *err;
  bw_json_splice *sp;
  int nsp;
} Result;


/* runs in protected mode: value at 1, Result at 2 */
static int encode_protected (lua_State *L) {
  Result *r = (Result *)lua_touserdata(L, 2);
  Enc *e = new_encoder(L);
  e->sp = r->sp;
  if (!put_value(e, 1))
    r->err = e->err;
  else {
    e->buf[e->n] = '\0';  /* 'grow' always keeps room for it */
    r->buf = e->buf;  /* hand the buffer over to the caller */
    r->len = e->n;
    r->nsp = e->nsp;
    e->buf = NULL;
  }
  enc_free(e);
  return 0;
}


static char *encode (lua_State *L, int idx, size_t *len, const char **err,
                     bw_json_splice *sp, int *nsp) {
  Result r = {NULL, 0, NULL, sp, 0};
  idx = lua_absindex(L, idx);
  *len = 0;
  if (!lua_checkstack(L, 3)) {
    *err = E_STACK;
    return NULL;
  }
  lua_pushcfunction(L, encode_protected);
  lua_pushvalue(L, idx);
  lua_pushlightuserdata(L, &r);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {  /* only memory errors get here */
    lua_pop(L, 1);
    *err = E_MEM;
    return NULL;
  }
  if (r.buf == NULL) {
    *err = (r.err != NULL) ? r.err : E_MEM;
    return NULL;
  }
  *len = r.len;
  if (nsp != NULL)
    *nsp = r.nsp;
  return r.buf;
}


char *bw_json_encode_value (lua_State *L, int idx, size_t *len,
                            const char **err) {
  return encode(L, idx, len, err, NULL, NULL);
}


char *bw_json_encode_spliced (lua_State *L, int idx, size_t *len,
                              const char **err,
                              bw_json_splice sp[BW_JSON_SPLICES], int *nsp) {
  *nsp = 0;
  return encode(L, idx, len, err, sp, nsp);
}

/*
** write(v): the JSON text of 'v' and a newline to standard output (fd 1),
** big prepared fragments written from their own buffers, so a result of
** tens of MiB (burrow call's grep) is not copied into the text and then
** into a Lua string. Flush io.stdout first if it holds anything.
** Returns true, or fail and the system's message (a closed pipe).
*/
static int l_write (lua_State *L) {
  bw_json_splice sp[BW_JSON_SPLICES];
  struct iovec iov[2 * BW_JSON_SPLICES + 1];
  int nsp = 0, cnt = 0, i;
  size_t n, at = 0;
  const char *err = NULL;
  char *buf;
  luaL_checkany(L, 1);
  lua_settop(L, 1);  /* v keeps the fragments alive until written */
  buf = encode(L, 1, &n, &err, sp, &nsp);
  if (buf == NULL)
    return luaL_error(L, "%s", err);
  buf[n] = '\n';  /* over the NUL 'grow' keeps room for */
  for (i = 0; i < nsp; i++) {
    iov[cnt].iov_base = buf + at; iov[cnt++].iov_len = sp[i].at - at;
    iov[cnt].iov_base = (void *)sp[i].p; iov[cnt++].iov_len = sp[i].n;
    at = sp[i].at;
  }
  iov[cnt].iov_base = buf + at; iov[cnt++].iov_len = n - at + 1;
  i = bw_writev_all(1, iov, cnt);
  err = (i < 0) ? strerror(errno) : NULL;
  free(buf);
  if (err != NULL) {  /* as io.write: a closed pipe is an answer, not an error */
    luaL_pushfail(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* }====================================================== */


/* array([t]): marks 't' (or a new table) as a JSON array and returns it */
static int l_array (lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  else {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
  }
  push_array_mt(L);
  lua_setmetatable(L, 1);
  return 1;
}


static const luaL_Reg json_funcs[] = {
  {"decode", l_decode},
  {"valid", l_valid},
  {"encode", l_encode},
  {"array", l_array},
  {"fragment", bw_json_l_fragment},
  {"write", l_write},
  {NULL, NULL}
};


void bw_json_push (lua_State *L) {
  luaL_newlib(L, json_funcs);
  push_array_mt(L);
  lua_setfield(L, -2, "array_mt");
  lua_pushlightuserdata(L, NULL_VALUE);
  lua_setfield(L, -2, "null");
  lua_pushlightuserdata(L, NULL_VALUE);
  lua_setfield(L, LUA_REGISTRYINDEX, "burrow.json.null");
}


/* core.json */
void bw_json_register (lua_State *L) {
  bw_json_push(L);
  lua_setfield(L, -2, "json");
}
