/*
 * api_open.c - burrow.h's openers: burrow_open, burrow_open_file,
 * burrow_open_state, burrow_open_state_file. Each opens a host (api.c)
 * whose state is offered burrow.host (lhost.c), so a workspace there can
 * submit calls (ws:submit). The top of api/: burrow.host opens hosts of
 * api.c too, so the module is handed down from here rather than named by
 * api.c, and the arrows run one way (api_open.c, lhost.c, api.c,
 * api_async.c).
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "lhost.h"

burrow_host *burrow_open(const char *config, char **errmsg) {
  return bw_open_host(NULL, config, "open", NULL, luaopen_burrow_host, errmsg);
}

burrow_host *burrow_open_file(const char *path, char **errmsg) {
  if (!path) {
    if (errmsg) *errmsg = strdup("INVALID_ARGUMENT: burrow_open_file: path is NULL");
    return NULL;
  }
  return bw_open_host(NULL, path, "open_file", NULL, luaopen_burrow_host, errmsg);
}

burrow_host *burrow_open_state(struct lua_State *L, const char *config,
                               char **errmsg) {
  if (!L) {
    if (errmsg) *errmsg = strdup("INVALID_ARGUMENT: burrow_open_state: L is NULL");
    return NULL;
  }
  return bw_open_host(L, config, "open", NULL, luaopen_burrow_host, errmsg);
}

burrow_host *burrow_open_state_file(struct lua_State *L, const char *path,
                                    char **errmsg) {
  if (!L || !path) {
    if (errmsg)
      *errmsg = strdup("INVALID_ARGUMENT: burrow_open_state_file: L or path is NULL");
    return NULL;
  }
  return bw_open_host(L, path, "open_file", NULL, luaopen_burrow_host, errmsg);
}
