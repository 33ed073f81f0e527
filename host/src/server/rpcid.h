/*
 * rpcid.h - JSON-RPC request ids as values, and the answer to a ping:
 * what the stdio and HTTP transports share (lserver.c, http.c,
 * httpsess.c), so both compare a cancel's requestId with the call in
 * flight the same way, and answer a ping with any id the same way.
 */
#ifndef BURROW_RPCID_H
#define BURROW_RPCID_H

#include <jansson.h>
#include <stddef.h>

enum { BW_RPCID_NONE = 0, BW_RPCID_INT, BW_RPCID_REAL, BW_RPCID_STR };

/* An id as a value: two JSON texts of one id may differ (escapes, the
 * encoder that wrote them), the values do not. A zeroed one is NONE,
 * which equals nothing. */
typedef struct bw_rpcid {
  int type;
  long long i;
  double d;
  size_t len;
  char *s; /* a string id's bytes (malloc'd, any length) */
} bw_rpcid;

/* From a jansson value / a JSON text / a Lua-side string or number; an id
 * of another type (or no memory) is NONE. r is cleared first. */
void bw_rpcid_from_json(bw_rpcid *r, const json_t *j);
void bw_rpcid_from_text(bw_rpcid *r, const char *json);
void bw_rpcid_from_string(bw_rpcid *r, const char *s, size_t len);
void bw_rpcid_from_int(bw_rpcid *r, long long i);
void bw_rpcid_from_real(bw_rpcid *r, double d);
int bw_rpcid_equal(const bw_rpcid *a, const bw_rpcid *b);
void bw_rpcid_clear(bw_rpcid *r);
/* Move a into b (b cleared first); a is NONE after. */
void bw_rpcid_move(bw_rpcid *b, bw_rpcid *a);

/* The ids of requests cancelled before they began (a ring: the oldest
 * of BW_RPCGONE_MAX goes first); a transport keeps one per connection or
 * session and asks it when a request begins. */
enum { BW_RPCGONE_MAX = 64 };
typedef struct bw_rpcgone {
  bw_rpcid id[BW_RPCGONE_MAX];
  int next;
} bw_rpcgone;
/* Remember r (moved in; NONE is ignored). */
void bw_rpcgone_add(bw_rpcgone *g, bw_rpcid *r);
/* 1 if r was cancelled before it began (and forget it). */
int bw_rpcgone_take(bw_rpcgone *g, const bw_rpcid *r);
void bw_rpcgone_clear(bw_rpcgone *g);

/* The answer to a ping whose id is id (any JSON value):
 * {"jsonrpc":"2.0","id":ID,"result":{}}, malloc'd, its length in *len;
 * NULL when out of memory. */
char *bw_rpc_pong(const json_t *id, size_t *len);

#endif
