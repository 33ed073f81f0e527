/*
** ljsonfrag.c
** Prepared JSON fragments (ljson.h): escaped text, or a whole JSON value,
** that the encoder (ljson.c) writes verbatim and the stdio server splices
** into a reply from its own buffer; core.json.fragment (read_file's page
** writes its numbered lines as one: lpage.c).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core.h"
#include "lcore.h"
#include "ljson.h"



static int frag_gc (lua_State *L) {
  bw_json_frag *f = (bw_json_frag *)luaL_checkudata(L, 1, BW_JSON_FRAGMENT_MT);
  free(f->buf);
  f->buf = NULL;
  f->len = 0;
  return 0;
}


static int frag_len (lua_State *L) {
  bw_json_frag *f = (bw_json_frag *)luaL_checkudata(L, 1, BW_JSON_FRAGMENT_MT);
  lua_pushinteger(L, (lua_Integer)f->raw_len);
  return 1;
}


/* appends the fragment or the escaped string at 'idx' to 'o' */
static int frag_append (lua_State *L, int idx, bw_json_frag *o) {
  bw_json_frag *f = (bw_json_frag *)luaL_testudata(L, idx, BW_JSON_FRAGMENT_MT);
  size_t len, raw, room;
  const char *s;
  char *b;
  if (f != NULL && f->value)
    return luaL_error(L, "a JSON value fragment does not concatenate");
  if (f != NULL) {
    s = f->buf; len = f->len; raw = f->raw_len;
    room = len;
  }
  else {
    s = luaL_checklstring(L, idx, &len);
    raw = len;
    if (len > SIZE_MAX / 8)
      return luaL_error(L, "%s", "json fragment: out of memory");
    room = BW_JSON_WORST(len);
  }
  if (room > SIZE_MAX - o->len - 1 ||
      (b = (char *)realloc(o->buf, o->len + room + 1)) == NULL)
    return luaL_error(L, "%s", "json fragment: out of memory");
  o->buf = b;
  if (f != NULL)
    memcpy(b + o->len, s, len);
  else {
    const unsigned char *p = (const unsigned char *)s;
    len = (size_t)(bw_json_escape(b + o->len, &p, p + len, p + len) -
                   (b + o->len));
  }
  o->len += len;
  o->raw_len += raw;
  return 0;
}


/* a .. b where either is a fragment: a new fragment */
static int frag_concat (lua_State *L) {
  bw_json_frag *o = bw_json_new_fragment(L);
  frag_append(L, 1, o);
  frag_append(L, 2, o);
  return 1;
}


bw_json_frag *bw_json_new_fragment (lua_State *L) {
  bw_json_frag *f = (bw_json_frag *)lua_newuserdatauv(L, sizeof *f, 0);
  memset(f, 0, sizeof *f);
  if (luaL_newmetatable(L, BW_JSON_FRAGMENT_MT)) {
    lua_pushcfunction(L, frag_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, frag_len);
    lua_setfield(L, -2, "__len");
    lua_pushcfunction(L, frag_concat);
    lua_setfield(L, -2, "__concat");
    lua_pushliteral(L, "burrow.json.fragment");
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, -2);
  return f;
}


/* fragment(s): s escaped once, to be written verbatim by encode */
int bw_json_l_fragment (lua_State *L) {
  luaL_checkstring(L, 1);
  frag_append(L, 1, bw_json_new_fragment(L));
  return 1;
}
