/*
 * test_capi.c - the embedding API (burrow.h) driven from C: open a host
 * from text or a file, list tools, call tools, errors as JSON, the approval
 * callback for a policy's "ask", two hosts on two threads, and hosts on a
 * lua_State the engine owns (its globals, libraries and package.loaded
 * untouched). Linked against libburrow.a, as an engine would.
 */
#include <fcntl.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "burrow.h"

#include "check.h"

static char dir[128];

static void put(const char *name, const char *text) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (!f || fputs(text, f) < 0 || fclose(f)) exit(2);
}

static int asked;

static int approve(void *ud, const char *tool, const char *op,
                   const char *path, const char *reason) {
  asked++;
  CHECK(!strcmp(tool, "write_file") && !strcmp(op, "write"), "asked about %s %s", tool, op);
  CHECK(strstr(reason, "needs a yes") != NULL, "reason: %s", reason);
  return *(int *)ud && strcmp(path, "no.txt") != 0;
}

static void test_calls(void) {
  char *err = NULL;
  burrow_host *h = burrow_open(dir, &err);
  CHECK(h != NULL, "open: %s", err ? err : "");
  if (!h) return;
  char *tools = burrow_tools(h, "anthropic");
  CHECK(tools && strstr(tools, "\"input_schema\""), "anthropic tools");
  burrow_free(tools);
  char *res = NULL;
  CHECK(burrow_call(h, "write_file", "{\"path\":\"a.txt\",\"content\":\"hi\\n\"}", &res) == BURROW_OK,
        "write: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "read_file", "{\"path\":\"a.txt\"}", &res) == BURROW_OK &&
            strstr(res, "1\\thi"), "read: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "read_file", "{\"path\":\"../x\"}", &res) == BURROW_TOOL_ERROR &&
            strstr(res, "OUTSIDE_ROOT"), "outside: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "read_file", "not json", &res) == BURROW_TOOL_ERROR &&
            strstr(res, "INVALID_ARGUMENT"), "bad json: %s", res);
  burrow_free(res);
  CHECK(burrow_call(NULL, "read_file", "{}", &res) == BURROW_USAGE, "NULL host");
  burrow_close(h);
}

static void test_approval(void) {
  put("ask.lua", "return { check = function(req)\n"
                 "  if req.operation == 'write' then return 'ask', 'writes needs a yes' end\n"
                 "  return 'allow' end }\n");
  char cfg[512];
  snprintf(cfg, sizeof cfg, "roots: [%s]\npolicies: [%s/ask.lua]\n", dir, dir);
  char *err = NULL, *res = NULL;
  burrow_host *h = burrow_open(cfg, &err);
  CHECK(h != NULL, "open with a policy: %s", err ? err : "");
  if (!h) return;
  CHECK(burrow_call(h, "write_file", "{\"path\":\"x.txt\",\"content\":\"x\"}", &res) == BURROW_TOOL_ERROR &&
            strstr(res, "approval needed"), "no callback: %s", res);
  burrow_free(res);
  int yes = 1;
  burrow_set_approval(h, approve, &yes);
  CHECK(burrow_call(h, "write_file", "{\"path\":\"y.txt\",\"content\":\"y\"}", &res) == BURROW_OK,
        "approved: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "write_file", "{\"path\":\"no.txt\",\"content\":\"n\"}", &res) == BURROW_TOOL_ERROR &&
            strstr(res, "POLICY_DENIED"), "refused: %s", res);
  burrow_free(res);
  CHECK(asked == 2, "asked %d times", asked);
  burrow_close(h);
}

/* Two hosts on two threads work at the same time. */
static void *worker(void *arg) {
  (void)arg;
  burrow_host *h = burrow_open(dir, NULL);
  int ok = h != NULL;
  for (int i = 0; ok && i < 200; i++) {
    char *res = NULL;
    ok = burrow_call(h, "stat", "{\"path\":\"a.txt\"}", &res) == BURROW_OK;
    burrow_free(res);
  }
  burrow_close(h);
  return (void *)(intptr_t)ok;
}

static void test_threads(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < 2; i++) {
    void *ok;
    pthread_join(t[i], &ok);
    CHECK(ok != NULL, "thread %d", i);
  }
}

static void test_open_file(void) {
  char cfg[256], sub[200];
  snprintf(sub, sizeof sub, "%s/cfgdir", dir);
  if (mkdir(sub, 0755) != 0) exit(2);
  put("cfgdir/burrow.yaml", "roots:\n  - path: .\n    mount: /ws\ncaps: {max_entries: 10}\n");
  put("cfgdir/here.txt", "from the config's directory\n");
  snprintf(cfg, sizeof cfg, "%s/burrow.yaml", sub);
  char *err = NULL, *res = NULL;
  burrow_host *h = burrow_open_file(cfg, &err); /* cwd is elsewhere: . is the file's dir */
  CHECK(h != NULL, "open_file: %s", err ? err : "");
  if (!h) return;
  CHECK(burrow_call(h, "read_file", "{\"path\":\"/ws/here.txt\"}", &res) == BURROW_OK &&
            strstr(res, "config's directory"), "read via the file's root: %s", res);
  burrow_free(res);
  burrow_close(h);

  put("cfgdir/bad.yaml", "roots:\n  - path: .\ncaps: {max_entries: x}\n");
  snprintf(cfg, sizeof cfg, "%s/bad.yaml", sub);
  CHECK(burrow_open_file(cfg, &err) == NULL && err && strstr(err, "bad.yaml:3:") &&
            strstr(err, "max_entries"), "bad config names file:line: %s", err);
  burrow_free(err);
  err = NULL;
  CHECK(burrow_open_file("/nonexistent/burrow.yaml", &err) == NULL && err &&
            strstr(err, "/nonexistent/burrow.yaml"), "missing file: %s", err);
  burrow_free(err);
  err = NULL;
  CHECK(burrow_open_file(NULL, &err) == NULL && err && strstr(err, "INVALID_ARGUMENT"),
        "NULL path: %s", err);
  burrow_free(err);
}

/* ----------------------------------------------- the engine's lua_State */

/* The engine's view of its state, printed as text to compare before and
 * after: global names, package.loaded names, the string metatable's
 * __index and the registry's Lua entries. */
static char *snapshot(lua_State *L) {
  const char *code =
      "local names = {}\n"
      "for k, v in pairs(_G) do names[#names + 1] = 'G.' .. tostring(k) .. '=' .. type(v) end\n"
      "for k in pairs(package.loaded) do names[#names + 1] = 'loaded.' .. k end\n"
      "for k in pairs(string) do names[#names + 1] = 'string.' .. k end\n"
      "names[#names + 1] = 'smt ' .. tostring(getmetatable('').__index == string)\n"
      "names[#names + 1] = 'io.output ' .. tostring(io.output() == engine_log)\n"
      "local reg = debug.getregistry()\n"
      "names[#names + 1] = 'FILE* ' .. tostring(reg['FILE*']) .. tostring(reg['FILE*'].__index)\n"
      "names[#names + 1] = 'loaded ' .. tostring(reg._LOADED == package.loaded)\n"
      "table.sort(names)\n"
      "return table.concat(names, ' ')";
  if (luaL_dostring(L, code) != LUA_OK) {
    printf("snapshot: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return strdup("?");
  }
  char *s = strdup(lua_tostring(L, -1));
  lua_pop(L, 1);
  return s;
}

static int hook_calls;
static void count_hook(lua_State *L, lua_Debug *ar) {
  (void)L, (void)ar;
  hook_calls++;
}

static int approve_in_lua(void *ud, const char *tool, const char *op,
                          const char *path, const char *reason) {
  (void)tool, (void)op, (void)reason;
  lua_State *L = ud; /* the engine decides in its own Lua, with its own globals */
  lua_getglobal(L, "engine_approves");
  lua_pushstring(L, path);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    printf("engine_approves: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  int ok = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return ok;
}

static burrow_host *script_host;

/* What an engine binds for its scripts: fs(tool, json) -> code, json */
static int l_fs(lua_State *L) {
  char *res = NULL;
  int rc = burrow_call(script_host, luaL_checkstring(L, 1), luaL_optstring(L, 2, "{}"), &res);
  lua_pushinteger(L, rc);
  lua_pushstring(L, res);
  burrow_free(res);
  return 2;
}

static void test_engine_state(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  /* the engine's own customisations, which burrow must neither see nor undo */
  const char *setup =
      "engine_marker = 42\n"
      "engine_log = io.tmpfile(); io.output(engine_log)\n"
      "function string.shout(s) return s:upper() .. '!' end\n"
      "package.loaded.engine_mod = {}\n"
      "package.path = '/engine/?.lua'\n"
      "function engine_approves(path) return engine_marker == 42 and path ~= 'no.txt' end\n";
  CHECK(luaL_dostring(L, setup) == LUA_OK, "engine setup: %s", lua_tostring(L, -1));
  lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
  char *before = snapshot(L);
  int top = lua_gettop(L);

  char *err = NULL, *res = NULL;
  burrow_host *h = burrow_open_state(L, dir, &err);
  CHECK(h != NULL, "open_state: %s", err ? err : "");
  if (!h) return;
  CHECK(lua_gettop(L) == top, "engine stack: %d -> %d", top, lua_gettop(L));
  char *after = snapshot(L);
  CHECK(strcmp(before, after) == 0, "open leaked into the engine:\n  %s\n  %s", before, after);
  free(after);

  /* burrow keeps working while the engine breaks its own libraries */
  CHECK(luaL_dostring(L, "string.gsub, string.format, require, io = nil, nil, nil, nil") == LUA_OK,
        "break the engine's libs");
  int hooks = hook_calls;
  CHECK(burrow_call(h, "write_file", "{\"path\":\"e.txt\",\"content\":\"engine\\n\"}", &res) == BURROW_OK,
        "write on the engine's state: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "read_file", "{\"path\":\"e.txt\"}", &res) == BURROW_OK && strstr(res, "1\\tengine"),
        "read on the engine's state: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "stat", "{\"path\":\"../etc\"}", &res) == BURROW_TOOL_ERROR && strstr(res, "OUTSIDE_ROOT"),
        "error on the engine's state: %s", res);
  burrow_free(res);
  char *tools = burrow_tools(h, "openai");
  CHECK(tools && strstr(tools, "\"read_file\""), "tools on the engine's state");
  burrow_free(tools);
  CHECK(hook_calls == hooks, "the engine's hook ran %d times inside burrow", hook_calls - hooks);
  lua_settop(L, top);
  lua_sethook(L, NULL, 0, 0);
  burrow_close(h);
  lua_close(L);
  free(before);
}

/* The engine's state with its libraries intact: globals and package.loaded
 * compared after calls, the approval callback running the engine's Lua, a
 * script calling burrow through a C function, two hosts on one state. */
static void test_engine_state_calls(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  CHECK(luaL_dostring(L, "engine_marker = 42\nengine_log = io.tmpfile(); io.output(engine_log)\n"
                         "function string.shout(s) return s:upper() .. '!' end\n"
                         "function engine_approves(path) return engine_marker == 42 and path ~= 'no.txt' end\n") == LUA_OK,
        "setup");
  char *before = snapshot(L);
  char cfg[512];
  snprintf(cfg, sizeof cfg, "roots: [%s]\npolicies: [%s/ask.lua]\n", dir, dir);
  char *err = NULL, *res = NULL;
  burrow_host *h = burrow_open_state(L, cfg, &err);
  burrow_host *h2 = burrow_open_state(L, dir, &err);
  CHECK(h && h2, "two hosts on one state: %s", err ? err : "");
  if (!h || !h2) return;
  burrow_set_approval(h, approve_in_lua, L);
  CHECK(burrow_call(h, "write_file", "{\"path\":\"yes.txt\",\"content\":\"y\"}", &res) == BURROW_OK,
        "approved by the engine's Lua: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "write_file", "{\"path\":\"no.txt\",\"content\":\"n\"}", &res) == BURROW_TOOL_ERROR &&
            strstr(res, "POLICY_DENIED"), "refused by the engine's Lua: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h2, "read_file", "{\"path\":\"yes.txt\"}", &res) == BURROW_OK && strstr(res, "1\\ty"),
        "second host: %s", res);
  burrow_free(res);

  /* an engine script calling burrow through a C function it bound */
  script_host = h2;
  lua_register(L, "fs", l_fs);
  CHECK(luaL_dostring(L, "local rc, out = fs('read_file', '{\"path\":\"yes.txt\"}')\n"
                         "assert(rc == 0 and out:find('1\\\\ty', 1, true), out)\n"
                         "rc, out = fs('stat', '{\"path\":\"nope\"}')\n"
                         "assert(rc == 1 and out:find('ENOENT'), out)\n"
                         "return ('x'):shout()") == LUA_OK &&
            !strcmp(lua_tostring(L, -1), "X!"), "script through fs(): %s", lua_tostring(L, -1));
  lua_settop(L, 0);
  lua_pushnil(L);
  lua_setglobal(L, "fs");

  char *after = snapshot(L);
  CHECK(strcmp(before, after) == 0, "calls leaked into the engine:\n  %s\n  %s", before, after);
  free(after);
  burrow_close(h);
  burrow_close(h2);
  lua_gc(L, LUA_GCCOLLECT, 0);
  after = snapshot(L);
  CHECK(strcmp(before, after) == 0, "close leaked into the engine:\n  %s\n  %s", before, after);
  free(after);
  free(before);
  CHECK(luaL_dostring(L, "return engine_marker + 1") == LUA_OK && lua_tointeger(L, -1) == 43,
        "the engine's state still works");
  lua_close(L);
}

/* No Lua library opened by the engine at all: burrow brings its own. */
static void test_bare_state(void) {
  lua_State *L = luaL_newstate();
  char *err = NULL, *res = NULL;
  burrow_host *h = burrow_open_state(L, dir, &err);
  CHECK(h != NULL, "open on a bare state: %s", err ? err : "");
  if (!h) {
    burrow_free(err);
    lua_close(L);
    return;
  }
  CHECK(burrow_call(h, "list_dir", "{}", &res) == BURROW_OK && strstr(res, "a.txt"), "list: %s", res);
  burrow_free(res);
  lua_pushglobaltable(L);
  lua_pushnil(L);
  CHECK(lua_next(L, -2) == 0, "a bare state gained globals");
  lua_settop(L, 0);
  burrow_close(h);
  lua_close(L);
}

/* An engine allocator that fails after a budget of allocations (growth
 * only: Lua assumes shrinking never fails), as Lua's own tests do. */
static long alloc_budget = -1; /* allocations left; -1: no limit */
static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (ptr && nsize <= osize) return realloc(ptr, nsize);
  if (alloc_budget == 0) return NULL;
  if (alloc_budget > 0) alloc_budget--;
  return realloc(ptr, nsize);
}

/* Out of memory anywhere in burrow_open_state or burrow_call on the
 * engine's state: an error, never a crash, and the engine's state as it
 * was (its globals, package.loaded, string metatable, FILE*, io.output). */
static void test_engine_oom(void) {
  lua_State *L = lua_newstate(limited_alloc, NULL);
  luaL_openlibs(L);
  CHECK(luaL_dostring(L, "engine_marker = 42\nengine_log = io.tmpfile(); io.output(engine_log)\n") == LUA_OK,
        "setup");
  char *before = snapshot(L);
  burrow_host *h = NULL;
  int failed = 0, bad = 0;
  for (long n = 0; !h && n < 10000000; n = n < 100 ? n + 1 : n * 5 / 4) {
    char *err = NULL;
    int top = lua_gettop(L);
    alloc_budget = n;
    h = burrow_open_state(L, dir, &err);
    alloc_budget = -1;
    if (!h) {
      failed++;
      if (!err || lua_gettop(L) != top) bad++;
      burrow_free(err);
    }
    lua_gc(L, LUA_GCCOLLECT, 0);
    char *after = snapshot(L);
    if (strcmp(before, after) != 0 && bad++ == 0)
      printf("open with %ld allocations changed the engine:\n  %s\n  %s\n", n, before, after);
    free(after);
  }
  CHECK(h != NULL && failed > 100 && bad == 0, "open under OOM: %d failed, %d bad", failed, bad);
  int ok = 0, errors = 0;
  for (long n = 0; h && !ok && n < 10000000; n = n < 100 ? n + 1 : n * 5 / 4) {
    char *res = NULL;
    alloc_budget = n;
    int rc = burrow_call(h, "read_file", "{\"path\":\"a.txt\"}", &res);
    alloc_budget = -1;
    if (rc == BURROW_OK) ok = res && strstr(res, "1\\thi") != NULL;
    else if (rc == BURROW_TOOL_ERROR && res) errors++;
    else bad++;
    burrow_free(res);
    char *after = snapshot(L);
    if (strcmp(before, after) != 0 && bad++ == 0)
      printf("a call with %ld allocations changed the engine:\n  %s\n  %s\n", n, before, after);
    free(after);
  }
  CHECK(ok && errors > 10 && bad == 0, "calls under OOM: ok %d, %d errors, %d bad", ok, errors, bad);
  burrow_close(h);
  lua_gc(L, LUA_GCCOLLECT, 0);
  char *after = snapshot(L);
  CHECK(strcmp(before, after) == 0, "after close:\n  %s\n  %s", before, after);
  free(after);
  free(before);
  lua_close(L);
}

/* Re-entering a busy host is refused, not a crash. */
static burrow_host *reenter_host;
static int reenter_result = -1;
static int approve_reenter(void *ud, const char *tool, const char *op,
                           const char *path, const char *reason) {
  (void)ud, (void)tool, (void)op, (void)path, (void)reason;
  char *res = NULL;
  reenter_result = burrow_call(reenter_host, "stat", "{\"path\":\".\"}", &res);
  burrow_free(res);
  burrow_close(reenter_host); /* refused too: the call is still running */
  return 1;
}

static void test_reentry(void) {
  char cfg[512];
  snprintf(cfg, sizeof cfg, "roots: [%s]\npolicies: [%s/ask.lua]\n", dir, dir);
  char *res = NULL;
  reenter_host = burrow_open(cfg, NULL);
  CHECK(reenter_host != NULL, "open");
  if (!reenter_host) return;
  burrow_set_approval(reenter_host, approve_reenter, NULL);
  CHECK(burrow_call(reenter_host, "write_file", "{\"path\":\"r.txt\",\"content\":\"r\"}", &res) == BURROW_OK,
        "outer call: %s", res);
  burrow_free(res);
  CHECK(reenter_result == BURROW_USAGE, "inner call: %d", reenter_result);
  burrow_close(reenter_host);
}

int main(void) {
  strcpy(dir, "/tmp/burrow-capi-XXXXXX");
  if (!mkdtemp(dir)) return 2;
  CHECK(strcmp(burrow_version(), BURROW_VERSION_STRING) == 0, "version");
  test_calls();
  test_approval();
  test_threads();
  test_open_file();
  test_engine_state();
  test_engine_state_calls();
  test_bare_state();
  test_reentry();
  test_engine_oom();
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 2;
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
