/*
 * state.h - the state store: per-principal state (quota counters, used
 * approval states, session records) under a tenant and a key, every entry
 * expiring. One interface (state.c checks the arguments and dispatches),
 * backends behind a small table of functions: the embedded store
 * (statemem.c: in this process, one instance every thread shares, bounded
 * per tenant and in all) and the counter file (statefile.c over
 * counter.c: the processes of one machine) and Redis/Valkey
 * (stateredis.c over redis.c: several instances of one deployment share
 * one exact quota, used approval states and session records). Callers do
 * not change.
 */
#ifndef BURROW_STATE_H
#define BURROW_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

typedef struct bw_state bw_state;

enum {
  BW_STATE_TENANT_MAX = 255,     /* bytes of a tenant (may be empty) */
  BW_STATE_KEY_MAX = 1024,       /* bytes of a key (at least one) */
  BW_STATE_VALUE_MAX = 1 << 20,  /* bytes of a record's value */
  BW_STATE_TTL_MAX = 366 * 86400 /* seconds an entry may live */
};

/* The embedded store's caps; 0 takes the default below. An entry costs its
 * key, its value and BW_STATE_ENTRY_COST bytes of bookkeeping. */
typedef struct bw_state_caps {
  size_t max_entries_per_tenant, max_bytes_per_tenant;
  size_t max_entries, max_bytes; /* all tenants together */
} bw_state_caps;

#define BW_STATE_DEFAULT_TENANT_ENTRIES ((size_t)10000)
#define BW_STATE_DEFAULT_TENANT_BYTES ((size_t)8 << 20)
#define BW_STATE_DEFAULT_ENTRIES ((size_t)200000)
#define BW_STATE_DEFAULT_BYTES ((size_t)64 << 20)
#define BW_STATE_ENTRY_COST ((size_t)128)

typedef struct bw_state_totals {
  size_t entries, bytes; /* live entries; the bytes they are charged */
} bw_state_totals;

/* Open an embedded store (statemem.c; caps NULL: the defaults) or one on
 * the counter file at path (statefile.c; created 0600; the operator names
 * it, never an agent). The file has counters and marks but no records
 * (BW_INVALID_ARGUMENT), expiry in whole seconds of the wall clock, tenant
 * and key of 89 bytes together at most (no \x1f in the tenant), and its
 * own one cap: 4096 records of every kind, shared_add's included.
 * Close drops the caller's reference; the last one frees it. */
int bw_state_open_memory(const bw_state_caps *caps, bw_state **out);
int bw_state_open_file(const char *path, bw_state **out);

/* Redis/Valkey: url is redis://[user@]host[:port][/db], or rediss:// for
 * TLS (the certificate and the host name verified unless verify_off). The
 * password is never in the URL (one there is refused): AUTH takes the
 * first line of password_file, read at every connection (so it may be
 * rotated). Timeouts in seconds (0: 2); pool: connections at most (0: 4).
 * The per-tenant caps are the embedded store's (0: the same defaults),
 * checked on the server in the step that writes; the store as a whole is
 * bounded by the server's maxmemory. libhiredis (and libssl for rediss://)
 * are opened at the first open. Open connects once, so a wrong URL,
 * password or certificate fails here; after that, any call the server
 * cannot answer fails with BW_STORE_UNAVAILABLE and the next one connects
 * again. With down given, a server not reached at open (nothing
 * listening, no answer in time: an outage, not a refusal) opens the store
 * all the same, *down = 1 and the detail (bw_detail) saying why: its
 * calls fail with BW_STORE_UNAVAILABLE until the server answers. */
typedef struct bw_state_redis_opts {
  const char *password_file; /* NULL: no AUTH */
  const char *ca_file;       /* rediss://: the CA bundle; NULL: the system's */
  int verify_off;            /* rediss://: 1 skips certificate and name checks */
  double connect_timeout, timeout;
  size_t pool;
  size_t max_entries_per_tenant, max_bytes_per_tenant;
  int *down; /* non-NULL: open while the server is not reached (above) */
} bw_state_redis_opts;
int bw_state_open_redis(const char *url, const bw_state_redis_opts *opts, bw_state **out);
BW_SHARED bw_state *bw_state_ref(bw_state *s);
BW_SHARED void bw_state_close(bw_state *s);
/* The process's own embedded store with the default caps, made at the
 * first call and never freed: every thread and every Lua state gets the
 * same one. A reference the caller closes. */
int bw_state_default(bw_state **out);
BW_SHARED const char *bw_state_kind(const bw_state *s); /* "memory", "file", "redis" */
/* What the store is, the same for two handles on one Redis database or
 * one file ("redis:URL", "file:PATH", "memory:ADDRESS"): changes.c hears a
 * store once per process however many handles each worker opened. */
const char *bw_state_id(const bw_state *s);

/* Each operation: tenant (0 to 255 bytes) and key (1 to 1024), NUL-free
 * C strings; ttl in seconds, more than 0 and at most BW_STATE_TTL_MAX, from
 * the entry's creation. An entry that would pass a cap fails closed:
 * BW_TOO_LARGE, its detail naming the cap; no other entry is dropped for
 * it, only expired ones. Give a key one kind of entry (counter, mark or
 * record): the embedded and Redis stores refuse another kind's operation
 * on it (BW_INVALID_ARGUMENT), the file keeps the kinds apart. A store
 * that cannot answer (Redis down, timed out, refusing) fails with
 * BW_STORE_UNAVAILABLE: never a yes, never a silent no. */

/* Counter: add delta unless limit >= 0 and value + delta > limit. The
 * counter starts at 0 and is created by its first addition; it lives ttl
 * from then (a window: later additions do not extend it). A value below 0
 * is kept at 0. *added: 1 or 0; *value: the counter after the call. */
BW_SHARED int bw_state_add(bw_state *s, const char *tenant, const char *key, int64_t delta,
                 int64_t limit, double ttl, int *added, int64_t *value);
/* Mark: *first = 1 the first time (the key is marked for ttl), 0 while the
 * mark lives. */
int bw_state_once(bw_state *s, const char *tenant, const char *key, double ttl,
                  int *first);
/* Record: *val (malloc'd, the caller frees it; NULL when absent), *len and
 * *version (> 0; 0 when absent). */
BW_SHARED int bw_state_get(bw_state *s, const char *tenant, const char *key, char **val,
                 size_t *len, uint64_t *version);
/* Record: write val when the record's version is expected (0: only if
 * there is none); it then lives ttl from now, with a new version. *done: 1
 * or 0; *version: the record's version after the call (0: none). */
BW_SHARED int bw_state_cas(bw_state *s, const char *tenant, const char *key, uint64_t expected,
                 const void *val, size_t len, double ttl, int *done, uint64_t *version);
/* Any entry: drop it when expected is 0 or its version (a record's) is
 * expected. *deleted: 1 or 0. */
BW_SHARED int bw_state_del(bw_state *s, const char *tenant, const char *key, uint64_t expected,
                 int *deleted);
/* The tenant's live entries. */
BW_SHARED int bw_state_count(bw_state *s, const char *tenant, size_t *n);
int bw_state_stats(bw_state *s, bw_state_totals *st);
/* The process's operations a store could not answer (STORE_UNAVAILABLE or
 * EIO) since it started, every store together: op 0 to BW_STATE_NOPS - 1,
 * its name ("add", "once", "get", "cas", "del", "count") in *name. */
enum { BW_STATE_NOPS = 6 };
BW_SHARED uint64_t bw_state_failures(int op, const char **name);

/* ---- publish/subscribe ----
 * A message to a channel of a tenant reaches the subscriptions to that
 * channel of that tenant, in every process sharing the store (Redis), or
 * in this process (embedded); the file store has none
 * (BW_INVALID_ARGUMENT, naming the stores that have it). Delivery is at
 * most once and may miss: a subscription says so (a gap) rather than
 * block a publisher or grow. A channel is 1 to 64 bytes of [A-Za-z0-9._-];
 * a message at most BW_STATE_MESSAGE_MAX bytes (BW_TOO_LARGE). */
enum {
  BW_STATE_CHANNEL_MAX = 64,
  BW_STATE_MESSAGE_MAX = 16384,
  BW_STATE_SUB_CHANNELS = 8, /* channels of one subscription */
  BW_STATE_SUB_QUEUE = 256,  /* messages a subscription holds unread; more are dropped */
  BW_STATE_SUB_BYTES = 1 << 20 /* and their bytes */
};
typedef struct bw_state_sub bw_state_sub;
BW_SHARED int bw_state_publish(bw_state *s, const char *tenant, const char *channel, const void *msg,
                     size_t len);
/* Subscribe to n channels of tenant. With Redis it returns once the server
 * has confirmed (or after the timeout, the server unreachable: the
 * subscription then starts with a gap once it is back). */
BW_SHARED int bw_state_subscribe(bw_state *s, const char *tenant, const char *const *channels, int n,
                       bw_state_sub **out);
/* Readable (an eventfd) while something waits: poll it, never read it. */
BW_SHARED int bw_state_sub_fd(const bw_state_sub *sub);
/* The next item: BW_OK with *gap = 1 (messages were missed: the queue
 * was full, or the connection to the server was lost and made again),
 * or *gap = 0, *channel and *msg (malloc'd, NUL-terminated beyond *len:
 * the caller frees both); BW_EAGAIN when nothing waits. */
BW_SHARED int bw_state_sub_next(bw_state_sub *sub, char **channel, char **msg, size_t *len, int *gap);
BW_SHARED void bw_state_unsubscribe(bw_state_sub *sub);

/* ---- for backends ---- */

/* Arguments come checked (state.c); each function sets the failure's
 * detail (bw_fail) itself. */
typedef struct bw_state_ops {
  const char *kind;
  int (*add)(bw_state *, const char *tenant, const char *key, int64_t delta, int64_t limit,
             double ttl, int *added, int64_t *value);
  int (*once)(bw_state *, const char *tenant, const char *key, double ttl, int *first);
  int (*get)(bw_state *, const char *tenant, const char *key, char **val, size_t *len,
             uint64_t *version);
  int (*cas)(bw_state *, const char *tenant, const char *key, uint64_t expected,
             const void *val, size_t len, double ttl, int *done, uint64_t *version);
  int (*del)(bw_state *, const char *tenant, const char *key, uint64_t expected, int *deleted);
  int (*count)(bw_state *, const char *tenant, size_t *n);
  int (*stats)(bw_state *, bw_state_totals *);
  /* NULL: the backend has no publish/subscribe */
  int (*publish)(bw_state *, const char *tenant, const char *channel, const void *msg, size_t len);
  int (*subscribe)(bw_state *, bw_state_sub *);  /* register it (statesub.c made it) */
  void (*unsubscribe)(bw_state *, bw_state_sub *); /* and no push after this returns */
  void (*free)(bw_state *);
} bw_state_ops;

/* A subscription's queue (statesub.c), which backends push into: what
 * it wants, the bounded queue, the gap. */
struct bw_state_sub {
  bw_state *s;              /* a reference while subscribed */
  char tenant[BW_STATE_TENANT_MAX + 1];
  char channel[BW_STATE_SUB_CHANNELS][BW_STATE_CHANNEL_MAX + 1];
  int nchannels;
  bw_state_sub *next;       /* the backend's list */
  struct bw_state_sub_q *q; /* statesub.c's */
};
/* Whether sub wants channel of tenant. */
int bw_state_sub_wants(const bw_state_sub *sub, const char *tenant, const char *channel);
/* Queue a copy (never blocks on the reader; past the queue's caps it is
 * dropped and a gap is queued instead); a gap alone. */
void bw_state_sub_push(bw_state_sub *sub, const char *channel, const void *msg, size_t len);
void bw_state_sub_gap(bw_state_sub *sub);
/* A channel name as the interface takes it? */
int bw_state_channel_ok(const char *channel);

/* The head of every backend's store: refs starts at 1. */
struct bw_state {
  const bw_state_ops *ops;
  _Atomic long refs;
  char *id; /* malloc'd by the backend's open (bw_state_id); freed with it */
};

#endif
