/*
 * fuzz_yaml.c - the configuration's YAML (lyaml.c, libyaml) through a Lua
 * state as burrow.core.yaml_decode, then the whole configuration reader
 * (lua/burrow/config.lua) on the same text. The checks are in
 * fuzz_yaml.lua: a refusal says line and column, a value holds only the
 * subset's types with a position for every table, key and item, and
 * config.parse answers options or "name:line:col: message", never raises.
 */
#define FUZZ_WITH_LUA
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static lua_State *L;
  static int ref;
  if (!L) L = fz_lua(), ref = fz_driver(L, "fuzz_yaml", NULL);
  if (size > 1 << 16) return 0;
  fz_call(L, ref, data, size, 0);
  return 0;
}
