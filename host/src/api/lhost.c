/*
 * lhost.c - burrow.host: a host of the embedding API (its own Lua state and
 * worker thread, api_async.c) opened from a Lua program, so a workspace can
 * run calls without blocking its caller's loop (ws:submit, ws:fd, ws:poll in
 * lua/burrow/init.lua). Above api.c: the host it opens is offered this
 * module in turn, handed down (bw_open_host).
 *
 *   burrow.host.host(opts_json, package_path) -> Host | nil, message
 *   host:submit(tool, args_json) -> id | nil
 *   host:take() -> id, rc, result_json | nothing     (one completion)
 *   host:fd() -> eventfd     host:cancel(id) -> boolean     host:close()
 *   host:approver(timeout_ms)   questions of submitted calls wait for
 *                               take_ask (0: off, asks denied)
 *   host:take_ask() -> id, question_json | nothing
 *   host:answer(id, allow[, why]) -> boolean
 */
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <stdlib.h>

#include "api.h"
#include "lcore.h"
#include "lhost.h"

#define HOST_MT "burrow.Host"

typedef struct {
  burrow_host *h;
} lhost;

static lhost *check_host(lua_State *L) {
  lhost *x = luaL_checkudata(L, 1, HOST_MT);
  if (!x->h) luaL_error(L, "attempt to use a closed host");
  return x;
}

static int l_host(lua_State *L) {
  const char *opts = luaL_checkstring(L, 1);
  const char *path = luaL_checkstring(L, 2);
  lhost *x = lua_newuserdatauv(L, sizeof *x, 0);
  x->h = NULL;
  luaL_setmetatable(L, HOST_MT);
  char *err = NULL;
  x->h = bw_open_host(NULL, opts, "open_json", path, luaopen_burrow_host, &err);
  if (!x->h) {
    lua_pushnil(L);
    lua_pushstring(L, err ? err : "cannot open a host");
    burrow_free(err);
    return 2;
  }
  return 1;
}

static int h_submit(lua_State *L) {
  lhost *x = check_host(L);
  unsigned long long id = burrow_submit(x->h, luaL_checkstring(L, 2),
                                        luaL_checkstring(L, 3), NULL, NULL);
  if (!id) return 0;
  lua_pushinteger(L, (lua_Integer)id);
  return 1;
}

static int h_take(lua_State *L) {
  lhost *x = check_host(L);
  unsigned long long id;
  int rc;
  char *res = NULL;
  if (!burrow_take(x->h, &id, &rc, &res)) return 0;
  lua_pushinteger(L, (lua_Integer)id);
  lua_pushinteger(L, rc);
  if (res) lua_pushstring(L, res); /* may raise on OOM: res leaks then */
  else lua_pushnil(L);
  burrow_free(res);
  return 3;
}

static int h_fd(lua_State *L) {
  lua_pushinteger(L, burrow_fd(check_host(L)->h));
  return 1;
}

static int h_cancel(lua_State *L) {
  lhost *x = check_host(L);
  lua_Integer id = luaL_checkinteger(L, 2);
  lua_pushboolean(L, id > 0 && burrow_cancel(x->h, (unsigned long long)id));
  return 1;
}

static int h_approver(lua_State *L) {
  lhost *x = check_host(L);
  lua_Integer ms = luaL_checkinteger(L, 2);
  if (ms < 0) ms = 0;
  if (ms > INT_MAX) ms = INT_MAX;
  burrow_set_approver(x->h, NULL, NULL, (int)ms);
  return 0;
}

static int h_take_ask(lua_State *L) {
  lhost *x = check_host(L);
  unsigned long long id;
  char *q = NULL;
  if (!burrow_take_ask(x->h, &id, &q)) return 0;
  lua_pushinteger(L, (lua_Integer)id);
  lua_pushstring(L, q); /* may raise on OOM: q leaks then */
  burrow_free(q);
  return 2;
}

static int h_answer(lua_State *L) {
  lhost *x = check_host(L);
  lua_Integer id = luaL_checkinteger(L, 2);
  int allow = lua_toboolean(L, 3);
  const char *why = luaL_optstring(L, 4, NULL);
  lua_pushboolean(L, id > 0 && burrow_answer(x->h, (unsigned long long)id, allow, why));
  return 1;
}

static int h_close(lua_State *L) {
  lhost *x = luaL_checkudata(L, 1, HOST_MT);
  if (x->h) burrow_close(x->h);
  x->h = NULL;
  return 0;
}

static const luaL_Reg host_methods[] = {
    {"submit", h_submit},     {"take", h_take},         {"fd", h_fd},
    {"cancel", h_cancel},     {"approver", h_approver}, {"take_ask", h_take_ask},
    {"answer", h_answer},     {"close", h_close},       {NULL, NULL}};

void bw_host_register(lua_State *L) {
  luaL_newmetatable(L, HOST_MT);
  lua_newtable(L);
  luaL_setfuncs(L, host_methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, h_close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, h_close);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_host);
  lua_setfield(L, -2, "host");
}

int luaopen_burrow_host(lua_State *L) {
  lua_newtable(L);
  bw_host_register(L);
  return 1;
}
