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
/* This thread's cancel flag instead of stdio's (an HTTP worker's). */
void bw_set_cancel_flag(const _Atomic int *flag);

#endif
