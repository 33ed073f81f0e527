/*
** ljson.h
** JSON for burrow.core: decode (jansson) and a fast encoder written
** straight from Lua values. Used by lcore.c (the Lua-side table) and
** by the server/embedding API (C-side encode of replies).
*/

#ifndef bw_ljson_h
#define bw_ljson_h

#include <stddef.h>

#include <lua.h>

/* Pushes a table {decode=, encode=, null=, array_mt=, array=} onto the stack. */
void bw_json_push(lua_State *L);

/* C-side encode of the value at index idx into a malloc'd buffer (for the
   server/API); returns NULL and sets *err (static string) on failure.
   *len receives the length; the buffer is also NUL-terminated (not counted
   in *len). The caller frees it with free(). Never raises a Lua error. */
char *bw_json_encode_value(lua_State *L, int idx, size_t *len, const char **err);

#endif
