/*
 * fuzz_mcp.c - JSON-RPC over stdio: the input is what a client writes to
 * `burrow mcp`'s stdin, split into lines as lserver.c's reader splits them
 * and served by lua/burrow/mcp/init.lua's own loop (Server:run, with a stand-in
 * for burrow.server.stdio) on a read-only workspace. The checks are in
 * fuzz_mcp.lua: the loop never ends with an error, no handler fails
 * internally, every message out is one line of JSON-RPC 2.0, and every
 * request gets exactly one reply (notifications none).
 */
#define FUZZ_WITH_LUA
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static lua_State *L;
  static int ref;
  if (!L) L = fz_lua(), ref = fz_driver(L, "fuzz_mcp", fz_tree());
  if (size > 1 << 16) return 0;
  fz_call(L, ref, data, size, 0);
  return 0;
}
