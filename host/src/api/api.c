/*
 * api.c - the embedding API of burrow.h, and the Lua state set-up shared
 * with the CLI: standard libraries, burrow.core preloaded, the Lua side
 * found beside the binary or library (build tree) or under the install
 * prefix. The work itself is done by lua/burrow/capi.lua; this file moves
 * strings across and, for a host on an engine's lua_State, keeps burrow's
 * globals and package tables apart from the engine's. The openers are
 * api_open.c's and lhost.c's (above: they hand it burrow.host); the
 * worker of submitted calls is api_async.c's (below: it runs what this
 * file gives it).
 */
#include <dlfcn.h>
#include <lauxlib.h>
#include <pthread.h>
#include <lua.h>
#include <lualib.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "async.h"
#include "lcore.h"
#include "lbuiltin.h"

struct burrow_host {
  lua_State *L;   /* where burrow runs: its own state, or a thread of the engine's */
  lua_State *own; /* burrow's own state (closed by burrow_close), or NULL */
  int thread_ref; /* engine's state: the thread L, anchored in the registry */
  int mine_ref;   /* engine's state: burrow's registry entries while swapped out */
  int theirs_ref; /* engine's state: the engine's while burrow's are in */
  int capi_ref;   /* the burrow.capi module */
  int ws_ref;     /* the workspace */
  pthread_mutex_t mu; /* busy, owner, async */
  pthread_cond_t cv;  /* busy went to 0 */
  int busy;
  pthread_t owner;  /* the thread inside the host while busy */
  bw_async *async;  /* the worker of submitted calls, once started */
  burrow_approve_fn approve;
  void *approve_ud;
  lua_CFunction host_module; /* burrow.host, offered to its state (api_open.c), or NULL */
};

/* ---------------------------------------------------------------- Lua dir */

static int dir_has(const char *dir, const char *file) {
  char p[8192];
  int n = snprintf(p, sizeof p, "%s/%s", dir, file);
  return n > 0 && (size_t)n < sizeof p && access(p, R_OK) == 0;
}

/* A Lua dir beside the file `path` (a binary or a library): ../lua and
 * ../../lua (build trees), ../share/burrow/lua (installed). */
static int beside(const char *path, char *out, size_t size) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) return 0;
  *slash = '\0';
  const char *cands[] = {"/../lua", "/../../lua", "/../share/burrow/lua"};
  for (size_t i = 0; i < sizeof cands / sizeof *cands; i++) {
    snprintf(out, size, "%s%s", dir, cands[i]);
    if (dir_has(out, "burrow/init.lua")) return 1;
  }
  return 0;
}

/* Where the Lua side lives: $BURROW_LUA_DIR; beside the library holding
 * this code (libburrow.so, or the binary libburrow.a was linked into);
 * beside the running binary; the Lua built in (lbuiltin.h: the burrow
 * command and the rock's libburrow have it; make's libburrow does not);
 * else the compiled-in install dir. A shared library with Lua built in
 * (the rock's) takes its own before looking beside the host program
 * (nvim, nginx), whose neighbours are not its. */
static void lua_dir(char *out, size_t size) {
  const char *env = getenv("BURROW_LUA_DIR");
  if (env && *env) {
    snprintf(out, size, "%s", env);
    return;
  }
  Dl_info info;
  int found = dladdr((void *)lua_dir, &info) && info.dli_fname;
  if (found && info.dli_fname[0] == '/' && beside(info.dli_fname, out, size))
    return;
  const char *base = found ? strrchr(info.dli_fname, '/') : NULL;
  int in_shared_lib = found && strstr(base ? base : info.dli_fname, ".so") != NULL;
  if (!(in_shared_lib && bw_builtin_have())) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = '\0';
      if (beside(exe, out, size)) return;
    }
  }
  /* the binary's or library's own copy (a copied binary, a rock): before
   * the install dir, which may hold another version's */
  if (bw_builtin_have()) {
    snprintf(out, size, "%s", BW_BUILTIN_DIR);
    return;
  }
  snprintf(out, size, "%s", BURROW_LUA_INSTALL_DIR);
}

static void preload_core(lua_State *L) {
  bw_lua_preload(L);
  char dir[4096];
  lua_dir(dir, sizeof dir);
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua", dir, dir);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
}

void bw_lua_prepare(lua_State *L) {
  luaL_openlibs(L);
  preload_core(L);
}

/* burrow.host for ws:submit, when the opener offers it: the module is
 * above this file (lhost.c), so it comes as an argument (api_open.c). */
static void offer_host(lua_State *L, const burrow_host *h) {
  if (h->host_module) bw_lua_preload_module(L, "burrow.host", h->host_module);
}

/* (h) */
static int l_prepare(lua_State *L) {
  const burrow_host *h = lua_touserdata(L, 1);
  bw_lua_prepare(L);
  offer_host(L, h);
  return 0;
}

/* ------------------------------------------- a host on an engine's state */

/* The registry entries the standard libraries read at call time: lua_load's
 * _ENV (LUA_RIDX_GLOBALS, "_G" below), require's tables, the C libraries
 * require loaded, io's default files. With the string metatable, these are
 * what burrow swaps in for each call on an engine's state. */
static const char *const SWAPPED[] = {LUA_LOADED_TABLE, LUA_PRELOAD_TABLE,
                                      "_CLIBS", "_IO_input", "_IO_output"};
#define NSWAPPED (sizeof SWAPPED / sizeof *SWAPPED)

/* Move the live entries into the table at `keep` and install those of the
 * table at `take`. It allocates nothing, so it cannot raise: every key
 * already exists in both tables and in the registry (absent values are
 * false), and LUA_RIDX_GLOBALS lives in the registry's array part. */
static void exchange(lua_State *L, int keep, int take) {
  keep = lua_absindex(L, keep);
  take = lua_absindex(L, take);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  lua_setfield(L, keep, "_G");
  lua_getfield(L, take, "_G");
  lua_rawseti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  for (size_t i = 0; i < NSWAPPED; i++) {
    lua_getfield(L, LUA_REGISTRYINDEX, SWAPPED[i]);
    lua_setfield(L, keep, SWAPPED[i]);
    lua_getfield(L, take, SWAPPED[i]);
    lua_setfield(L, LUA_REGISTRYINDEX, SWAPPED[i]);
  }
  lua_pushliteral(L, "_G"); /* any string: they share one metatable */
  if (!lua_getmetatable(L, -1)) lua_pushboolean(L, 0);
  lua_setfield(L, keep, "string_mt");
  if (lua_getfield(L, take, "string_mt") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushnil(L);
  }
  lua_setmetatable(L, -2);
  lua_pop(L, 1);
}

static void swap(burrow_host *h, int in) {
  if (h->own) return;
  lua_State *L = h->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->mine_ref);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->theirs_ref);
  if (in) exchange(L, -1, -2);
  else exchange(L, -2, -1);
  lua_pop(L, 2);
}
#define enter(h) swap(h, 1)
#define leave(h) swap(h, 0)

/* On the engine's state: a thread for burrow, without the engine's hook. */
static int new_thread(lua_State *E) {
  burrow_host *h = lua_touserdata(E, 1);
  h->L = lua_newthread(E);
  lua_sethook(h->L, NULL, 0, 0);
  h->thread_ref = luaL_ref(E, LUA_REGISTRYINDEX);
  return 0;
}

/* On burrow's thread: the two tables of entries, every key present. */
static int new_tables(lua_State *L) {
  burrow_host *h = lua_touserdata(L, 1);
  for (int t = 0; t < 2; t++) {
    lua_createtable(L, 0, NSWAPPED + 2);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "string_mt");
    lua_newtable(L); /* a fresh global table, or a placeholder */
    lua_setfield(L, -2, "_G");
    for (size_t i = 0; i < NSWAPPED; i++) {
      if (t == 0 && i < 2) lua_newtable(L); /* burrow's loaded, preload */
      else lua_pushboolean(L, 0);
      lua_setfield(L, -2, SWAPPED[i]);
    }
    *(t == 0 ? &h->mine_ref : &h->theirs_ref) = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  for (size_t i = 0; i < NSWAPPED; i++) { /* the engine lacks it: false */
    if (lua_getfield(L, LUA_REGISTRYINDEX, SWAPPED[i]) == LUA_TNIL) {
      lua_pushboolean(L, 0);
      lua_setfield(L, LUA_REGISTRYINDEX, SWAPPED[i]);
    }
    lua_pop(L, 1);
  }
  return 0;
}

/* (the engine's "FILE*" metatable, or nil; h) With burrow's entries in: the
 * standard libraries and burrow.core (and burrow.host, offered). io opens on a stand-in "FILE*"
 * metatable, since luaopen_io would reset the methods of the engine's; then
 * burrow's std files get the engine's, so one metatable serves every file
 * handle in the state whoever collects it. The caller puts the engine's
 * back: the key never holds nil meanwhile, so that cannot allocate. */
static int open_libs(lua_State *L) {
  int engine_io = lua_istable(L, 1);
  if (engine_io) {
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LUA_FILEHANDLE);
  }
  bw_lua_prepare(L);
  offer_host(L, lua_touserdata(L, 2));
  if (engine_io) {
    lua_getglobal(L, "io");
    const char *std[] = {"stdin", "stdout", "stderr"};
    for (int i = 0; i < 3; i++) {
      if (lua_getfield(L, -1, std[i]) == LUA_TUSERDATA) {
        lua_pushvalue(L, 1);
        lua_setmetatable(L, -2);
      }
      lua_pop(L, 1);
    }
  }
  return 0;
}

/* ------------------------------------------------------------ the API */

const char *burrow_version(void) { return BURROW_VERSION_STRING; }

void burrow_free(void *p) { free(p); }

static char *dup_str(const char *s, size_t n) {
  char *out = malloc(n + 1);
  if (out) {
    memcpy(out, s, n);
    out[n] = '\0';
  }
  return out;
}

static char *dup_top(lua_State *L) {
  size_t n = 0;
  const char *s = lua_tolstring(L, -1, &n);
  return s ? dup_str(s, n) : dup_str("(error object is not a string)", 30);
}

/* Run f(h, a, b) on burrow's thread with burrow's entries in; its results
 * stay on the thread's stack. */
static int run(burrow_host *h, lua_CFunction f, const void *a, const void *b,
               int nres) {
  lua_State *L = h->L;
  enter(h);
  lua_pushcfunction(L, f);
  lua_pushlightuserdata(L, h);
  lua_pushlightuserdata(L, (void *)a);
  lua_pushlightuserdata(L, (void *)b);
  int rc = lua_pcall(L, 3, nres, 0);
  leave(h);
  return rc;
}

/* (h, config, open_fn) */
static int l_open(lua_State *L) {
  burrow_host *h = lua_touserdata(L, 1);
  const char *config = lua_touserdata(L, 2);
  const char *fn = lua_touserdata(L, 3);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "burrow.capi");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, fn);
  lua_pushstring(L, config);
  lua_call(L, 1, 2);
  if (lua_isnil(L, -2)) {
    if (!lua_isstring(L, -1)) lua_pushliteral(L, "burrow_open failed");
    return lua_error(L);
  }
  lua_pop(L, 1);
  h->ws_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  h->capi_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

static int l_set_path(lua_State *L) {
  const char *path = lua_touserdata(L, 1);
  lua_getglobal(L, "package");
  lua_pushstring(L, path);
  lua_setfield(L, -2, "path");
  return 0;
}

static void fail_open(burrow_host *h, lua_State *from, char **errmsg) {
  if (errmsg) *errmsg = from ? dup_top(from) : strdup("out of memory");
  burrow_close(h);
}

burrow_host *bw_open_host(lua_State *E, const char *config, const char *fn,
                          const char *lua_path, lua_CFunction host_module,
                          char **errmsg) {
  if (errmsg) *errmsg = NULL;
  burrow_host *h = calloc(1, sizeof *h);
  if (!h) {
    if (errmsg) *errmsg = strdup("out of memory");
    return NULL;
  }
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  h->host_module = host_module;
  h->thread_ref = h->mine_ref = h->theirs_ref = LUA_NOREF;
  h->capi_ref = h->ws_ref = LUA_NOREF;
  if (!E) {
    if (!(h->own = h->L = luaL_newstate())) {
      fail_open(h, NULL, errmsg);
      return NULL;
    }
  } else {
    int top = lua_gettop(E);
    lua_pushcfunction(E, new_thread);
    lua_pushlightuserdata(E, h);
    if (lua_pcall(E, 1, 0, 0) != LUA_OK) {
      fail_open(h, E, errmsg);
      lua_settop(E, top);
      return NULL;
    }
    lua_pushcfunction(h->L, new_tables);
    lua_pushlightuserdata(h->L, h);
    if (lua_pcall(h->L, 1, 0, 0) != LUA_OK) {
      fail_open(h, h->L, errmsg);
      return NULL;
    }
  }
  lua_State *L = h->L;
  int rc;
  if (!E) {
    lua_pushcfunction(L, l_prepare);
    lua_pushlightuserdata(L, h);
    rc = lua_pcall(L, 1, 0, 0);
    if (rc == LUA_OK && lua_path) {
      lua_pushcfunction(L, l_set_path);
      lua_pushlightuserdata(L, (void *)lua_path);
      rc = lua_pcall(L, 1, 0, 0);
    }
  } else {
    enter(h);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_FILEHANDLE); /* the engine's, or nil */
    lua_pushcfunction(L, open_libs);
    lua_pushvalue(L, 1);
    lua_pushlightuserdata(L, h);
    rc = lua_pcall(L, 2, 0, 0);
    if (lua_istable(L, 1)) {
      lua_pushvalue(L, 1);
      lua_setfield(L, LUA_REGISTRYINDEX, LUA_FILEHANDLE);
    }
    leave(h);
  }
  if (rc != LUA_OK) {
    fail_open(h, L, errmsg);
    return NULL;
  }
  lua_settop(L, 0);
  if (run(h, l_open, config, fn, 0) != LUA_OK) {
    fail_open(h, h->L, errmsg);
    return NULL;
  }
  return h;
}

/* (h, fn, {a, b}) -> capi.<fn>(ws, a, b): code, text */
static int l_capi(lua_State *L) {
  burrow_host *h = lua_touserdata(L, 1);
  const char *fn = lua_touserdata(L, 2);
  const char *const *ab = lua_touserdata(L, 3);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->capi_ref);
  lua_getfield(L, -1, fn);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ws_ref);
  lua_pushstring(L, ab[0]);
  lua_pushstring(L, ab[1]);
  lua_call(L, 3, 2);
  return 2;
}

static int capi(burrow_host *h, const char *fn, const char *a, const char *b,
                char **out) {
  const char *ab[2] = {a, b};
  lua_State *L = h->L;
  int code = BURROW_TOOL_ERROR;
  if (run(h, l_capi, fn, ab, 2) == LUA_OK) code = (int)lua_tointeger(L, -2);
  *out = dup_top(L);
  lua_settop(L, 0);
  return code;
}

/* Enter the host. Refused when this thread is already inside (its own
 * approval callback) and, before the host has a worker, when another thread
 * is (the documented BURROW_USAGE); with a worker, wait for its call. */
static int acquire(burrow_host *h) {
  if (!h) return 0;
  pthread_mutex_lock(&h->mu);
  int ok = 1;
  if (h->busy && (pthread_equal(h->owner, pthread_self()) || !h->async)) {
    ok = 0;
  } else {
    while (h->busy) pthread_cond_wait(&h->cv, &h->mu);
    h->busy = 1;
    h->owner = pthread_self();
  }
  pthread_mutex_unlock(&h->mu);
  return ok;
}

static void release(burrow_host *h) {
  pthread_mutex_lock(&h->mu);
  h->busy = 0;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

/* A host with a worker, entered from outside a call: its async, else NULL
 * (*reentry set when this thread is inside the host already). */
static bw_async *worker_of(burrow_host *h, int *reentry) {
  pthread_mutex_lock(&h->mu);
  *reentry = h->busy && pthread_equal(h->owner, pthread_self());
  bw_async *a = h->async;
  pthread_mutex_unlock(&h->mu);
  return a;
}

int burrow_call(burrow_host *h, const char *tool, const char *args_json,
                char **result_json) {
  if (!h || !tool || !result_json) return BURROW_USAGE;
  int reentry;
  bw_async *a = worker_of(h, &reentry);
  if (reentry) return BURROW_USAGE;
  if (a) return bw_async_call(a, tool, args_json ? args_json : "{}", result_json);
  if (!acquire(h)) return BURROW_USAGE;
  int rc = capi(h, "call", tool, args_json ? args_json : "{}", result_json);
  release(h);
  return rc;
}

/* ------------------------------------------------ submitted calls (worker) */

static int job_cancelled(lua_State *L) {
  bw_job *j = lua_touserdata(L, lua_upvalueindex(1));
  lua_pushboolean(L, atomic_load(&j->cancel));
  return 1;
}

/* hooks.progress(done, total, message), from ctx:progress */
static int job_progress(lua_State *L) {
  burrow_host *h = lua_touserdata(L, lua_upvalueindex(1));
  bw_job *j = lua_touserdata(L, lua_upvalueindex(2));
  bw_async_progress(h->async, j, luaL_optnumber(L, 1, 0), luaL_optnumber(L, 2, -1),
                    luaL_optstring(L, 3, NULL));
  return 0;
}

static int approve_bridge(lua_State *L);

/* The tool, operation and path of the request at index 1 (each may be
 * NULL; kept alive by the request table). */
static void req_fields(lua_State *L, const char *v[3]) {
  static const char *const f[3] = {"tool", "operation", "path"};
  for (int i = 0; i < 3; i++) {
    lua_getfield(L, 1, f[i]);
    v[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
}

/* hooks.approve(req, reason) of a submitted call while an approver is set
 * (burrow_set_approver): the question goes to the engine and the worker
 * waits here for the answer -> allowed[, why]. Turned off since the call
 * began: burrow_set_approval's callback, as without an approver. */
static int job_approve(lua_State *L) {
  burrow_host *h = lua_touserdata(L, lua_upvalueindex(1));
  bw_job *j = lua_touserdata(L, lua_upvalueindex(2));
  const char *v[3];
  req_fields(L, v);
  const char *reason = luaL_optstring(L, 2, "");
  char *why = NULL;
  int r = bw_async_ask(h->async, j, v[0], v[1], v[2], reason, &why);
  if (r < 0) return approve_bridge(L); /* its upvalue 1 is h too */
  lua_pushboolean(L, r);
  if (why) lua_pushstring(L, why); /* may raise on OOM: why leaks then */
  else lua_pushnil(L);
  free(why);
  return 2;
}

/* (h, job) -> capi.call(ws, tool, args, hooks): code, text */
static int l_job(lua_State *L) {
  burrow_host *h = lua_touserdata(L, 1);
  bw_job *j = lua_touserdata(L, 2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->capi_ref);
  lua_getfield(L, -1, "call");
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ws_ref);
  lua_pushstring(L, j->tool);
  lua_pushstring(L, j->args);
  lua_createtable(L, 0, 2);
  lua_pushlightuserdata(L, j);
  lua_pushcclosure(L, job_cancelled, 1);
  lua_setfield(L, -2, "cancelled");
  lua_pushlightuserdata(L, h);
  lua_pushlightuserdata(L, j);
  lua_pushcclosure(L, job_progress, 2);
  lua_setfield(L, -2, "progress");
  if (!j->sync && bw_async_has_approver(h->async)) {
    lua_pushlightuserdata(L, h);
    lua_pushlightuserdata(L, j);
    lua_pushcclosure(L, job_approve, 2);
    lua_setfield(L, -2, "approve");
    lua_pushliteral(L, "the host's approver (burrow_answer)"); /* the audit's approved_by */
    lua_setfield(L, -2, "approved_by");
  }
  lua_call(L, 4, 2);
  return 2;
}

/* The worker's run function (bw_async_new): job j's Lua side, on the
 * worker's thread. */
static void run_job(void *ud, bw_job *j) {
  burrow_host *h = ud;
  j->rc = BURROW_TOOL_ERROR;
  if (!acquire(h)) { /* cannot happen: only the worker enters now */
    j->result = strdup("{\"error\":{\"code\":\"EAGAIN\",\"message\":\"EAGAIN: host busy\"}}");
    return;
  }
  lua_State *L = h->L;
  bw_set_cancel_flag(&j->cancel); /* walks and grep stop on it */
  if (run(h, l_job, j, NULL, 2) == LUA_OK) j->rc = (int)lua_tointeger(L, -2);
  j->result = dup_top(L);
  lua_settop(L, 0);
  bw_set_cancel_flag(NULL);
  release(h);
}

/* The host's worker (api_async.c), started on first use (start); NULL for
 * a host that cannot have one (on an engine's state, which has no thread
 * of its own to give a worker), when a thread or fd is refused, or (not
 * start) before it has one. */
static bw_async *async_of(burrow_host *h, int start) {
  if (!h || !h->own) return NULL;
  pthread_mutex_lock(&h->mu);
  bw_async *a = h->async;
  if (!a && start && (a = bw_async_new(run_job, h))) h->async = a;
  pthread_mutex_unlock(&h->mu);
  return a;
}

unsigned long long burrow_submit(burrow_host *h, const char *tool,
                                 const char *args_json, burrow_done_fn cb,
                                 void *ud) {
  if (!tool) return 0;
  bw_async *a = async_of(h, 1);
  return a ? bw_async_submit(a, tool, args_json, cb, ud) : 0;
}

int burrow_fd(burrow_host *h) {
  bw_async *a = async_of(h, 1);
  return a ? bw_async_fd(a) : -1;
}

void burrow_set_progress(burrow_host *h, burrow_progress_fn fn) {
  bw_async *a = async_of(h, 1);
  if (a) bw_async_set_progress(a, fn);
}

void burrow_set_approver(burrow_host *h, burrow_ask_fn fn, void *ud,
                         int timeout_ms) {
  bw_async *a = async_of(h, 1);
  if (a) bw_async_set_approver(a, fn, ud, timeout_ms);
}

int burrow_cancel(burrow_host *h, unsigned long long id) {
  bw_async *a = async_of(h, 0);
  return a ? bw_async_cancel(a, id) : 0;
}

int burrow_poll(burrow_host *h) {
  bw_async *a = async_of(h, 0);
  return a ? bw_async_poll(a) : 0;
}

int burrow_take(burrow_host *h, unsigned long long *id, int *rc,
                char **result_json) {
  bw_async *a = async_of(h, 0);
  return a ? bw_async_take(a, id, rc, result_json) : 0;
}

unsigned long long burrow_ask_call(burrow_host *h, unsigned long long qid) {
  bw_async *a = async_of(h, 0);
  return a ? bw_async_ask_call(a, qid) : 0;
}

int burrow_answer(burrow_host *h, unsigned long long id, int allow,
                  const char *why) {
  bw_async *a = async_of(h, 0);
  return a ? bw_async_answer(a, id, allow, why) : 0;
}

int burrow_take_ask(burrow_host *h, unsigned long long *id, char **ask_json) {
  bw_async *a = async_of(h, 0);
  return a ? bw_async_take_ask(a, id, ask_json) : 0;
}

char *burrow_tools(burrow_host *h, const char *format) {
  char *out = NULL;
  if (!acquire(h)) return NULL;
  if (capi(h, "tools", format ? format : "mcp", NULL, &out) != BURROW_OK) {
    free(out);
    out = NULL;
  }
  release(h);
  return out;
}

/* ws.approve for a C callback: (req, reason) -> allowed. On an engine's
 * state the engine's entries are back in while the callback runs, so it
 * may run the engine's Lua. */
static int approve_bridge(lua_State *L) {
  burrow_host *h = lua_touserdata(L, lua_upvalueindex(1));
  if (!h->approve) return 0;
  const char *v[3];
  req_fields(L, v);
  const char *reason = luaL_optstring(L, 2, "");
  leave(h);
  int ok = h->approve(h->approve_ud, v[0] ? v[0] : "", v[1] ? v[1] : "",
                      v[2] ? v[2] : "", reason);
  enter(h);
  lua_pushboolean(L, ok);
  return 1;
}

static int l_set_approval(lua_State *L) {
  burrow_host *h = lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ws_ref);
  if (h->approve) {
    lua_pushlightuserdata(L, h);
    lua_pushcclosure(L, approve_bridge, 1);
  } else {
    lua_pushnil(L);
  }
  lua_setfield(L, -2, "approve");
  return 0;
}

void burrow_set_approval(burrow_host *h, burrow_approve_fn fn, void *ud) {
  if (!acquire(h)) return;
  h->approve = fn;
  h->approve_ud = ud;
  run(h, l_set_approval, NULL, NULL, 0);
  lua_settop(h->L, 0);
  release(h);
}

static int l_close(lua_State *L) {
  burrow_host *h = lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ws_ref);
  if (lua_getfield(L, -1, "close") == LUA_TFUNCTION) {
    lua_insert(L, -2);
    lua_call(L, 1, 0);
  }
  return 0;
}

void burrow_close(burrow_host *h) {
  if (!h) return;
  int reentry;
  bw_async *a = worker_of(h, &reentry);
  if (reentry) return; /* inside a call: not now */
  if (a) { /* the worker first: it cancels and finishes what it runs */
    bw_async_free(a);
    pthread_mutex_lock(&h->mu);
    h->async = NULL;
    pthread_mutex_unlock(&h->mu);
  }
  if (!acquire(h)) return; /* another thread is inside a call: not now */
  if (h->own) {
    lua_close(h->own);
  } else if (h->L) {
    lua_State *L = h->L;
    if (h->ws_ref != LUA_NOREF) run(h, l_close, NULL, NULL, 0);
    lua_settop(L, 0);
    int *refs[] = {&h->ws_ref, &h->capi_ref, &h->mine_ref, &h->theirs_ref,
                   &h->thread_ref};
    for (size_t i = 0; i < sizeof refs / sizeof *refs; i++)
      luaL_unref(L, LUA_REGISTRYINDEX, *refs[i]); /* the thread last */
  }
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  free(h);
}
