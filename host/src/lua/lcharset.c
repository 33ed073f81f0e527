/*
 * lcharset.c - burrow.core's text functions: encodings (charset.c:
 * core.charset_detect, charset_decode, charset_encode, charset_bom), the
 * engine's re-indentation for line matchers outside it (core.reindent,
 * edit.c), and numbered lines of a string (core.number_lines, text.c).
 * The File methods f:charset() and f:decode() are lfile.c's.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "charset.h"
#include "edit.h"
#include "lcharset.h"
#include "lcore.h"

/* core.charset_detect(bytes [, fallback "a,b"]) -> name, bom bytes, is_utf8 */
static int l_charset_detect(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  bw_charset cs;
  int rc = bw_charset_detect(s, n, luaL_optstring(L, 2, NULL), &cs);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushstring(L, cs.name);
  lua_pushinteger(L, (lua_Integer)cs.bom);
  lua_pushboolean(L, cs.utf8);
  return 3;
}

/* core.charset_fallback_ok(name) -> whether a fallback list may hold it
 * (iconv knows it and it reads ASCII as ASCII) */
static int l_charset_fallback_ok(lua_State *L) {
  lua_pushboolean(L, bw_charset_fallback_ok(luaL_checkstring(L, 1)));
  return 1;
}

/* core.charset_encode(charset, utf8_text) -> bytes (no BOM), or the fail
 * triple naming the first character the encoding cannot hold */
static int l_charset_encode(lua_State *L) {
  const char *cs = luaL_checkstring(L, 1);
  size_t n, olen;
  const char *s = luaL_checklstring(L, 2, &n);
  if (!bw_charset_known(cs)) return bw_lua_fail(L, bw_fail(BW_INVALID_ARGUMENT, "unknown charset"));
  char **box = bw_lua_new_box(L), *out = NULL;
  int rc = bw_charset_encode(cs, s, n, &out, &olen);
  *box = out;
  if (rc) return bw_lua_fail(L, rc);
  bw_lua_push_boxed(L, box, olen);
  return 1;
}

/* core.charset_decode(charset, bytes) -> UTF-8 text, or the fail triple */
static int l_charset_decode(lua_State *L) {
  const char *cs = luaL_checkstring(L, 1);
  size_t n, olen;
  const char *s = luaL_checklstring(L, 2, &n);
  if (!bw_charset_known(cs)) return bw_lua_fail(L, bw_fail(BW_INVALID_ARGUMENT, "unknown charset"));
  char **box = bw_lua_new_box(L), *out = NULL;
  int rc = bw_charset_decode(cs, s, n, &out, &olen);
  *box = out;
  if (rc) return bw_lua_fail(L, rc);
  bw_lua_push_boxed(L, box, olen);
  return 1;
}

/* core.charset_bom(charset) -> its BOM bytes ("" when it has none) */
static int l_charset_bom(lua_State *L) {
  size_t len;
  const char *b = bw_charset_bom_bytes(luaL_checkstring(L, 1), &len);
  lua_pushlstring(L, b, len);
  return 1;
}

/* core.reindent(old, block, new) -> new re-indented as block is to old
 * (edit.c's indentation rule), or nil, detail, CODE, new's line */
static int l_reindent(lua_State *L) {
  size_t ol, bl, nl, outl, bad;
  const char *o = luaL_checklstring(L, 1, &ol), *b = luaL_checklstring(L, 2, &bl),
             *n = luaL_checklstring(L, 3, &nl);
  char **box = bw_lua_new_box(L), *out = NULL;
  int rc = bw_reindent(o, ol, b, bl, n, nl, &out, &outl, &bad);
  *box = out;
  if (rc) {
    int k = bw_lua_fail(L, rc);
    lua_pushinteger(L, (lua_Integer)bad);
    return k + 1;
  }
  bw_lua_push_boxed(L, box, outl);
  return 1;
}

/* core.number_lines(text, first, limit, max_line, max_bytes [, at]) -> text, info
 * (f:lines over a string: decoded text) */
static int l_number_lines(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  bw_lines out;
  memset(&out, 0, sizeof out);
  char **box = bw_lua_new_box(L);
  lua_Integer at = luaL_optinteger(L, 6, -1); /* a cursor's byte: bw_lines_at */
  size_t first = (size_t)luaL_checkinteger(L, 2), limit = (size_t)luaL_checkinteger(L, 3);
  size_t max_line = (size_t)luaL_checkinteger(L, 4), max_bytes = (size_t)luaL_checkinteger(L, 5);
  int rc = at >= 0 ? bw_lines_at(s, n, (size_t)at, first, limit, max_line, max_bytes, 0, &out)
                   : bw_number_lines(s, n, first, limit, max_line, max_bytes, &out);
  *box = out.out;
  if (rc) return bw_lua_fail(L, rc);
  bw_lua_push_boxed(L, box, out.out_len);
  bw_text_info in;
  bw_text_scan(s, n, &in);
  lua_createtable(L, 0, 7);
  lua_pushinteger(L, (lua_Integer)out.first);
  lua_setfield(L, -2, "first");
  lua_pushinteger(L, (lua_Integer)out.last);
  lua_setfield(L, -2, "last");
  lua_pushinteger(L, (lua_Integer)out.next);
  lua_setfield(L, -2, "next");
  lua_pushboolean(L, out.truncated);
  lua_setfield(L, -2, "truncated");
  lua_pushinteger(L, (lua_Integer)in.lines);
  lua_setfield(L, -2, "total");
  lua_pushstring(L, bw_newline_kind(&in));
  lua_setfield(L, -2, "newline");
  lua_pushinteger(L, (lua_Integer)out.raw_len);
  lua_setfield(L, -2, "bytes");
  lua_pushinteger(L, (lua_Integer)out.next_byte);
  lua_setfield(L, -2, "next_byte");
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, -2, "text_bytes");
  lua_pushboolean(L, out.mid_line);
  lua_setfield(L, -2, "mid_line");
  return 2;
}

static const luaL_Reg funcs[] = {
    {"charset_detect", l_charset_detect}, {"charset_decode", l_charset_decode},
    {"charset_encode", l_charset_encode}, {"charset_bom", l_charset_bom},
    {"charset_fallback_ok", l_charset_fallback_ok},
    {"reindent", l_reindent},             {"number_lines", l_number_lines},
    {NULL, NULL}};

void bw_charset_register(lua_State *L) { luaL_setfuncs(L, funcs, 0); }
