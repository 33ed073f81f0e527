/*
 * lserver.h - stdio plumbing of the MCP server (lserver.c).
 */
#ifndef BURROW_LSERVER_H
#define BURROW_LSERVER_H

#include <lua.h>
#include <stddef.h>

/* luaopen_burrow_server: the transports' Lua module (lopen.c), {stdio =,
 * http_start =, token_hash =}; offered by the binary and the HTTP workers
 * (package.preload), and for a plain Lua 5.4 the opener of server.so, beside
 * core.so (burrow/init.lua). */
__attribute__((visibility("default"))) int luaopen_burrow_server(lua_State *L);
/* Sets field "stdio" in the table on top of the stack. */
void bw_stdio_register(lua_State *L);
/* Sets fields "http_start" and "token_hash" in the table on top (lhttp.c).
 * open_module: the module's opener (luaopen_burrow_server), which every
 * HTTP worker's state is offered as burrow.server; handed down by
 * lopen.c, so lhttp.c never names the file above it. */
void bw_http_register(lua_State *L, lua_CFunction open_module);
/* Write one line to stdout under the output lock. */
int bw_stdout_line(const char *s, size_t n);
/* (The cancel flag of the call in flight: bw_cancel_flag, core/stop.c;
 * bw_stdio_register makes the stdio server's calls its source.) */

#endif
