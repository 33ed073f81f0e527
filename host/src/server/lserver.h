/*
 * lserver.h - stdio plumbing of the MCP server (lserver.c).
 */
#ifndef BURROW_LSERVER_H
#define BURROW_LSERVER_H

#include <lua.h>
#include <stddef.h>

/* Sets field "stdio" in the table on top of the stack. */
void bw_stdio_register(lua_State *L);
/* Write one line to stdout under the output lock. */
int bw_stdout_line(const char *s, size_t n);
/* The cancel flag of the request in flight, for long operations to poll. */
const _Atomic int *bw_cancel_flag(void);
/* On this thread, until set back to NULL: the flag bw_cancel_flag gives (an
 * HTTP worker's, lhttp.c; a submitted call's, api_async.c). */
void bw_set_cancel_flag(const _Atomic int *flag);

#endif
