/*
 * redis.h - a connection to Redis/Valkey for the state store
 * (stateredis.c): the URL, a socket burrow opens itself with connect and
 * command deadlines, TLS through OpenSSL's libssl for rediss://, and RESP
 * through hiredis's reply reader and command formatter only (Debian's
 * hiredis 0.14 has no TLS of its own). libhiredis, and libssl for
 * rediss://, are opened with dlopen by the first target (dynlib.c), so no
 * start that uses no Redis pays for them. A connection serves one thread
 * at a time; the caller pools them.
 */
#ifndef BURROW_REDIS_H
#define BURROW_REDIS_H

#include <stddef.h>
#include <stdint.h>
#include <hiredis/hiredis.h>

#include "state.h"

typedef struct bw_redis_target bw_redis_target; /* where and how to connect */
typedef struct bw_redis_conn bw_redis_conn;

/* Parse url, load the libraries, make the TLS context: INVALID_ARGUMENT
 * for a bad URL (or one with a password in it), STORE_UNAVAILABLE when a
 * library is missing (the detail says what to install). */
int bw_redis_target_new(const char *url, const bw_state_redis_opts *o, bw_redis_target **out);
void bw_redis_target_free(bw_redis_target *t);
double bw_redis_timeout(const bw_redis_target *t); /* the command timeout, seconds */

/* The password file (if any) read as a connection would: a missing or
 * empty one is INVALID_ARGUMENT (a configuration error, not an outage). */
int bw_redis_password_check(const bw_redis_target *t);
/* Connect, TLS handshake and verification, AUTH, SELECT: STORE_UNAVAILABLE
 * with the reason (the host and port, never the password). */
int bw_redis_connect(const bw_redis_target *t, bw_redis_conn **out);
/* An idle connection still usable (the server has not closed it)? */
int bw_redis_alive(bw_redis_conn *c);
/* One command and its reply (*out, freed with bw_redis_reply_free): an
 * error reply is a reply; STORE_UNAVAILABLE means the connection failed
 * and must be closed. */
int bw_redis_call(bw_redis_conn *c, int argc, const char **argv, const size_t *lens,
                  redisReply **out);
void bw_redis_reply_free(redisReply *r);
/* A subscriber's connection: a command sent without reading its reply
 * (SUBSCRIBE's come as pushes), and the next thing the server sends,
 * waiting at most wait_ms or until stop_fd (-1: none) turns readable:
 * *out NULL when nothing came. STORE_UNAVAILABLE: the connection failed. */
int bw_redis_send(bw_redis_conn *c, int argc, const char **argv, const size_t *lens);
int bw_redis_next(bw_redis_conn *c, int wait_ms, int stop_fd, redisReply **out);
void bw_redis_close(bw_redis_conn *c);

/* A failure's detail in this thread's buffer (the detail of bw_fail
 * must outlive the call): "state store (redis): ..." */
int bw_redis_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* This thread's last failure never reached the server (no such host,
 * nothing listening, no answer in time, the connection lost): an outage,
 * not a refusal (AUTH, a certificate, an unreadable password file). */
int bw_redis_unreached(void);

#endif
