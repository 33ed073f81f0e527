/*
 * stateredis.c - the state store on Redis/Valkey (state.h): several
 * burrow instances share one exact quota, the used approval states and
 * the session records.
 *
 * Every operation that writes is one Lua script on the server (EVALSHA,
 * EVAL when the server does not have it yet): it reads, checks the cap
 * and writes in one step, so concurrent instances never lose or double
 * an update, and the server's clock (TIME) is the one clock they share.
 * Keys: a tenant's all carry the hash tag {t<hex of the tenant>} (hex: no
 * tenant can spell another's, and a cluster keeps a tenant on one slot):
 *   burrow:{tHEX}:e:KEY  an entry, a hash: k (c counter, m mark, r record),
 *                        n (a counter's value), v and d (a record's
 *                        version and bytes); it expires by its Redis TTL
 *   burrow:{tHEX}:i      the tenant's index, a sorted set: KEY by expiry
 *                        (ms): count is ZCOUNT of the live ones, O(log n)
 *   burrow:{tHEX}:m      a hash: #v the tenant's last record version, #b
 *                        the bytes charged, :KEY each entry's charge
 * The index and the hash live 366 days (the longest ttl) from the
 * tenant's last write, so a version is never given twice while a record
 * could hold it. Expired members leave the index a few per write, and
 * all of them when a share looks full (as statemem.c does). The caps are
 * per tenant (entries and bytes), failing closed with statemem.c's
 * words; the whole store is bounded by the server's maxmemory.
 *
 * Connections: a small pool (4 by default), each used by one thread at
 * a time; a thread takes an idle one (checked alive) or opens one, up to
 * the pool's size, else waits at most the command timeout. A pool, not
 * one connection under a mutex: an HTTP server's workers then wait on
 * the server, not on each other's round trips. A failed connection is
 * closed, never reused; the next call connects again, so the store
 * recovers by itself when the server is back.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "redis.h"
#include "state.h"

#define PRELUDE                                                                          \
  "if redis.replicate_commands then redis.replicate_commands() end\n"                    \
  "local idx, meta, e = KEYS[1], KEYS[2], KEYS[3]\n"                                     \
  "local t = redis.call('TIME')\n"                                                       \
  "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"              \
  "local TTL = 31622400000\n"                                                            \
  "local function sweep(most)\n"                                                         \
  "  while most > 0 do\n"                                                                \
  "    local n = math.min(most, 256)\n"                                                  \
  "    local gone = redis.call('ZRANGEBYSCORE', idx, '-inf', '(' .. now, 'LIMIT', 0, n)\n" \
  "    if #gone == 0 then return end\n"                                                  \
  "    local f = {}\n"                                                                   \
  "    for i = 1, #gone do f[i] = ':' .. gone[i] end\n"                                  \
  "    local c = redis.call('HMGET', meta, unpack(f))\n"                                 \
  "    local sum = 0\n"                                                                  \
  "    for i = 1, #c do sum = sum + (tonumber(c[i]) or 0) end\n"                         \
  "    redis.call('ZREM', idx, unpack(gone))\n"                                          \
  "    redis.call('HDEL', meta, unpack(f))\n"                                            \
  "    redis.call('HINCRBY', meta, '#b', 0 - sum)\n"                                        \
  "    if #gone < n then return end\n"                                                   \
  "    most = most - #gone\n"                                                            \
  "  end\n"                                                                              \
  "end\n"                                                                                \
  "local function room(ne, nb, maxe, maxb)\n"                                            \
  "  if nb > maxb then return 4 end\n"                                                   \
  "  local function over()\n"                                                            \
  "    if redis.call('ZCOUNT', idx, now, '+inf') + ne > maxe then return 1 end\n"        \
  "    if (tonumber(redis.call('HGET', meta, '#b')) or 0) + nb > maxb then return 2 end\n" \
  "    return 0\n"                                                                       \
  "  end\n"                                                                              \
  "  local r = over()\n"                                                                 \
  "  if r == 2 then sweep(1e12) r = over() end\n"                                        \
  "  return r\n"                                                                         \
  "end\n"                                                                                \
  "local function index(k, exp, cost)\n"                                                 \
  "  local old = tonumber(redis.call('HGET', meta, ':' .. k)) or 0\n"                    \
  "  redis.call('ZADD', idx, exp, k)\n"                                                  \
  "  redis.call('HSET', meta, ':' .. k, cost)\n"                                         \
  "  redis.call('HINCRBY', meta, '#b', cost - old)\n"                                    \
  "  redis.call('PEXPIRE', idx, TTL)\n"                                                  \
  "  redis.call('PEXPIRE', meta, TTL)\n"                                                 \
  "end\n"                                                                                \
  "local function unindex(k)\n"                                                          \
  "  local old = tonumber(redis.call('HGET', meta, ':' .. k)) or 0\n"                    \
  "  redis.call('ZREM', idx, k)\n"                                                       \
  "  redis.call('HDEL', meta, ':' .. k)\n"                                               \
  "  redis.call('HINCRBY', meta, '#b', 0 - old)\n"                                          \
  "end\n"

/* Replies: {0, ...} done; {1} the entry cap, {2} the byte cap, {3} another
 * kind, {4} an entry larger than a share. */

/* ARGV: key, delta, limit (-1: none), ttl ms, max entries, max bytes, cost */
static const char ADD[] = PRELUDE
    "local kind = redis.call('HGET', e, 'k')\n"
    "if kind and kind ~= 'c' then return {3} end\n"
    "local v = tonumber(redis.call('HGET', e, 'n')) or 0\n"
    "local d, limit = tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "sweep(8)\n"
    "if limit >= 0 and v + d > limit then return {0, 0, v} end\n"
    "if not kind then\n"
    "  local cost = tonumber(ARGV[7])\n"
    "  local r = room(1, cost, tonumber(ARGV[5]), tonumber(ARGV[6]))\n"
    "  if r ~= 0 then return {r} end\n"
    "  local n = d > 0 and ARGV[2] or '0'\n"
    "  local exp = now + tonumber(ARGV[4])\n"
    "  redis.call('HSET', e, 'k', 'c', 'n', n)\n"
    "  redis.call('PEXPIREAT', e, exp)\n"
    "  index(ARGV[1], exp, cost)\n"
    "  return {0, 1, n}\n"
    "end\n"
    "if v + d < 0 then redis.call('HSET', e, 'n', '0') return {0, 1, 0} end\n"
    "return {0, 1, redis.call('HINCRBY', e, 'n', ARGV[2])}\n";

/* ARGV: key, ttl ms, max entries, max bytes, cost */
static const char ONCE[] = PRELUDE
    "local kind = redis.call('HGET', e, 'k')\n"
    "if kind then if kind == 'm' then return {0, 0} end return {3} end\n"
    "sweep(8)\n"
    "local cost = tonumber(ARGV[5])\n"
    "local r = room(1, cost, tonumber(ARGV[3]), tonumber(ARGV[4]))\n"
    "if r ~= 0 then return {r} end\n"
    "local exp = now + tonumber(ARGV[2])\n"
    "redis.call('HSET', e, 'k', 'm')\n"
    "redis.call('PEXPIREAT', e, exp)\n"
    "index(ARGV[1], exp, cost)\n"
    "return {0, 1}\n";

/* ARGV: key, expected version, ttl ms, max entries, max bytes, cost, value */
static const char CAS[] = PRELUDE
    "local h = redis.call('HMGET', e, 'k', 'v')\n"
    "local kind, ver = h[1], h[2]\n"
    "if kind and kind ~= 'r' then return {3} end\n"
    "if not kind then ver = '0' end\n"
    "if ver ~= ARGV[2] then return {0, 0, ver} end\n"
    "sweep(8)\n"
    "local cost, r = tonumber(ARGV[6]), 0\n"
    "if kind then\n"
    "  local old = tonumber(redis.call('HGET', meta, ':' .. ARGV[1])) or 0\n"
    "  if cost > old then r = room(0, cost - old, tonumber(ARGV[4]), tonumber(ARGV[5])) end\n"
    "else\n"
    "  r = room(1, cost, tonumber(ARGV[4]), tonumber(ARGV[5]))\n"
    "end\n"
    "if r ~= 0 then return {r} end\n"
    "local nv = redis.call('HINCRBY', meta, '#v', 1)\n"
    "local exp = now + tonumber(ARGV[3])\n"
    "redis.call('HSET', e, 'k', 'r', 'v', nv, 'd', ARGV[7])\n"
    "redis.call('PEXPIREAT', e, exp)\n"
    "index(ARGV[1], exp, cost)\n"
    "return {0, 1, nv}\n";

/* ARGV: key, expected version (0: any) */
static const char DEL[] = PRELUDE
    "local h = redis.call('HMGET', e, 'k', 'v')\n"
    "if not h[1] then return {0, 0} end\n"
    "if ARGV[2] ~= '0' and h[2] ~= ARGV[2] then return {0, 0} end\n"
    "redis.call('DEL', e)\n"
    "unindex(ARGV[1])\n"
    "return {0, 1}\n";

static const char COUNT[] = PRELUDE
    "sweep(8)\n"
    "return {0, redis.call('ZCOUNT', idx, now, '+inf')}\n";

enum { S_ADD, S_ONCE, S_CAS, S_DEL, S_COUNT, NSCRIPTS };
static const char *const scripts[NSCRIPTS] = {ADD, ONCE, CAS, DEL, COUNT};

enum { DEFAULT_POOL = 4, POOL_MAX = 256 };

typedef struct rstore {
  bw_state base;
  bw_redis_target *t;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a connection came back, or room to open one */
  bw_redis_conn **idle;
  size_t nidle, open, max;
  size_t max_entries, max_bytes; /* per tenant */
  char sha[NSCRIPTS][41];
  /* publish/subscribe: the subscriptions, and the reader thread with its
   * own connection (started by the first subscription) */
  pthread_mutex_t smu;
  pthread_cond_t scv; /* the reader subscribed (ready), or gave up waiting */
  bw_state_sub *subs;
  pthread_t reader;
  int running, stop; /* stop: an eventfd that ends the reader */
  int ready;         /* subscribed on a live connection */
  int gap_due;       /* messages may have been missed since: a gap at the next subscribe */
} rstore;

/* ---- the pool */

static int take(rstore *r, bw_redis_conn **out) {
  struct timespec until; /* r->cv runs on the monotonic clock */
  bw_deadline_mono(&until, bw_redis_timeout(r->t));
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (r->nidle) {
      bw_redis_conn *c = r->idle[--r->nidle];
      if (bw_redis_alive(c)) {
        pthread_mutex_unlock(&r->mu);
        *out = c;
        return BW_OK;
      }
      bw_redis_close(c); /* the server closed it (restarted, or timed it out) */
      r->open--;
    }
    if (r->open < r->max) break;
    if (pthread_cond_timedwait(&r->cv, &r->mu, &until)) {
      if (r->nidle || r->open < r->max) continue;
      pthread_mutex_unlock(&r->mu);
      return bw_redis_fail(BW_STORE_UNAVAILABLE, "no connection came free within the timeout");
    }
  }
  r->open++;
  pthread_mutex_unlock(&r->mu);
  int rc = bw_redis_connect(r->t, out);
  if (rc) {
    pthread_mutex_lock(&r->mu);
    r->open--;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
  }
  return rc;
}

/* broken: the connection failed and is closed, never pooled again */
static void give(rstore *r, bw_redis_conn *c, int broken) {
  pthread_mutex_lock(&r->mu);
  if (broken) {
    bw_redis_close(c);
    r->open--;
  } else {
    r->idle[r->nidle++] = c;
  }
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

/* ---- replies */

static int starts(const redisReply *x, const char *p) { return !strncmp(x->str, p, strlen(p)); }

/* An error reply as a code: the server unable to serve is
 * STORE_UNAVAILABLE; a counter's overflow TOO_LARGE; else EIO. */
static int server_error(const redisReply *x) {
  int n = x->len > 200 ? 200 : (int)x->len;
  if (strstr(x->str, "overflow")) return bw_fail(BW_TOO_LARGE, "state store: the counter would overflow");
  static const char *const down[] = {"LOADING", "BUSY", "MASTERDOWN", "READONLY", "OOM", "NOAUTH",
                                     "WRONGPASS", "NOPERM", "CLUSTERDOWN", "MISCONF", "TRYAGAIN",
                                     "MOVED", "ASK", "NOREPLICAS"};
  for (size_t i = 0; i < sizeof down / sizeof *down; i++)
    if (starts(x, down[i])) return bw_redis_fail(BW_STORE_UNAVAILABLE, "the server refused: %.*s", n, x->str);
  return bw_redis_fail(BW_EIO, "the server said: %.*s", n, x->str);
}

static int64_t as_int(const redisReply *x) {
  if (x->type == REDIS_REPLY_INTEGER) return x->integer;
  if (x->type == REDIS_REPLY_STRING) return strtoll(x->str, NULL, 10);
  return 0;
}

static uint64_t as_version(const redisReply *x) {
  if (x->type == REDIS_REPLY_INTEGER) return x->integer > 0 ? (uint64_t)x->integer : 0;
  if (x->type == REDIS_REPLY_STRING) return strtoull(x->str, NULL, 10);
  return 0;
}

/* A script's status (its first element) as a code, with statemem.c's words. */
static int status(const redisReply *x) {
  if (x->type == REDIS_REPLY_ERROR) return server_error(x);
  if (x->type != REDIS_REPLY_ARRAY || !x->elements || x->element[0]->type != REDIS_REPLY_INTEGER)
    return bw_redis_fail(BW_EIO, "an unexpected reply");
  switch (x->element[0]->integer) {
  case 0: return BW_OK;
  case 1:
    return bw_fail(BW_TOO_LARGE, "state store: the tenant's share is full (max_entries_per_tenant) "
                                 "and none of its entries has expired");
  case 2:
    return bw_fail(BW_TOO_LARGE, "state store: the tenant's share is full (max_bytes_per_tenant) "
                                 "and none of its entries has expired");
  case 3: return bw_fail(BW_INVALID_ARGUMENT, "state store: the key holds another kind of entry");
  default:
    return bw_fail(BW_TOO_LARGE, "state store: the entry is larger than a tenant's share "
                                 "(max_bytes_per_tenant)");
  }
}

/* ---- keys: burrow:{tHEX}:i, :m, :e:KEY */

typedef struct keys {
  char idx[530], meta[530];
  char *entry; /* malloc'd */
  size_t li, lm, le;
} keys;

static int make_keys(const char *tenant, const char *key, keys *k) {
  static const char hex[] = "0123456789abcdef";
  char h[2 * BW_STATE_TENANT_MAX + 1];
  size_t tl = strlen(tenant);
  for (size_t i = 0; i < tl; i++) {
    h[2 * i] = hex[(unsigned char)tenant[i] >> 4];
    h[2 * i + 1] = hex[(unsigned char)tenant[i] & 15];
  }
  h[2 * tl] = 0;
  k->li = (size_t)snprintf(k->idx, sizeof k->idx, "burrow:{t%s}:i", h);
  k->lm = (size_t)snprintf(k->meta, sizeof k->meta, "burrow:{t%s}:m", h);
  k->entry = NULL;
  k->le = 0;
  if (!key) return BW_OK;
  size_t kl = strlen(key);
  if (!(k->entry = malloc(k->li + kl + 3))) return bw_fail(BW_ENOMEM, "state store: out of memory");
  k->le = (size_t)sprintf(k->entry, "burrow:{t%s}:e:", h);
  memcpy(k->entry + k->le, key, kl);
  k->le += kl;
  return BW_OK;
}

/* ---- running commands and scripts */

/* One command on a pooled connection. */
static int run(rstore *r, int argc, const char **argv, const size_t *lens, redisReply **out) {
  bw_redis_conn *c;
  int rc = take(r, &c);
  if (rc) return rc;
  rc = bw_redis_call(c, argc, argv, lens, out);
  give(r, c, rc != BW_OK);
  return rc;
}

/* Script s over KEYS idx, meta[, entry] and the arguments: EVALSHA,
 * then EVAL if the server has not seen it (a restart, SCRIPT FLUSH). */
static int eval(rstore *r, int s, const keys *k, int nargs, const char **args, const size_t *alens,
                redisReply **out) {
  const char *argv[16];
  size_t lens[16];
  int nk = k->entry ? 3 : 2, argc = 0;
  argv[argc] = "EVALSHA", lens[argc++] = 7;
  argv[argc] = r->sha[s], lens[argc++] = 40;
  argv[argc] = nk == 3 ? "3" : "2", lens[argc++] = 1;
  argv[argc] = k->idx, lens[argc++] = k->li;
  argv[argc] = k->meta, lens[argc++] = k->lm;
  if (nk == 3) argv[argc] = k->entry, lens[argc++] = k->le;
  for (int i = 0; i < nargs; i++) argv[argc] = args[i], lens[argc++] = alens[i];
  int rc = run(r, argc, argv, lens, out);
  if (rc || (*out)->type != REDIS_REPLY_ERROR || strncmp((*out)->str, "NOSCRIPT", 8)) return rc;
  bw_redis_reply_free(*out);
  argv[0] = "EVAL", lens[0] = 4;
  argv[1] = scripts[s], lens[1] = strlen(scripts[s]);
  return run(r, argc, argv, lens, out);
}

/* The numbers a script takes, as decimal text. */
typedef struct nums {
  char b[8][24];
  const char *p[8];
  size_t l[8];
  int n;
} nums;

static void put(nums *a, const char *s, size_t len) {
  a->p[a->n] = s;
  a->l[a->n++] = len;
}

static void put_int(nums *a, long long v) {
  int i = a->n;
  put(a, a->b[i], (size_t)snprintf(a->b[i], sizeof a->b[i], "%lld", v));
}

static void put_uint(nums *a, unsigned long long v) {
  int i = a->n;
  put(a, a->b[i], (size_t)snprintf(a->b[i], sizeof a->b[i], "%llu", v));
}

/* ttl in ms, rounded up (no libm) */
static long long ttl_ms(double ttl) {
  double ms = ttl * 1000;
  long long whole = (long long)ms;
  return whole + (whole < ms);
}

static size_t cost_of(const char *tenant, const char *key, size_t vlen) {
  return BW_STATE_ENTRY_COST + strlen(tenant) + strlen(key) + vlen;
}

/* ---- the operations */

static int r_add(bw_state *s, const char *tenant, const char *key, int64_t delta, int64_t limit,
                 double ttl, int *added, int64_t *value) {
  rstore *r = (rstore *)s;
  keys k;
  *added = 0;
  *value = 0;
  int rc = make_keys(tenant, key, &k);
  if (rc) return rc;
  nums a = {.n = 0};
  put(&a, key, strlen(key));
  put_int(&a, delta);
  put_int(&a, limit);
  put_int(&a, ttl_ms(ttl));
  put_uint(&a, r->max_entries);
  put_uint(&a, r->max_bytes);
  put_uint(&a, cost_of(tenant, key, 0));
  redisReply *x;
  rc = eval(r, S_ADD, &k, a.n, a.p, a.l, &x);
  free(k.entry);
  if (rc) return rc;
  if (!(rc = status(x)) && x->elements >= 3) {
    *added = (int)as_int(x->element[1]);
    *value = as_int(x->element[2]);
  }
  bw_redis_reply_free(x);
  return rc;
}

static int r_once(bw_state *s, const char *tenant, const char *key, double ttl, int *first) {
  rstore *r = (rstore *)s;
  keys k;
  *first = 0;
  int rc = make_keys(tenant, key, &k);
  if (rc) return rc;
  nums a = {.n = 0};
  put(&a, key, strlen(key));
  put_int(&a, ttl_ms(ttl));
  put_uint(&a, r->max_entries);
  put_uint(&a, r->max_bytes);
  put_uint(&a, cost_of(tenant, key, 0));
  redisReply *x;
  rc = eval(r, S_ONCE, &k, a.n, a.p, a.l, &x);
  free(k.entry);
  if (rc) return rc;
  if (!(rc = status(x)) && x->elements >= 2) *first = (int)as_int(x->element[1]);
  bw_redis_reply_free(x);
  return rc;
}

/* One HMGET: a read needs no script. */
static int r_get(bw_state *s, const char *tenant, const char *key, char **val, size_t *len,
                 uint64_t *version) {
  rstore *r = (rstore *)s;
  keys k;
  int rc = make_keys(tenant, key, &k);
  if (rc) return rc;
  const char *argv[] = {"HMGET", k.entry, "k", "v", "d"};
  size_t lens[] = {5, k.le, 1, 1, 1};
  redisReply *x;
  rc = run(r, 5, argv, lens, &x);
  free(k.entry);
  if (rc) return rc;
  if (x->type == REDIS_REPLY_ERROR) rc = server_error(x);
  else if (x->type != REDIS_REPLY_ARRAY || x->elements != 3) rc = bw_redis_fail(BW_EIO, "an unexpected reply");
  else if (x->element[0]->type != REDIS_REPLY_STRING) rc = BW_OK; /* absent */
  else if (x->element[0]->len != 1 || x->element[0]->str[0] != 'r')
    rc = bw_fail(BW_INVALID_ARGUMENT, "state store: the key holds another kind of entry");
  else {
    const redisReply *d = x->element[2];
    size_t n = d->type == REDIS_REPLY_STRING ? d->len : 0;
    char *copy = malloc(n ? n : 1);
    if (!copy) rc = bw_fail(BW_ENOMEM, "state store: out of memory");
    else {
      if (n) memcpy(copy, d->str, n);
      *val = copy;
      *len = n;
      *version = as_version(x->element[1]);
    }
  }
  bw_redis_reply_free(x);
  return rc;
}

static int r_cas(bw_state *s, const char *tenant, const char *key, uint64_t expected,
                 const void *val, size_t len, double ttl, int *done, uint64_t *version) {
  rstore *r = (rstore *)s;
  keys k;
  int rc = make_keys(tenant, key, &k);
  if (rc) return rc;
  nums a = {.n = 0};
  put(&a, key, strlen(key));
  put_uint(&a, expected);
  put_int(&a, ttl_ms(ttl));
  put_uint(&a, r->max_entries);
  put_uint(&a, r->max_bytes);
  put_uint(&a, cost_of(tenant, key, len));
  put(&a, len ? val : "", len);
  redisReply *x;
  rc = eval(r, S_CAS, &k, a.n, a.p, a.l, &x);
  free(k.entry);
  if (rc) return rc;
  if (!(rc = status(x)) && x->elements >= 3) {
    *done = (int)as_int(x->element[1]);
    *version = as_version(x->element[2]);
  }
  bw_redis_reply_free(x);
  return rc;
}

static int r_del(bw_state *s, const char *tenant, const char *key, uint64_t expected, int *deleted) {
  rstore *r = (rstore *)s;
  keys k;
  int rc = make_keys(tenant, key, &k);
  if (rc) return rc;
  nums a = {.n = 0};
  put(&a, key, strlen(key));
  put_uint(&a, expected);
  redisReply *x;
  rc = eval(r, S_DEL, &k, a.n, a.p, a.l, &x);
  free(k.entry);
  if (rc) return rc;
  if (!(rc = status(x)) && x->elements >= 2) *deleted = (int)as_int(x->element[1]);
  bw_redis_reply_free(x);
  return rc;
}

/* ZCOUNT of the tenant's index: O(log n), whatever the tenant holds. */
static int r_count(bw_state *s, const char *tenant, size_t *n) {
  rstore *r = (rstore *)s;
  keys k;
  int rc = make_keys(tenant, NULL, &k);
  if (rc) return rc;
  redisReply *x;
  rc = eval(r, S_COUNT, &k, 0, NULL, NULL, &x);
  if (rc) return rc;
  if (!(rc = status(x)) && x->elements >= 2) *n = (size_t)as_int(x->element[1]);
  bw_redis_reply_free(x);
  return rc;
}

/* Every tenant's index by SCAN: O(all keys of the database), for
 * diagnostics, never a request's path. bytes: those charged, expired
 * entries not swept yet included. */
static int r_stats(bw_state *s, bw_state_totals *st) {
  rstore *r = (rstore *)s;
  bw_redis_conn *c;
  int rc = take(r, &c);
  if (rc) return rc;
  redisReply *x = NULL;
  const char *targv[] = {"TIME"};
  size_t tlens[] = {4};
  rc = bw_redis_call(c, 1, targv, tlens, &x);
  char now[32] = "0", cursor[32] = "0";
  if (!rc && x->type == REDIS_REPLY_ARRAY && x->elements == 2)
    snprintf(now, sizeof now, "%lld", (long long)(as_int(x->element[0]) * 1000 + as_int(x->element[1]) / 1000));
  else if (!rc)
    rc = x->type == REDIS_REPLY_ERROR ? server_error(x) : bw_redis_fail(BW_EIO, "an unexpected reply");
  bw_redis_reply_free(x);
  while (!rc) {
    const char *argv[] = {"SCAN", cursor, "MATCH", "burrow:{t*}:i", "COUNT", "1000", "TYPE", "zset"};
    size_t lens[] = {4, strlen(cursor), 5, 13, 5, 4, 4, 4};
    if ((rc = bw_redis_call(c, 8, argv, lens, &x))) break;
    if (x->type != REDIS_REPLY_ARRAY || x->elements != 2 || x->element[0]->type != REDIS_REPLY_STRING) {
      rc = x->type == REDIS_REPLY_ERROR ? server_error(x) : bw_redis_fail(BW_EIO, "an unexpected reply");
      bw_redis_reply_free(x);
      break;
    }
    snprintf(cursor, sizeof cursor, "%.*s", (int)x->element[0]->len, x->element[0]->str);
    const redisReply *ks = x->element[1];
    for (size_t i = 0; !rc && i < ks->elements; i++) {
      const redisReply *key = ks->element[i];
      if (key->type != REDIS_REPLY_STRING || key->len < 2) continue;
      const char *zargv[] = {"ZCOUNT", key->str, now, "+inf"};
      size_t zlens[] = {6, key->len, strlen(now), 4};
      redisReply *y;
      if ((rc = bw_redis_call(c, 4, zargv, zlens, &y))) break;
      st->entries += (size_t)as_int(y);
      bw_redis_reply_free(y);
      char *meta = malloc(key->len);
      if (!meta) {
        rc = bw_fail(BW_ENOMEM, "state store: out of memory");
        break;
      }
      memcpy(meta, key->str, key->len);
      meta[key->len - 1] = 'm';
      const char *hargv[] = {"HGET", meta, "#b"};
      size_t hlens[] = {4, key->len, 2};
      rc = bw_redis_call(c, 3, hargv, hlens, &y);
      free(meta);
      if (rc) break;
      int64_t b = as_int(y);
      st->bytes += b > 0 ? (size_t)b : 0;
      bw_redis_reply_free(y);
    }
    bw_redis_reply_free(x);
    if (!strcmp(cursor, "0")) break;
  }
  give(r, c, rc == BW_STORE_UNAVAILABLE);
  return rc;
}

/* ---- publish/subscribe: burrow:{tHEX}:p:CHANNEL, a tenant's channels
 * under its hex (no tenant spells another's). PUBLISH goes through the
 * pool; the reader thread holds a connection of its own with one
 * PSUBSCRIBE to every tenant's channels (any instance may serve any
 * tenant's listens) and hands each message to the subscriptions that want
 * its tenant and channel: exactly, here, so a tenant never hears
 * another's. It pings when quiet, so a server gone silent is noticed
 * within the timeout; then it connects again, subscribes again, and
 * tells every subscription it may have missed messages (a gap). */

#define PATTERN "burrow:{t*}:p:*"

static int r_publish(bw_state *s, const char *tenant, const char *channel, const void *msg,
                     size_t len) {
  rstore *r = (rstore *)s;
  keys k;
  int rc = make_keys(tenant, NULL, &k);
  if (rc) return rc;
  char name[600];
  size_t nl = (size_t)snprintf(name, sizeof name, "%.*s:p:%s", (int)(k.li - 2), k.idx, channel);
  const char *argv[] = {"PUBLISH", name, msg};
  size_t lens[] = {7, nl, len};
  redisReply *x;
  if ((rc = run(r, 3, argv, lens, &x))) return rc;
  if (x->type == REDIS_REPLY_ERROR) rc = server_error(x);
  bw_redis_reply_free(x);
  return rc;
}

static int unhex(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* burrow:{tHEX}:p:CHANNEL into tenant and channel; 0 if it is not one. */
static int split_channel(const redisReply *c, char *tenant, char *channel) {
  if (c->type != REDIS_REPLY_STRING || c->len < 12 || memcmp(c->str, "burrow:{t", 9)) return 0;
  const char *p = c->str + 9, *end = c->str + c->len;
  const char *close = memchr(p, '}', (size_t)(end - p));
  if (!close || (close - p) % 2 || (close - p) / 2 > BW_STATE_TENANT_MAX) return 0;
  size_t tl = 0;
  for (const char *h = p; h < close; h += 2) {
    int a = unhex(h[0]), b = unhex(h[1]);
    if (a < 0 || b < 0 || (a == 0 && b == 0)) return 0;
    tenant[tl++] = (char)(a << 4 | b);
  }
  tenant[tl] = 0;
  if (end - close < 5 || memcmp(close, "}:p:", 4)) return 0;
  size_t cl = (size_t)(end - close - 4);
  if (cl > BW_STATE_CHANNEL_MAX) return 0;
  memcpy(channel, close + 4, cl);
  channel[cl] = 0;
  return bw_state_channel_ok(channel);
}

static int is(const redisReply *x, const char *word) {
  return x->type == REDIS_REPLY_STRING && x->len == strlen(word) && !strncasecmp(x->str, word, x->len);
}

/* A push of the server: a message handed on; the subscription's
 * confirmation makes the reader ready. */
static int on_push(rstore *r, const redisReply *x) {
  if (x->type == REDIS_REPLY_ERROR) return -1; /* PSUBSCRIBE refused (an ACL without the channels): try again later */
  if (x->type != REDIS_REPLY_ARRAY || x->elements < 3) return 0;
  if (is(x->element[0], "psubscribe")) {
    pthread_mutex_lock(&r->smu);
    r->ready = 1;
    if (r->gap_due)
      for (bw_state_sub *sub = r->subs; sub; sub = sub->next) bw_state_sub_gap(sub);
    r->gap_due = 0;
    pthread_cond_broadcast(&r->scv);
    pthread_mutex_unlock(&r->smu);
    return 0;
  }
  if (!is(x->element[0], "pmessage") || x->elements != 4) return 0;
  const redisReply *m = x->element[3];
  char tenant[BW_STATE_TENANT_MAX + 1], channel[BW_STATE_CHANNEL_MAX + 1];
  if (m->type != REDIS_REPLY_STRING || m->len > BW_STATE_MESSAGE_MAX) return 0; /* not ours to pass on */
  if (!split_channel(x->element[2], tenant, channel)) return 0;
  pthread_mutex_lock(&r->smu);
  for (bw_state_sub *sub = r->subs; sub; sub = sub->next)
    if (bw_state_sub_wants(sub, tenant, channel)) bw_state_sub_push(sub, channel, m->str, m->len);
  pthread_mutex_unlock(&r->smu);
  return 0;
}

static int stopping(rstore *r, int wait_ms) {
  struct pollfd p = {r->stop, POLLIN, 0};
  return poll(&p, 1, wait_ms) > 0;
}

/* One connection's life: subscribe, hand on what comes, ping when quiet.
 * Returns when it fails or the store closes. */
static void subscribed(rstore *r, bw_redis_conn *c) {
  const char *argv[] = {"PSUBSCRIBE", PATTERN};
  size_t lens[] = {10, strlen(PATTERN)};
  if (bw_redis_send(c, 2, argv, lens)) return;
  int64_t timeout = (int64_t)(bw_redis_timeout(r->t) * 1000), heard = bw_now_ms(), pinged = 0;
  for (;;) {
    redisReply *x;
    if (bw_redis_next(c, 250, r->stop, &x)) return;
    if (stopping(r, 0)) {
      bw_redis_reply_free(x);
      return;
    }
    int64_t now = bw_now_ms();
    if (x) {
      heard = now;
      pinged = 0;
      int bad = on_push(r, x);
      bw_redis_reply_free(x);
      if (bad) return;
      continue;
    }
    if (pinged && now - pinged > timeout) return; /* silent past the timeout: gone */
    if (!pinged && now - heard > 1000) {
      const char *ping[] = {"PING"};
      size_t pl[] = {4};
      if (bw_redis_send(c, 1, ping, pl)) return;
      pinged = now;
    }
  }
}

static void *reader(void *arg) {
  rstore *r = arg;
  int wait = 100;
  while (!stopping(r, 0)) {
    bw_redis_conn *c;
    if (bw_redis_connect(r->t, &c) == BW_OK) {
      wait = 100;
      subscribed(r, c);
      bw_redis_close(c);
    }
    pthread_mutex_lock(&r->smu);
    if (r->ready) r->gap_due = 1; /* it was subscribed: what came meanwhile is lost */
    r->ready = 0;
    pthread_mutex_unlock(&r->smu);
    if (stopping(r, wait)) break;
    wait = wait < 1000 ? wait * 2 : 1000; /* back off to a try a second */
  }
  return NULL;
}

static int r_subscribe(bw_state *s, bw_state_sub *sub) {
  rstore *r = (rstore *)s;
  pthread_mutex_lock(&r->smu);
  if (!r->running) {
    r->stop = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    sigset_t all, old; /* no signal of the process's on the reader */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = r->stop < 0 ? -1 : pthread_create(&r->reader, NULL, reader, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
      if (r->stop >= 0) close(r->stop);
      pthread_mutex_unlock(&r->smu);
      return bw_fail(BW_ENOMEM, "state store (redis): cannot start the subscriber");
    }
    r->running = 1;
  }
  sub->next = r->subs;
  r->subs = sub;
  /* wait for the subscription to be in place, at most the timeout */
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  double t = bw_redis_timeout(r->t);
  until.tv_sec += (time_t)t;
  until.tv_nsec += (long)((t - (time_t)t) * 1e9);
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  while (!r->ready)
    if (pthread_cond_timedwait(&r->scv, &r->smu, &until)) {
      r->gap_due = 1; /* the server is away: a gap once it is back */
      break;
    }
  pthread_mutex_unlock(&r->smu);
  return BW_OK;
}

static void r_unsubscribe(bw_state *s, bw_state_sub *sub) {
  rstore *r = (rstore *)s;
  pthread_mutex_lock(&r->smu);
  for (bw_state_sub **p = &r->subs; *p; p = &(*p)->next)
    if (*p == sub) {
      *p = sub->next;
      break;
    }
  pthread_mutex_unlock(&r->smu);
}

static void r_free(bw_state *s) {
  rstore *r = (rstore *)s;
  if (r->running) {
    uint64_t one = 1;
    if (write(r->stop, &one, sizeof one) < 0) { /* cannot fail: a fresh counter */ }
    pthread_join(r->reader, NULL);
    close(r->stop);
  }
  pthread_cond_destroy(&r->scv);
  pthread_mutex_destroy(&r->smu);
  for (size_t i = 0; i < r->nidle; i++) bw_redis_close(r->idle[i]);
  free(r->idle);
  bw_redis_target_free(r->t);
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static const bw_state_ops redis_ops = {
    .kind = "redis",
    .add = r_add,
    .once = r_once,
    .get = r_get,
    .cas = r_cas,
    .del = r_del,
    .count = r_count,
    .stats = r_stats,
    .publish = r_publish,
    .subscribe = r_subscribe,
    .unsubscribe = r_unsubscribe,
    .free = r_free,
};

/* EVALSHA's names: the scripts' SHA-1 in hex (libcrypto). SHA1_Init/
 * Update/Final, not EVP (nor SHA1(), built on it in OpenSSL 3): EVP pulls
 * the provider machinery into the statically linked command, relocated at
 * every start (hash.c says more). */
static void sha1_hex(const char *s, char out[41]) {
  unsigned char md[SHA_DIGEST_LENGTH];
  SHA_CTX c;
  bw_hash_ready();
  SHA1_Init(&c);
  SHA1_Update(&c, s, strlen(s));
  SHA1_Final(md, &c);
  for (unsigned i = 0; i < SHA_DIGEST_LENGTH; i++) sprintf(out + 2 * i, "%02x", md[i]);
  out[40] = 0;
}

int bw_state_open_redis(const char *url, const bw_state_redis_opts *opts, bw_state **out) {
  static const bw_state_redis_opts none;
  const bw_state_redis_opts *o = opts ? opts : &none;
  if (!url) return bw_fail(BW_INVALID_ARGUMENT, "state store (redis): no URL");
  rstore *r = calloc(1, sizeof *r);
  if (!r) return bw_fail(BW_ENOMEM, "state store: out of memory");
  r->max = o->pool ? (o->pool > POOL_MAX ? POOL_MAX : o->pool) : DEFAULT_POOL;
  r->max_entries = o->max_entries_per_tenant ? o->max_entries_per_tenant : BW_STATE_DEFAULT_TENANT_ENTRIES;
  r->max_bytes = o->max_bytes_per_tenant ? o->max_bytes_per_tenant : BW_STATE_DEFAULT_TENANT_BYTES;
  for (int i = 0; i < NSCRIPTS; i++) sha1_hex(scripts[i], r->sha[i]);
  int rc = BW_OK;
  if (!(r->idle = calloc(r->max, sizeof *r->idle)) || pthread_mutex_init(&r->mu, NULL) ||
      bw_cond_init_mono(&r->cv)) {
    free(r->idle);
    free(r);
    return bw_fail(BW_ENOMEM, "state store: out of memory");
  }
  bw_cond_init_mono(&r->scv); /* the subscriber's: the monotonic clock, as cv */
  pthread_mutex_init(&r->smu, NULL);
  r->base.ops = &redis_ops;
  r->base.refs = 1;
  rc = bw_redis_target_new(url, o, &r->t);
  /* a store that may open while its server is away checks what it can
   * alone: the password file is the operator's, not the server's */
  if (!rc && o->down) rc = bw_redis_password_check(r->t);
  /* one connection and a PING now: a wrong URL, password or certificate
   * (or a server that wants a password) fails here */
  int unreached = 0;
  if (!rc) {
    const char *argv[] = {"PING"};
    size_t lens[] = {4};
    redisReply *x = NULL;
    rc = run(r, 1, argv, lens, &x);
    unreached = rc && bw_redis_unreached();
    if (!rc && x->type == REDIS_REPLY_ERROR) {
      rc = server_error(x);
      unreached = starts(x, "LOADING"); /* up, not serving yet */
    }
    bw_redis_reply_free(x);
  }
  if (o->down) *o->down = 0;
  if (rc == BW_STORE_UNAVAILABLE && unreached && o->down) {
    *o->down = 1; /* the detail stays: why it was not reached */
    rc = BW_OK;
  }
  if (rc) {
    bw_err_saved sv;
    bw_err_save(&sv);
    r_free(&r->base);
    return bw_err_restore(rc, &sv);
  }
  if (asprintf(&r->base.id, "redis:%s", url) < 0) r->base.id = NULL;
  *out = &r->base;
  return BW_OK;
}
