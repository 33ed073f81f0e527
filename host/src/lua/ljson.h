/*
** ljson.h
** JSON for burrow.core: decode (jansson) and a fast encoder written
** straight from Lua values. core.json (lmodule.c registers it),
** prepared fragments (ljsonfrag.c), and the server's C-side encode of replies
** (lserver.c, lhttp.c).
*/

#ifndef bw_ljson_h
#define bw_ljson_h

#include <stddef.h>

#include <lua.h>

#include "core.h" /* BW_SHARED */

/* Pushes a table {decode=, encode=, null=, array_mt=, array=} onto the stack. */
void bw_json_push(lua_State *L);
/* Sets core.json on the module table at the top (lmodule.c). */
void bw_json_register(lua_State *L);

/* C-side encode of the value at index idx into a malloc'd buffer (for the
   server/API); returns NULL and sets *err (static string) on failure.
   *len receives the length; the buffer is also NUL-terminated (not counted
   in *len). The caller frees it with free(). Never raises a Lua error. */
BW_SHARED char *bw_json_encode_value(lua_State *L, int idx, size_t *len, const char **err);

/* The same, with big prepared fragments (below) left out of the buffer:
   sp[0..*nsp) each say "sp.n bytes at sp.p go at offset sp.at", in
   order; they point into fragments the value keeps alive, so write them
   before it can be collected. For a reply written straight out. */
#define BW_JSON_SPLICES 8
typedef struct bw_json_splice {
  size_t at;
  const char *p;
  size_t n;
} bw_json_splice;
BW_SHARED char *bw_json_encode_spliced(lua_State *L, int idx, size_t *len,
                             const char **err,
                             bw_json_splice sp[BW_JSON_SPLICES], int *nsp);

/* A prepared JSON fragment: string content already escaped (no quotes),
   which the encoder writes verbatim between quotes, so a big text goes
   from its one C pass to the reply without a Lua string or a second
   escape. #frag is raw_len (the unescaped text's length); frag .. s and
   s .. frag give a new fragment. With 'value' set, buf is a whole JSON
   value (grep's matches array, lsearch.c) written as is, without quotes;
   such a fragment does not concatenate. */
typedef struct bw_json_frag {
  char *buf;  /* malloc'd; freed by __gc */
  size_t len;
  size_t raw_len;
  int value;
} bw_json_frag;

#define BW_JSON_FRAGMENT_MT "burrow.json.fragment"

/* Pushes an empty fragment (buf NULL) for the caller to fill (ljsonfrag.c,
   as the rest of this block). */
bw_json_frag *bw_json_new_fragment(lua_State *L);
/* core.json.fragment(s): s escaped once, to be written verbatim. */
int bw_json_l_fragment(lua_State *L);

#endif
