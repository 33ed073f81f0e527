/*
 * fuzz_json.c - JSON (ljson.c): jansson decoding into Lua values and the
 * own encoder, through a Lua state as burrow.core.json. The checks are in
 * fuzz_json.lua: whatever decodes encodes (also inside a reply), reads
 * back as the same value and encodes to the same text again; any Lua
 * string encodes to one line that decodes (to itself, if valid UTF-8).
 * Here: bw_json_encode_value, the server's C-side encoder, writes the
 * same bytes as json.encode.
 */
#define FUZZ_WITH_LUA
#include "fuzz.h"
#include "ljson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static lua_State *L;
  static int ref;
  if (!L) L = fz_lua(), ref = fz_driver(L, "fuzz_json", NULL);
  if (size > 1 << 16) return 0;
  fz_call(L, ref, data, size, 2); /* value, its encoding (or nil, nil) */
  if (lua_isstring(L, -1)) {
    size_t n, want;
    const char *err = NULL, *text = lua_tolstring(L, -1, &want);
    char *buf = bw_json_encode_value(L, -2, &n, &err);
    FZ_CHECK(buf, "bw_json_encode_value: %s", err ? err : "?");
    FZ_CHECK(n == want && !memcmp(buf, text, n) && buf[n] == '\0',
             "bw_json_encode_value and json.encode differ");
    free(buf);
  }
  lua_settop(L, 0);
  return 0;
}
