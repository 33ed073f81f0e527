/*
 * fuzz_patch.c - the codex pack's apply_patch (lua/tools/packs/codex.lua):
 * its parser of the "*** Begin Patch" grammar (lua/burrow/toolkit/patch_grammar.lua),
 * then the whole tool on a read-only workspace (every target read and
 * every new content computed; the writes are refused). The checks are in
 * fuzz_patch.lua: the parser answers hunks or a message, never raises, and
 * the hunks written back as a patch parse to the same hunks; the tool
 * answers a result or nil, message, code.
 */
#define FUZZ_WITH_LUA
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static lua_State *L;
  static int ref;
  if (!L) L = fz_lua(), ref = fz_driver(L, "fuzz_patch", fz_tree());
  if (size > 1 << 16) return 0;
  fz_call(L, ref, data, size, 0);
  return 0;
}
