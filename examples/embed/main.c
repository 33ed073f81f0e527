/*
 * embed - burrow inside a program shaped like a game or automation engine.
 *
 * The engine already runs Lua for its own scripts. It builds a burrow host
 * on that same lua_State (burrow's globals and modules stay out of the
 * engine's), lists the tools it was given, then runs its main loop: each
 * frame, the engine's script (frames.lua) names one tool call, the engine
 * makes it through burrow_call and prints the result.
 *
 *   embed WORKSPACE [SCRIPT]     serve WORKSPACE as /game; SCRIPT defaults to
 *                                frames.lua beside the binary
 *   embed --own-state ...        let burrow own its Lua state (burrow_open)
 *
 * Built against an installed burrow: see the Makefile (pkg-config burrow).
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <burrow.h>

/* The tool names in a burrow_tools(h, "anthropic") list:
 * [{"description":..,"input_schema":{..},"name":"read_file"}, ...] */
static int list_tools(const char *json, char names[][64], int max) {
  int n = 0;
  for (const char *p = json; n < max && (p = strstr(p, "\"name\":\"")); n++) {
    p += 8;
    size_t len = strcspn(p, "\"");
    snprintf(names[n], 64, "%.*s", (int)(len < 63 ? len : 63), p);
  }
  return n;
}

static int offered(char names[][64], int n, const char *tool) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], tool)) return 1;
  return 0;
}

/* The error code of {"error":{"code":"ENOENT",...}} */
static const char *error_code(const char *json, char *out, size_t size) {
  const char *p = strstr(json, "\"code\":\"");
  if (!p) return "?";
  p += 8;
  snprintf(out, size, "%.*s", (int)strcspn(p, "\""), p);
  return out;
}

int main(int argc, char **argv) {
  const char *prog = argv[0];
  int own_state = argc > 1 && !strcmp(argv[1], "--own-state");
  if (own_state) argv++, argc--;
  if (argc < 2) {
    fprintf(stderr, "usage: embed [--own-state] WORKSPACE [SCRIPT]\n");
    return 2;
  }
  char script[4096];
  if (argc > 2) snprintf(script, sizeof script, "%s", argv[2]);
  else {
    const char *slash = strrchr(prog, '/');
    snprintf(script, sizeof script, "%.*sframes.lua", slash ? (int)(slash - prog + 1) : 0, prog);
  }

  /* the engine's own scripting state */
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_dofile(L, script) != LUA_OK || !lua_istable(L, -1)) {
    fprintf(stderr, "embed: %s: %s\n", script, lua_isstring(L, -1) ? lua_tostring(L, -1) : "must return a table");
    return 1;
  }
  int frames = lua_gettop(L);

  /* the host: WORKSPACE as /game, the standard policies */
  char config[4200];
  snprintf(config, sizeof config,
           "roots: [{path: '%s', mount: /game}]\npolicies: [default, secrets]\n", argv[1]);
  char *err = NULL;
  burrow_host *h = own_state ? burrow_open(config, &err) : burrow_open_state(L, config, &err);
  if (!h) {
    fprintf(stderr, "embed: burrow_open: %s\n", err ? err : "out of memory");
    burrow_free(err);
    return 1;
  }
  printf("libburrow %s (header %s), host on %s\n", burrow_version(), BURROW_VERSION_STRING,
         own_state ? "its own lua_State" : "the engine's lua_State");

  char names[64][64];
  char *tools = burrow_tools(h, "anthropic");
  int ntools = tools ? list_tools(tools, names, 64) : 0;
  burrow_free(tools);
  printf("tools (%d):", ntools);
  for (int i = 0; i < ntools; i++) printf(" %s", names[i]);
  printf("\n");

  /* the main loop: one scripted call per frame */
  int failures = 0;
  for (int frame = 1;; frame++) {
    lua_rawgeti(L, frames, frame);
    if (lua_isnil(L, -1)) break;
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    const char *tool = lua_tostring(L, -2), *args = lua_tostring(L, -1);
    if (!tool) {
      fprintf(stderr, "embed: frame %d: no tool name\n", frame);
      return 1;
    }
    if (!offered(names, ntools, tool)) {
      printf("frame %d: %s skipped (not offered by this host)\n", frame, tool);
    } else {
      char *res = NULL, code[64];
      int rc = burrow_call(h, tool, args, &res);
      if (rc == BURROW_OK) printf("frame %d: %s ok %.300s%s\n", frame, tool, res, strlen(res) > 300 ? "..." : "");
      else if (rc == BURROW_TOOL_ERROR) printf("frame %d: %s error %s %s\n", frame, tool, error_code(res, code, sizeof code), res);
      else printf("frame %d: %s usage error\n", frame, tool), failures++;
      burrow_free(res);
    }
    lua_settop(L, frames);
  }

  burrow_close(h);
  /* the engine's state is its own again: its script still sees only its globals */
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_getfield(L, -1, "burrow");
  printf("engine: package.loaded.burrow is %s\n", lua_isnil(L, -1) ? "nil" : "set");
  lua_close(L);
  return failures != 0;
}
