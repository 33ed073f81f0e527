/*
 * lhttp.c - `burrow mcp --http` as burrow.server.http_start: the listener
 * (http.c) and its Lua workers. Each worker is a thread with a Lua state
 * of its own running burrow.transport.http's loop; the scheduler (httpsess.c) hands
 * any free worker the next session in tenant order, with the state its
 * last worker left (w:record, w:release), so a long call holds one worker
 * and no other session waits behind it while another is free. Each worker
 * thread
 * reads its own cancel flag (bw_set_cancel_flag), so the search and edit
 * bindings see the cancel of their own call.
 */
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <pthread.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "clock.h"
#include "http.h"
#include "httpmetrics.h"
#include "lcore.h"
#include "state.h"
#include "ljson.h"
#include "lserver.h"
#include "oauth.h"

#define HTTP_MT "burrow.Http"
#define WORKER_MT "burrow.HttpWorker"
#define METRICS_MT "burrow.HttpMetrics"

typedef struct wstate {
  bw_http *h;
  bw_metrics *m; /* NULL: no http.metrics */
  int index;
  bw_http_item *cur; /* the item being handled, freed by the next next() */
} wstate;

typedef struct server {
  bw_http *h;
  bw_http_opts o; /* its strings and arrays are the server's, freed with it */
  bw_metrics_opts mo; /* the same; mo.host NULL: no metrics listener */
  bw_metrics *m;
  int nworkers, started;
  int n_names; /* o.tenant_names */
  pthread_t *threads;
  wstate *w;
  char *setup, *path, *cpath, *module;
  lua_CFunction open_module; /* burrow.server's opener, for the workers' states */
  double grace;       /* seconds a SIGTERM gives the calls in flight (http.shutdown_grace) */
  sigset_t sigs, old; /* the signals http:wait takes; the caller's mask */
  int fail_fd;        /* an eventfd a failing worker raises (http:wait polls it) */
  _Atomic int failed;
} server;

typedef struct box {
  server *srv;
} box;

static int traceback(lua_State *L) {
  luaL_traceback(L, L, lua_tostring(L, 1), 1);
  return 1;
}

/* ------------------------------------------------------- the workers */

static wstate *check_worker(lua_State *L) {
  return *(wstate **)luaL_checkudata(L, 1, WORKER_MT);
}

/* The item just taken (w->cur) as w:next gives it. */
static int push_item(lua_State *L, wstate *w) {
  bw_http_item *it = w->cur;
  if (!it) {
    if (bw_http_stopped(w->h)) lua_pushboolean(L, 0);
    else lua_pushnil(L);
    return 1;
  }
  lua_pushstring(L, it->kind == BW_HTTP_CLOSE ? "close"
                   : it->kind == BW_HTTP_WATCH ? "watch" : "message");
  lua_pushstring(L, it->sid);
  lua_pushinteger(L, it->tenant + 1);
  if (it->kind != BW_HTTP_MSG) {
    lua_pushnil(L);
    lua_pushnil(L);
    lua_pushinteger(L, it->version);
    return 6;
  }
  lua_pushinteger(L, it->stream);
  lua_pushlstring(L, it->body ? it->body : "", it->len);
  lua_pushinteger(L, it->version);
  int era = bw_http_item_stateless(it); /* 2: a subscriptions/listen */
  if (era == 2) lua_pushliteral(L, "listen");
  else lua_pushboolean(L, era);
  if (it->params) lua_pushstring(L, it->params);
  else lua_pushnil(L);
  const char *token = bw_http_item_token(w->h, it);
  if (token) lua_pushstring(L, token);
  else lua_pushnil(L);
  lua_pushinteger(L, (lua_Integer)it->shared_version);
  lua_pushboolean(L, bw_http_item_read_only(it));
  return 11;
}

/* w:next([timeout]) -> "message", sid, tenant, stream, body, version, stateless (true, false or "listen"), param_headers, token (its sha256, or an OAuth principal's; nil: none),
 * shared_version (the session's record in the deployment's store when the request came; 0: none), read_only (an OAuth token's scope) |
 * "close" or "watch", sid, tenant, nil, nil, version | nil (timeout) | false (the server stopped). The
 * worker holds the session until w:release (or its next w:next). */
static int w_next(lua_State *L) {
  wstate *w = check_worker(L);
  double timeout = luaL_optnumber(L, 2, -1);
  w->cur = bw_http_next(w->h, w->index, w->cur, timeout); /* the last one freed */
  return push_item(L, w);
}

/* w:next_of(sid[, timeout]) -> as w:next, for the item of session sid that
 * answers nothing itself (a response to our request, a notification) or
 * its close; the other items stay queued (bw_http_next_of) */
static int w_next_of(lua_State *L) {
  wstate *w = check_worker(L);
  const char *sid = luaL_checkstring(L, 2);
  double timeout = luaL_optnumber(L, 3, -1);
  bw_http_item_free(w->h, w->cur);
  w->cur = bw_http_next_of(w->h, w->index, sid, timeout);
  return push_item(L, w);
}

/* w:send(sid, stream, message[, final]) -> bytes: the message encoded
 * once, sent on the stream (0, or a stream whose POST is answered: the GET
 * stream); final: it is the POST's answer */
static int w_send(lua_State *L) {
  wstate *w = check_worker(L);
  const char *sid = luaL_checkstring(L, 2);
  long stream = (long)luaL_checkinteger(L, 3);
  size_t n;
  const char *err = NULL;
  char *buf = bw_json_encode_value(L, 4, &n, &err);
  if (!buf) return luaL_error(L, "cannot encode the message: %s", err ? err : "?");
  int rc = bw_http_send(w->h, sid, stream, buf, n, lua_toboolean(L, 5));
  free(buf);
  if (rc < 0) return 0; /* the session is gone: nobody to tell */
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/* w:record() -> the state text the session's last release left | nil */
static int w_record(lua_State *L) {
  wstate *w = check_worker(L);
  size_t n = 0;
  char *r = bw_http_record(w->h, w->index, &n);
  if (!r) return 0;
  lua_pushlstring(L, r, n);
  free(r);
  return 1;
}

/* w:release(state_text | nil, home[, watch_fd, watch_in]): done with the
 * session it holds; home: it stays on this worker (state that cannot
 * travel); watch_fd: its file watches' fd, which the listener polls (a
 * WATCH item when it turns readable, or watch_in seconds from now) */
static int w_release(lua_State *L) {
  wstate *w = check_worker(L);
  size_t n = 0;
  const char *r = luaL_optlstring(L, 2, NULL, &n);
  int fd = (int)luaL_optinteger(L, 4, -1);
  double in = luaL_optnumber(L, 5, -1);
  bw_http_release(w->h, w->index, r, n, lua_toboolean(L, 3), fd, in);
  return 0;
}

/* w:gone(): the session it holds ended on another instance (its record
 * left the deployment's store): it ends here too */
static int w_gone(lua_State *L) {
  wstate *w = check_worker(L);
  bw_http_gone(w->h, w->index);
  return 0;
}

static int w_done(lua_State *L) {
  wstate *w = check_worker(L);
  bw_http_done(w->h, luaL_checkstring(L, 2), (long)luaL_checkinteger(L, 3));
  return 0;
}

/* w:begin(sid, id_json) -> cancelled while queued? */
static int w_begin(lua_State *L) {
  wstate *w = check_worker(L);
  lua_pushboolean(L, bw_http_begin(w->h, w->index, luaL_checkstring(L, 2),
                                   luaL_checkstring(L, 3)));
  return 1;
}

static int w_finish(lua_State *L) {
  wstate *w = check_worker(L);
  bw_http_finish(w->h, w->index);
  return 0;
}

static int w_cancelled(lua_State *L) {
  wstate *w = check_worker(L);
  lua_pushboolean(L, atomic_load(bw_http_cancel_flag(w->h, w->index)));
  return 1;
}

/* w:task(task_id) -> may its call go on as that task after answering? */
static int w_task(lua_State *L) {
  wstate *w = check_worker(L);
  lua_pushboolean(L, bw_http_task_begin(w->h, w->index, luaL_checkstring(L, 2)));
  return 1;
}

/* w:cancel_task(task_id) -> a worker ran it and is told to stop */
static int w_cancel_task(lua_State *L) {
  wstate *w = check_worker(L);
  lua_pushboolean(L, bw_http_task_cancel(w->h, luaL_checkstring(L, 2)));
  return 1;
}

/* The sink of a tenant's reports (lua/burrow/init.lua, mcp/init.lua): the
 * listener's metrics and the tenant's index in them. */
typedef struct msink {
  bw_metrics *m;
  int tenant;
} msink;

/* w:metrics(tenant) -> the tenant's sink | nil (no http.metrics) */
static int w_metrics(lua_State *L) {
  wstate *w = check_worker(L);
  lua_Integer t = luaL_checkinteger(L, 2);
  if (!w->m) return 0;
  msink *k = lua_newuserdatauv(L, sizeof *k, 0);
  k->m = w->m;
  k->tenant = (int)t - 1;
  luaL_setmetatable(L, METRICS_MT);
  return 1;
}

/* sink:call(tool, outcome, code, seconds) */
static int m_call(lua_State *L) {
  msink *k = luaL_checkudata(L, 1, METRICS_MT);
  bw_metrics_call(k->m, k->tenant, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
                  luaL_optstring(L, 4, NULL), luaL_checknumber(L, 5));
  return 0;
}

/* sink:unknown(): a tools/call of a tool the tenant does not serve */
static int m_unknown(lua_State *L) {
  msink *k = luaL_checkudata(L, 1, METRICS_MT);
  bw_metrics_unknown_tool(k->m, k->tenant);
  return 0;
}

/* sink:denial(policy) */
static int m_denial(lua_State *L) {
  msink *k = luaL_checkudata(L, 1, METRICS_MT);
  bw_metrics_denial(k->m, k->tenant, luaL_checkstring(L, 2));
  return 0;
}

/* sink:approval(result) */
static int m_approval(lua_State *L) {
  msink *k = luaL_checkudata(L, 1, METRICS_MT);
  bw_metrics_approval(k->m, k->tenant, luaL_checkstring(L, 2));
  return 0;
}

static const luaL_Reg metrics_methods[] = {
    {"call", m_call}, {"unknown", m_unknown}, {"denial", m_denial}, {"approval", m_approval}, {NULL, NULL}};

static int w_index(lua_State *L) {
  lua_pushinteger(L, check_worker(L)->index + 1);
  return 1;
}

static const luaL_Reg worker_methods[] = {
    {"next", w_next},         {"next_of", w_next_of}, {"send", w_send},     {"done", w_done},
    {"record", w_record},     {"release", w_release},   {"gone", w_gone},
    {"begin", w_begin},       {"finish", w_finish}, {"cancelled", w_cancelled},
    {"task", w_task},         {"cancel_task", w_cancel_task},
    {"index", w_index},       {"metrics", w_metrics},       {NULL, NULL}};

typedef struct wstart {
  server *srv;
  int index;
} wstart;

static void *worker_main(void *arg) {
  wstart *ws = arg;
  server *srv = ws->srv;
  wstate *w = &srv->w[ws->index];
  free(ws);
  bw_set_cancel_flag(bw_http_cancel_flag(srv->h, w->index));
  lua_State *L = luaL_newstate();
  if (!L) goto fail;
  luaL_openlibs(L);
  bw_lua_preload(L); /* as the main state: core, LPeg, the built-in files */
  bw_lua_preload_module(L, "burrow.server", srv->open_module);
  lua_getglobal(L, "package");
  lua_pushstring(L, srv->path);
  lua_setfield(L, -2, "path");
  lua_pushstring(L, srv->cpath);
  lua_setfield(L, -2, "cpath");
  lua_pop(L, 1);
  luaL_newmetatable(L, WORKER_MT);
  luaL_newlib(L, worker_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newmetatable(L, METRICS_MT);
  luaL_newlib(L, metrics_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, traceback);
  lua_getglobal(L, "require");
  lua_pushstring(L, srv->module);
  if (lua_pcall(L, 1, 1, 1) == LUA_OK) {
    lua_getfield(L, -1, "worker");
    *(wstate **)lua_newuserdatauv(L, sizeof(wstate *), 0) = w;
    luaL_setmetatable(L, WORKER_MT);
    lua_pushstring(L, srv->setup);
    if (lua_pcall(L, 2, 0, 1) == LUA_OK) {
      lua_close(L);
      bw_http_item_free(srv->h, w->cur);
      w->cur = NULL;
      return NULL;
    }
  }
  fprintf(stderr, "burrow: http worker %d failed: %s\n", w->index + 1,
          lua_tostring(L, -1));
  lua_close(L);
fail:
  atomic_store(&srv->failed, 1);
  uint64_t one = 1; /* http:wait wakes, stops the listener and the others */
  if (write(srv->fail_fd, &one, sizeof one) < 0) { /* a fresh counter: cannot fail */ }
  return NULL;
}

/* ------------------------------------------------------ the listener */

static server *check_server(lua_State *L) {
  box *b = luaL_checkudata(L, 1, HTTP_MT);
  if (!b->srv) luaL_error(L, "the HTTP server is stopped");
  return b->srv;
}

static char *opt_string(lua_State *L, int t, const char *k, const char *def) {
  lua_getfield(L, t, k);
  const char *s = lua_isstring(L, -1) ? lua_tostring(L, -1) : def;
  char *r = s ? strdup(s) : NULL;
  lua_pop(L, 1);
  return r;
}

static lua_Number opt_number(lua_State *L, int t, const char *k,
                             lua_Number def) {
  lua_getfield(L, t, k);
  lua_Number n = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : def;
  lua_pop(L, 1);
  return n;
}

/* A list of strings at t[k], kept alive as copies. */
static const char **opt_list(lua_State *L, int t, const char *k, int *n) {
  lua_getfield(L, t, k);
  *n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  const char **v = calloc((size_t)*n + 1, sizeof *v);
  for (int i = 0; v && i < *n; i++) {
    lua_rawgeti(L, -1, i + 1);
    v[i] = strdup(luaL_optstring(L, -1, ""));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return v;
}

static void free_list(const char *const *v, int n) {
  for (int i = 0; v && i < n; i++) free((char *)v[i]);
  free((void *)v);
}

static void server_free(server *srv) {
  free(srv->threads);
  free(srv->w);
  free(srv->setup);
  free(srv->path);
  free(srv->cpath);
  free(srv->module);
  free((char *)srv->o.host);
  free_list(srv->o.allowed_hosts, srv->o.n_hosts);
  free_list(srv->o.allowed_origins, srv->o.n_origins);
  free_list(srv->o.tenant_names, srv->n_names);
  free((char *)srv->mo.host);
  free_list(srv->mo.tools, srv->mo.n_tools);
  free_list(srv->mo.policies, srv->mo.n_policies);
  free((char *)srv->o.access_log);
  free((void *)srv->o.tokens);
  free((void *)srv->o.tenants);
  bw_oauth_free(srv->o.oauth);
  if (srv->o.store) bw_state_close(srv->o.store);
  if (srv->fail_fd >= 0) close(srv->fail_fd);
  free(srv);
}

/* Stop the listener (unless stopped: bw_http_shutdown did), join the
 * workers started, give the caller its signal mask back, free everything.
 * by > 0 (monotonic s): a worker not joined by then (a call that never
 * looks at its cancel flag) is left running, and what it uses with it:
 * the process is to end now. The number left. */
static int server_end(server *srv, int stopped, double by) {
  int left = 0;
  bw_metrics_stop(srv->m); /* it reads the listener: stopped first */
  if (srv->h) {
    if (!stopped) bw_http_stop(srv->h);
    for (int i = 0; i < srv->started; i++) {
      if (by <= 0) {
        pthread_join(srv->threads[i], NULL);
        continue;
      }
      double in = by - bw_now_mono();
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      long ns = in > 0 ? (long)(in * 1e9) : 0;
      ts.tv_sec += ns / 1000000000L;
      ts.tv_nsec += ns % 1000000000L;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      if (pthread_timedjoin_np(srv->threads[i], NULL, &ts) != 0) {
        pthread_detach(srv->threads[i]);
        left++;
      }
    }
    if (!left) bw_http_free(srv->h);
  }
  if (!left) bw_metrics_free(srv->m); /* else a worker left running may still report */
  pthread_sigmask(SIG_SETMASK, &srv->old, NULL);
  if (!left) server_free(srv);
  return left;
}

/* burrow.server.http_start{host, port, workers, max_running, session_ttl, max_body,
 * max_calls, max_sessions, max_sessions_per_address, replay, events_budget,
 * max_kept_bytes, max_queued, max_session_queued, max_tenant_queued, max_streams,
 * max_listens, max_connections,
 * max_connections_per_address, max_unauthenticated, auth_timeout,
 * retry_ms, allowed_hosts, allowed_origins, tenant_names, access_log
 * ("stderr", "off" or a file), tokens = {{sha256, tenant,
 * max_calls, max_body, max_sessions}...}, tenant_limits = {{max_calls,
 * max_sessions, max_running, max_kept_bytes, max_queued, max_streams, max_listens}...} (by tenant, 1: the
 * default), metrics = {host, port, allow_remote, tools, policies} (the
 * /metrics listener, httpmetrics.c; nil: none), oauth (JSON text for
 * oauth.c: http.lua's oauth_setup), setup, module} -> Http | nil, message.
 * SIGINT, SIGTERM and
 * SIGHUP stay blocked in the calling thread (and the threads it starts)
 * until http:wait, which takes them, returns; on failure its mask is as
 * it was. */
static int l_http_start(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  server *srv = calloc(1, sizeof *srv);
  if (!srv) return luaL_error(L, "out of memory");
  srv->fail_fd = -1;
  srv->open_module = lua_tocfunction(L, lua_upvalueindex(1)); /* bw_http_register's */
  pthread_sigmask(SIG_BLOCK, NULL, &srv->old);
  char msg[512] = "out of memory";
  bw_http_opts *o = &srv->o;
  o->host = opt_string(L, 1, "host", "127.0.0.1");
  o->port = (int)opt_number(L, 1, "port", 8080);
  o->workers = (int)opt_number(L, 1, "workers", 2);
  o->max_running = (int)opt_number(L, 1, "max_running", 0);
  o->session_ttl = opt_number(L, 1, "session_ttl", 1800);
  o->max_body = (size_t)opt_number(L, 1, "max_body", 4 << 20);
  o->max_calls = (int)opt_number(L, 1, "max_calls", 16);
  o->max_sessions = (int)opt_number(L, 1, "max_sessions", 1000);
  o->max_sessions_per_address = (int)opt_number(L, 1, "max_sessions_per_address", 0);
  o->replay = (int)opt_number(L, 1, "replay", 256);
  o->events_budget = (size_t)opt_number(L, 1, "events_budget", 0);
  o->max_kept_bytes = (size_t)opt_number(L, 1, "max_kept_bytes", 64 << 20);
  o->max_queued = (size_t)opt_number(L, 1, "max_queued", 256 << 20);
  o->max_session_queued = (size_t)opt_number(L, 1, "max_session_queued", 32 << 20);
  o->max_tenant_queued = (size_t)opt_number(L, 1, "max_tenant_queued", 0);
  o->max_streams = (int)opt_number(L, 1, "max_streams", 2048);
  o->max_listens = (int)opt_number(L, 1, "max_listens", 1024);
  o->max_connections = (int)opt_number(L, 1, "max_connections", 1024);
  o->max_connections_per_address = (int)opt_number(L, 1, "max_connections_per_address", 256);
  o->retry_ms = (int)opt_number(L, 1, "retry_ms", 1000);
  o->max_unauthenticated = (int)opt_number(L, 1, "max_unauthenticated", 128);
  o->auth_timeout = (int)opt_number(L, 1, "auth_timeout", 10);
  o->allowed_hosts = opt_list(L, 1, "allowed_hosts", &o->n_hosts);
  o->allowed_origins = opt_list(L, 1, "allowed_origins", &o->n_origins);
  o->tenant_names = opt_list(L, 1, "tenant_names", &srv->n_names);
  o->access_log = opt_string(L, 1, "access_log", "stderr");
  if (!o->host || !o->allowed_hosts || !o->allowed_origins || !o->tenant_names || !o->access_log) goto fail;
  lua_getfield(L, 1, "tokens");
  int nt = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  bw_http_token *toks = calloc((size_t)nt + 1, sizeof *toks);
  o->tokens = toks;
  o->n_tokens = nt;
  for (int i = 0; toks && i < nt; i++) {
    lua_rawgeti(L, -1, i + 1);
    int t = lua_gettop(L);
    char *hex = opt_string(L, t, "sha256", "");
    int ok = hex && strlen(hex) == 64;
    if (ok) memcpy(toks[i].sha256, hex, 65);
    free(hex);
    if (!ok) {
      snprintf(msg, sizeof msg, "token %d: sha256 must be 64 hex digits", i + 1);
      goto fail;
    }
    toks[i].tenant = (int)opt_number(L, t, "tenant", 1) - 1;
    toks[i].max_calls = (int)opt_number(L, t, "max_calls", 0);
    toks[i].max_body = (size_t)opt_number(L, t, "max_body", 0);
    toks[i].max_sessions = (int)opt_number(L, t, "max_sessions", 0);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (!toks) goto fail;
  lua_getfield(L, 1, "tenant_limits");
  int nl = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
  bw_http_tenant *ten = calloc((size_t)nl + 1, sizeof *ten);
  o->tenants = ten;
  o->n_tenants = nl;
  for (int i = 0; ten && i < nl; i++) {
    lua_rawgeti(L, -1, i + 1);
    int t = lua_gettop(L);
    ten[i].max_calls = (int)opt_number(L, t, "max_calls", 0);
    ten[i].max_sessions = (int)opt_number(L, t, "max_sessions", 0);
    ten[i].max_running = (int)opt_number(L, t, "max_running", 0);
    ten[i].max_kept_bytes = (size_t)opt_number(L, t, "max_kept_bytes", 0);
    ten[i].max_queued = (size_t)opt_number(L, t, "max_queued", 0);
    ten[i].max_streams = (int)opt_number(L, t, "max_streams", 0);
    ten[i].max_listens = (int)opt_number(L, t, "max_listens", 0);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (!ten) goto fail;
  srv->grace = opt_number(L, 1, "shutdown_grace", 10);
  lua_getfield(L, 1, "metrics"); /* {host, port, allow_remote, tools, policies} | nil */
  if (lua_istable(L, -1)) {
    int t = lua_gettop(L);
    srv->mo.host = opt_string(L, t, "host", "127.0.0.1");
    srv->mo.port = (int)opt_number(L, t, "port", 9464);
    lua_getfield(L, t, "allow_remote");
    srv->mo.allow_remote = lua_toboolean(L, -1);
    lua_pop(L, 1);
    srv->mo.tools = opt_list(L, t, "tools", &srv->mo.n_tools);
    srv->mo.policies = opt_list(L, t, "policies", &srv->mo.n_policies);
    if (!srv->mo.host || !srv->mo.tools || !srv->mo.policies) goto fail;
  }
  lua_pop(L, 1);
  lua_getfield(L, 1, "store"); /* the deployment's store, for /readyz */
  if (!lua_isnil(L, -1)) {
    bw_state *st = bw_lstate_at(L, -1);
    if (!st) {
      lua_pop(L, 1);
      snprintf(msg, sizeof msg, "store must be an open core.state_open store");
      goto fail;
    }
    o->store = bw_state_ref(st);
  }
  lua_pop(L, 1);
  char *oauth = opt_string(L, 1, "oauth", "");
  if (oauth && *oauth) o->oauth = bw_oauth_new(oauth, msg, sizeof msg);
  int oauth_bad = !oauth || (*oauth && !o->oauth);
  free(oauth);
  if (oauth_bad) goto fail;
  srv->setup = opt_string(L, 1, "setup", "{}");
  srv->module = opt_string(L, 1, "module", "burrow.transport.http");
  lua_getglobal(L, "package");
  srv->path = opt_string(L, lua_gettop(L), "path", "");
  srv->cpath = opt_string(L, lua_gettop(L), "cpath", "");
  lua_pop(L, 1);
  srv->fail_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  srv->nworkers = o->workers < 1 ? 1 : o->workers;
  srv->threads = calloc((size_t)srv->nworkers, sizeof *srv->threads);
  srv->w = calloc((size_t)srv->nworkers, sizeof *srv->w);
  if (!srv->setup || !srv->module || !srv->path || !srv->cpath || srv->fail_fd < 0 ||
      !srv->threads || !srv->w)
    goto fail;
  /* SIGINT, SIGTERM and SIGHUP go to http:wait alone: blocked before any
   * thread exists, so every thread inherits the mask */
  sigemptyset(&srv->sigs);
  sigaddset(&srv->sigs, SIGINT);
  sigaddset(&srv->sigs, SIGTERM);
  sigaddset(&srv->sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &srv->sigs, NULL);
  srv->h = bw_http_start(o, msg, sizeof msg);
  if (!srv->h) {
    server_end(srv, 0, 0);
    lua_pushnil(L);
    lua_pushstring(L, msg);
    return 2;
  }
  /* the metrics listener before the workers, which report to it */
  if (srv->mo.host && !(srv->m = bw_metrics_start(srv->h, &srv->mo, msg, sizeof msg))) {
    server_end(srv, 0, 0);
    lua_pushnil(L);
    lua_pushstring(L, msg);
    return 2;
  }
  box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->srv = NULL;
  luaL_setmetatable(L, HTTP_MT);
  for (int i = 0; i < srv->nworkers; i++) {
    srv->w[i].h = srv->h;
    srv->w[i].m = srv->m;
    srv->w[i].index = i;
    wstart *ws = malloc(sizeof *ws);
    if (ws) {
      ws->srv = srv;
      ws->index = i;
    }
    if (!ws || pthread_create(&srv->threads[i], NULL, worker_main, ws) != 0) {
      free(ws);
      snprintf(msg, sizeof msg, "cannot start HTTP worker %d", i + 1);
      goto fail;
    }
    srv->started++;
  }
  b->srv = srv;
  return 1;
fail:
  server_end(srv, 0, 0);
  return luaL_error(L, "%s", msg);
}

static int h_port(lua_State *L) {
  lua_pushinteger(L, bw_http_port(check_server(L)->h));
  return 1;
}

/* http:ready(): the caller's start-up checks passed; /readyz is 200 once
 * every worker is up too (and the store answers, when there is one). */
static int h_ready(lua_State *L) {
  bw_http_ready(check_server(L)->h);
  return 0;
}

/* http:wait() -> "signal" | "failed": until SIGINT or SIGTERM (SIGHUP is
 * reported on stderr and ignored: reload is stdio's) or a worker fails.
 * A signal drains first (bw_http_shutdown: not ready, new requests 503,
 * the calls in flight given shutdown_grace seconds), then stops the
 * listener and the workers, says on stderr what it cut, and gives back
 * the signal mask http_start found; a failure stops at once. */
static int h_wait(lua_State *L) {
  server *srv = check_server(L);
  int sfd = signalfd(-1, &srv->sigs, SFD_CLOEXEC);
  if (sfd < 0) return luaL_error(L, "cannot wait for signals: %s", strerror(errno));
  int signo = 0;
  for (;;) {
    struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = srv->fail_fd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) continue; /* EINTR */
    if (p[1].revents) break;          /* a worker failed: stop all */
    struct signalfd_siginfo si;
    if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si) continue;
    if (si.ssi_signo == SIGHUP) {
      fputs("burrow: SIGHUP: reload is not supported over HTTP; restart "
            "the server to load a new configuration\n",
            stderr);
      continue;
    }
    signo = (int)si.ssi_signo;
    break;
  }
  close(sfd);
  int failed = atomic_load(&srv->failed);
  ((box *)luaL_checkudata(L, 1, HTTP_MT))->srv = NULL;
  if (failed || !signo) {
    server_end(srv, 0, 0);
    lua_pushstring(L, "failed");
    return 1;
  }
  const char *name = signo == SIGINT ? "SIGINT" : "SIGTERM";
  double grace = srv->grace;
  fprintf(stderr, "burrow: %s: draining: not ready, new requests refused (503); the calls in flight "
          "have %gs to end\n", name, grace);
  double t0 = bw_now_mono();
  bw_http_cut cut;
  bw_http_shutdown(srv->h, grace, &cut);
  /* the workers: a call cancelled at the deadline stops at its next check */
  double by = t0 + grace + 0.07;
  if (by < bw_now_mono() + 0.03) by = bw_now_mono() + 0.03;
  int left = server_end(srv, 1, by);
  fprintf(stderr, "burrow: %s: stopped %.0f ms after it: %d call%s still running at the end, "
          "cancelled%s; %d stream%s open, ended\n", name, (bw_now_mono() - t0) * 1000, cut.calls,
          cut.calls == 1 ? "" : "s", left ? " (a worker still busy is left to the process's exit)" : "",
          cut.streams, cut.streams == 1 ? "" : "s");
  lua_pushstring(L, "signal");
  return 1;
}

/* burrow.server.token_hash(text) -> the sha256 hex the config stores */
static int l_token_hash(lua_State *L) {
  char out[65];
  bw_http_token_hash(luaL_checkstring(L, 1), out);
  lua_pushstring(L, out);
  return 1;
}

/* http:metrics_port() -> the metrics listener's port | nil (none) */
static int h_metrics_port(lua_State *L) {
  server *srv = check_server(L);
  if (!srv->m) return 0;
  lua_pushinteger(L, bw_metrics_port(srv->m));
  return 1;
}

static const luaL_Reg http_methods[] = {
    {"port", h_port}, {"metrics_port", h_metrics_port}, {"ready", h_ready}, {"wait", h_wait}, {NULL, NULL}};

void bw_http_register(lua_State *L, lua_CFunction open_module) {
  luaL_newmetatable(L, HTTP_MT);
  luaL_newlib(L, http_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, open_module);
  lua_pushcclosure(L, l_http_start, 1);
  lua_setfield(L, -2, "http_start");
  lua_pushcfunction(L, l_token_hash);
  lua_setfield(L, -2, "token_hash");
}
