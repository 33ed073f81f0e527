/*
 * statemem.c - the embedded state store (state.h): in this process, one
 * mutex, the monotonic clock. Entries sit in one hash table (chained,
 * doubling up to the entry cap) and in two min-heaps by expiry, the
 * store's and their tenant's. Expired entries go lazily, never by a scan:
 * the one a call finds, a few off the store's heap at every call (so they
 * cannot pile up faster than calls make them), and as many off a full
 * tenant's heap (or the store's) as the new entry needs. A live entry is
 * never dropped to make room: a full share fails closed, and one tenant
 * never takes another's room. A tenant exists while it has entries.
 * And the process's own embedded store (bw_state_default), one of these.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "state.h"

enum { KIND_COUNTER = 1, KIND_MARK, KIND_RECORD };
enum { SWEEP_STEP = 4, BUCKETS_MIN = 64, HEAP_MIN = 8 };
enum { GLOBAL = 0, TENANT = 1 }; /* which heap */

typedef struct entry {
  struct entry *next;  /* its bucket's chain */
  struct share *t;
  uint64_t hash;
  int64_t expires;     /* ms, monotonic */
  size_t pos[2];       /* its places in the store's and the tenant's heap */
  uint64_t version;    /* a record's */
  int64_t value;       /* a counter's */
  char *val;           /* a record's bytes */
  size_t vlen, cost;
  int kind;
  char name[];         /* tenant, NUL, key, NUL */
} entry;

_Static_assert(sizeof(entry) <= BW_STATE_ENTRY_COST, "an entry costs more than it is charged");

typedef struct heap {
  entry **a;
  size_t n, cap;
} heap;

typedef struct share {
  struct share *next;
  uint64_t hash;
  size_t entries, bytes;
  heap h;
  char name[];
} share;

typedef struct mem {
  bw_state base;
  pthread_mutex_t mu;
  bw_state_caps caps;
  uint64_t seed, version;
  entry **buckets;
  size_t nbuckets, entries, bytes;
  share **tbuckets;
  size_t ntbuckets, tenants, max_buckets;
  heap h;
  pthread_mutex_t pmu; /* publish/subscribe: the subscriptions, apart from the entries */
  bw_state_sub *subs;
} mem;

/* ---- hashing: FNV-1a from a random seed, then a 64-bit finaliser */

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

static uint64_t tenant_hash(const mem *m, const char *tenant) {
  return mix(fnv(m->seed, tenant, strlen(tenant)));
}

/* tenant's NUL is hashed too: ("a", "bc") and ("ab", "c") differ */
static uint64_t key_hash(const mem *m, const char *tenant, const char *key) {
  return mix(fnv(fnv(m->seed, tenant, strlen(tenant) + 1), key, strlen(key)));
}

/* ---- heaps by expiry; each entry knows its place in both */

static void heap_put(heap *h, int w, size_t i, entry *e) {
  h->a[i] = e;
  e->pos[w] = i;
}

static void heap_up(heap *h, int w, size_t i) {
  entry *e = h->a[i];
  while (i) {
    size_t p = (i - 1) / 2;
    if (h->a[p]->expires <= e->expires) break;
    heap_put(h, w, i, h->a[p]);
    i = p;
  }
  heap_put(h, w, i, e);
}

static void heap_down(heap *h, int w, size_t i) {
  entry *e = h->a[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->a[c + 1]->expires < h->a[c]->expires) c++;
    if (h->a[c]->expires >= e->expires) break;
    heap_put(h, w, i, h->a[c]);
    i = c;
  }
  heap_put(h, w, i, e);
}

/* Room for one more, so the push after it cannot fail. */
static int heap_reserve(heap *h) {
  if (h->n < h->cap) return BW_OK;
  size_t cap = h->cap ? h->cap * 2 : HEAP_MIN;
  entry **a = realloc(h->a, cap * sizeof *a);
  if (!a) return BW_ENOMEM;
  h->a = a;
  h->cap = cap;
  return BW_OK;
}

static void heap_push(heap *h, int w, entry *e) {
  h->a[h->n] = e;
  heap_up(h, w, h->n++);
}

static void heap_fix(heap *h, int w, entry *e) {
  heap_up(h, w, e->pos[w]);
  heap_down(h, w, e->pos[w]);
}

static void heap_remove(heap *h, int w, entry *e) {
  size_t i = e->pos[w];
  if (i != --h->n) {
    entry *last = h->a[h->n];
    heap_put(h, w, i, last);
    heap_fix(h, w, last);
  }
  if (h->cap > HEAP_MIN && h->n < h->cap / 4) { /* flat after a burst */
    entry **a = realloc(h->a, h->cap / 2 * sizeof *a);
    if (a) {
      h->a = a;
      h->cap /= 2;
    }
  }
}

/* ---- tenants */

static share *tenant_find(mem *m, const char *name, uint64_t h) {
  for (share *t = m->tbuckets[h & (m->ntbuckets - 1)]; t; t = t->next)
    if (t->hash == h && !strcmp(t->name, name)) return t;
  return NULL;
}

/* Double a chained table while it holds more items than buckets, up to
 * max_buckets; a failure keeps the old one, still correct. (One for each
 * item type: the chains are typed.) */
#define GROW(NAME, TYPE)                                                   \
  static void NAME(TYPE ***table, size_t *n, size_t count, size_t most) { \
    if (count <= *n || *n >= most) return;                                 \
    size_t nn = *n * 2;                                                    \
    TYPE **nb = calloc(nn, sizeof *nb);                                    \
    if (!nb) return;                                                       \
    for (size_t i = 0; i < *n; i++)                                        \
      for (TYPE *x = (*table)[i], *next; x; x = next) {                    \
        next = x->next;                                                    \
        x->next = nb[x->hash & (nn - 1)];                                  \
        nb[x->hash & (nn - 1)] = x;                                        \
      }                                                                    \
    free(*table);                                                          \
    *table = nb;                                                           \
    *n = nn;                                                               \
  }
GROW(grow_tenants, share)
GROW(grow_entries, entry)

static share *tenant_new(mem *m, const char *name, uint64_t h) {
  size_t len = strlen(name);
  share *t = calloc(1, sizeof *t + len + 1);
  if (!t) return NULL;
  memcpy(t->name, name, len);
  t->hash = h;
  share **b = &m->tbuckets[h & (m->ntbuckets - 1)];
  t->next = *b;
  *b = t;
  m->tenants++;
  grow_tenants(&m->tbuckets, &m->ntbuckets, m->tenants, m->max_buckets);
  return t;
}

static void tenant_free(mem *m, share *t) {
  for (share **p = &m->tbuckets[t->hash & (m->ntbuckets - 1)]; *p; p = &(*p)->next)
    if (*p == t) {
      *p = t->next;
      break;
    }
  m->tenants--;
  free(t->h.a);
  free(t);
}

/* ---- entries (with mu held) */

static const char *entry_key(const entry *e) { return e->name + strlen(e->name) + 1; }

/* Drop e; its tenant goes with its last entry unless it is held (the
 * tenant the call is working for, freed at its end if empty). */
static void drop(mem *m, entry *e, const share *held) {
  for (entry **p = &m->buckets[e->hash & (m->nbuckets - 1)]; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      break;
    }
  share *t = e->t;
  heap_remove(&m->h, GLOBAL, e);
  heap_remove(&t->h, TENANT, e);
  t->entries--;
  t->bytes -= e->cost;
  m->entries--;
  m->bytes -= e->cost;
  free(e->val);
  free(e);
  if (!t->entries && t != held) tenant_free(m, t);
}

static void release(mem *m, share *t) {
  if (t && !t->entries) tenant_free(m, t);
}

/* A few expired entries off the store's heap. */
static void sweep(mem *m, int64_t now, int most) {
  while (most-- > 0 && m->h.n && m->h.a[0]->expires <= now) drop(m, m->h.a[0], NULL);
}

/* The live entry of (tenant, key), or NULL; an expired one found is dropped
 * (the caller holds no tenant yet: insert finds it again). */
static entry *find(mem *m, const char *tenant, const char *key, uint64_t h, int64_t now) {
  for (entry *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->next) {
    if (e->hash != h || strcmp(e->name, tenant) || strcmp(entry_key(e), key)) continue;
    if (e->expires > now) return e;
    drop(m, e, NULL);
    return NULL;
  }
  return NULL;
}

/* Room for entries more entries and bytes more bytes of tenant t (NULL:
 * none yet), taking only expired entries; else TOO_LARGE naming the cap. */
static int make_room(mem *m, share *t, size_t entries, size_t bytes, int64_t now) {
  const bw_state_caps *c = &m->caps;
  if (bytes > c->max_bytes_per_tenant || bytes > c->max_bytes)
    return bw_fail(BW_TOO_LARGE, "state store: the entry is larger than a tenant's share "
                                 "(max_bytes_per_tenant) or the store (max_bytes)");
  while (t && (t->entries + entries > c->max_entries_per_tenant ||
               t->bytes + bytes > c->max_bytes_per_tenant)) {
    if (!t->h.n || t->h.a[0]->expires > now)
      return bw_fail(BW_TOO_LARGE,
                     t->entries + entries > c->max_entries_per_tenant
                         ? "state store: the tenant's share is full (max_entries_per_tenant) "
                           "and none of its entries has expired"
                         : "state store: the tenant's share is full (max_bytes_per_tenant) "
                           "and none of its entries has expired");
    drop(m, t->h.a[0], t);
  }
  while (m->entries + entries > c->max_entries || m->bytes + bytes > c->max_bytes) {
    if (!m->h.n || m->h.a[0]->expires > now)
      return bw_fail(BW_TOO_LARGE,
                     m->entries + entries > c->max_entries
                         ? "state store: the store is full (max_entries) and no entry has expired"
                         : "state store: the store is full (max_bytes) and no entry has expired");
    drop(m, m->h.a[0], t);
  }
  return BW_OK;
}

/* ttl in ms, rounded up (no libm: the tests link none) */
static int64_t ttl_ms(double ttl) {
  double ms = ttl * 1000;
  int64_t whole = (int64_t)ms;
  return whole + (whole < ms);
}

/* A new entry of kind for (tenant, key) living ttl from now, val copied. */
static int insert(mem *m, const char *tenant_name, const char *key, uint64_t h, int kind,
                  const void *val, size_t vlen, double ttl, int64_t now, entry **out) {
  size_t tl = strlen(tenant_name), kl = strlen(key);
  size_t cost = BW_STATE_ENTRY_COST + tl + kl + vlen;
  uint64_t th = tenant_hash(m, tenant_name);
  share *t = tenant_find(m, tenant_name, th);
  int rc = make_room(m, t, 1, cost, now);
  if (rc) {
    release(m, t);
    return rc;
  }
  if (!t && !(t = tenant_new(m, tenant_name, th)))
    return bw_fail(BW_ENOMEM, "state store: out of memory");
  entry *e = calloc(1, sizeof *e + tl + kl + 2);
  char *copy = vlen ? malloc(vlen) : NULL;
  if (!e || (vlen && !copy) || heap_reserve(&m->h) || heap_reserve(&t->h)) {
    free(e);
    free(copy);
    release(m, t);
    return bw_fail(BW_ENOMEM, "state store: out of memory");
  }
  memcpy(e->name, tenant_name, tl);
  memcpy(e->name + tl + 1, key, kl);
  if (vlen) memcpy(copy, val, vlen);
  e->val = copy;
  e->vlen = vlen;
  e->t = t;
  e->hash = h;
  e->kind = kind;
  e->cost = cost;
  e->expires = now + ttl_ms(ttl);
  entry **b = &m->buckets[h & (m->nbuckets - 1)];
  e->next = *b;
  *b = e;
  heap_push(&m->h, GLOBAL, e);
  heap_push(&t->h, TENANT, e);
  t->entries++;
  t->bytes += cost;
  m->entries++;
  m->bytes += cost;
  grow_entries(&m->buckets, &m->nbuckets, m->entries, m->max_buckets);
  *out = e;
  return BW_OK;
}

static int wrong_kind(void) {
  return bw_fail(BW_INVALID_ARGUMENT, "state store: the key holds another kind of entry");
}

/* Lock, the clock, a sweep step: every call starts so. */
static int64_t enter(mem *m) {
  pthread_mutex_lock(&m->mu);
  int64_t now = bw_now_ms();
  sweep(m, now, SWEEP_STEP);
  return now;
}

static int leave(mem *m, int rc) {
  pthread_mutex_unlock(&m->mu);
  return rc;
}

/* ---- the operations */

static int mem_add(bw_state *s, const char *tenant, const char *key, int64_t delta,
                   int64_t limit, double ttl, int *added, int64_t *value) {
  mem *m = (mem *)s;
  int64_t now = enter(m);
  uint64_t h = key_hash(m, tenant, key);
  entry *e = find(m, tenant, key, h, now);
  *added = 0;
  *value = e ? e->value : 0;
  if (e && e->kind != KIND_COUNTER) return leave(m, wrong_kind());
  int64_t sum;
  int over = __builtin_add_overflow(*value, delta, &sum);
  if (limit >= 0 && (over ? delta > 0 : sum > limit)) return leave(m, BW_OK);
  if (over) return leave(m, bw_fail(BW_TOO_LARGE, "state store: the counter would overflow"));
  if (sum < 0) sum = 0;
  if (!e) {
    int rc = insert(m, tenant, key, h, KIND_COUNTER, NULL, 0, ttl, now, &e);
    if (rc) return leave(m, rc);
  }
  e->value = *value = sum;
  *added = 1;
  return leave(m, BW_OK);
}

static int mem_once(bw_state *s, const char *tenant, const char *key, double ttl,
                    int *first) {
  mem *m = (mem *)s;
  int64_t now = enter(m);
  uint64_t h = key_hash(m, tenant, key);
  entry *e = find(m, tenant, key, h, now);
  *first = 0;
  if (e) return leave(m, e->kind == KIND_MARK ? BW_OK : wrong_kind());
  int rc = insert(m, tenant, key, h, KIND_MARK, NULL, 0, ttl, now, &e);
  if (!rc) *first = 1;
  return leave(m, rc);
}

static int mem_get(bw_state *s, const char *tenant, const char *key, char **val,
                   size_t *len, uint64_t *version) {
  mem *m = (mem *)s;
  int64_t now = enter(m);
  entry *e = find(m, tenant, key, key_hash(m, tenant, key), now);
  if (!e) return leave(m, BW_OK);
  if (e->kind != KIND_RECORD) return leave(m, wrong_kind());
  char *copy = malloc(e->vlen ? e->vlen : 1);
  if (!copy) return leave(m, bw_fail(BW_ENOMEM, "state store: out of memory"));
  if (e->vlen) memcpy(copy, e->val, e->vlen);
  *val = copy;
  *len = e->vlen;
  *version = e->version;
  return leave(m, BW_OK);
}

static int mem_cas(bw_state *s, const char *tenant, const char *key, uint64_t expected,
                   const void *val, size_t len, double ttl, int *done, uint64_t *version) {
  mem *m = (mem *)s;
  int64_t now = enter(m);
  uint64_t h = key_hash(m, tenant, key);
  entry *e = find(m, tenant, key, h, now);
  if (e && e->kind != KIND_RECORD) return leave(m, wrong_kind());
  *version = e ? e->version : 0;
  if (*version != expected) return leave(m, BW_OK); /* someone else's write won */
  if (!e) {
    int rc = insert(m, tenant, key, h, KIND_RECORD, val, len, ttl, now, &e);
    if (rc) return leave(m, rc);
  } else {
    if (len > e->vlen) {
      int rc = make_room(m, e->t, 0, len - e->vlen, now);
      if (rc) return leave(m, rc);
    }
    char *copy = len ? malloc(len) : NULL;
    if (len && !copy) return leave(m, bw_fail(BW_ENOMEM, "state store: out of memory"));
    if (len) memcpy(copy, val, len);
    size_t cost = e->cost - e->vlen + len;
    e->t->bytes = e->t->bytes - e->cost + cost;
    m->bytes = m->bytes - e->cost + cost;
    e->cost = cost;
    free(e->val);
    e->val = copy;
    e->vlen = len;
    e->expires = now + ttl_ms(ttl);
    heap_fix(&m->h, GLOBAL, e);
    heap_fix(&e->t->h, TENANT, e);
  }
  e->version = *version = ++m->version;
  *done = 1;
  return leave(m, BW_OK);
}

static int mem_del(bw_state *s, const char *tenant, const char *key, uint64_t expected,
                   int *deleted) {
  mem *m = (mem *)s;
  int64_t now = enter(m);
  entry *e = find(m, tenant, key, key_hash(m, tenant, key), now);
  if (e && (!expected || e->version == expected)) {
    drop(m, e, NULL);
    *deleted = 1;
  }
  return leave(m, BW_OK);
}

static int mem_count(bw_state *s, const char *tenant, size_t *n) {
  mem *m = (mem *)s;
  int64_t now = enter(m);
  share *t = tenant_find(m, tenant, tenant_hash(m, tenant));
  if (!t) return leave(m, BW_OK);
  while (t->h.n && t->h.a[0]->expires <= now) drop(m, t->h.a[0], t);
  *n = t->entries;
  release(m, t);
  return leave(m, BW_OK);
}

static int mem_stats(bw_state *s, bw_state_totals *st) {
  mem *m = (mem *)s;
  int64_t now = enter(m);
  while (m->h.n && m->h.a[0]->expires <= now) drop(m, m->h.a[0], NULL);
  st->entries = m->entries;
  st->bytes = m->bytes;
  return leave(m, BW_OK);
}

/* ---- publish/subscribe: in this process, from the publisher's thread
 * into each subscription's bounded queue (statesub.c: a full one drops
 * and says so, never waits) */

static int mem_publish(bw_state *s, const char *tenant, const char *channel, const void *msg,
                       size_t len) {
  mem *m = (mem *)s;
  pthread_mutex_lock(&m->pmu);
  for (bw_state_sub *sub = m->subs; sub; sub = sub->next)
    if (bw_state_sub_wants(sub, tenant, channel)) bw_state_sub_push(sub, channel, msg, len);
  pthread_mutex_unlock(&m->pmu);
  return BW_OK;
}

static int mem_subscribe(bw_state *s, bw_state_sub *sub) {
  mem *m = (mem *)s;
  pthread_mutex_lock(&m->pmu);
  sub->next = m->subs;
  m->subs = sub;
  pthread_mutex_unlock(&m->pmu);
  return BW_OK;
}

static void mem_unsubscribe(bw_state *s, bw_state_sub *sub) {
  mem *m = (mem *)s;
  pthread_mutex_lock(&m->pmu);
  for (bw_state_sub **p = &m->subs; *p; p = &(*p)->next)
    if (*p == sub) {
      *p = sub->next;
      break;
    }
  pthread_mutex_unlock(&m->pmu);
}

static void mem_free(bw_state *s) {
  mem *m = (mem *)s;
  pthread_mutex_destroy(&m->pmu);
  for (size_t i = 0; i < m->nbuckets; i++)
    for (entry *e = m->buckets[i], *next; e; e = next) {
      next = e->next;
      free(e->val);
      free(e);
    }
  for (size_t i = 0; i < m->ntbuckets; i++)
    for (share *t = m->tbuckets[i], *next; t; t = next) {
      next = t->next;
      free(t->h.a);
      free(t);
    }
  free(m->buckets);
  free(m->tbuckets);
  free(m->h.a);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

static const bw_state_ops mem_ops = {
    .kind = "memory",
    .add = mem_add,
    .once = mem_once,
    .get = mem_get,
    .cas = mem_cas,
    .del = mem_del,
    .count = mem_count,
    .stats = mem_stats,
    .publish = mem_publish,
    .subscribe = mem_subscribe,
    .unsubscribe = mem_unsubscribe,
    .free = mem_free,
};

int bw_state_open_memory(const bw_state_caps *caps, bw_state **out) {
  mem *m = calloc(1, sizeof *m);
  if (!m) return bw_fail(BW_ENOMEM, "state store: out of memory");
  bw_state_caps c = caps ? *caps : (bw_state_caps){0};
  if (!c.max_entries_per_tenant) c.max_entries_per_tenant = BW_STATE_DEFAULT_TENANT_ENTRIES;
  if (!c.max_bytes_per_tenant) c.max_bytes_per_tenant = BW_STATE_DEFAULT_TENANT_BYTES;
  if (!c.max_entries) c.max_entries = BW_STATE_DEFAULT_ENTRIES;
  if (!c.max_bytes) c.max_bytes = BW_STATE_DEFAULT_BYTES;
  m->caps = c;
  m->max_buckets = BUCKETS_MIN;
  while (m->max_buckets < c.max_entries && m->max_buckets < ((size_t)1 << 40)) m->max_buckets *= 2;
  m->nbuckets = m->ntbuckets = BUCKETS_MIN;
  m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
  m->tbuckets = calloc(m->ntbuckets, sizeof *m->tbuckets);
  if (getrandom(&m->seed, sizeof m->seed, GRND_NONBLOCK) != (ssize_t)sizeof m->seed)
    m->seed = (uint64_t)bw_now_ms() * 0x9e3779b97f4a7c15ULL; /* no entropy yet: still a seed */
  m->seed ^= 14695981039346656037ULL;
  if (!m->buckets || !m->tbuckets || pthread_mutex_init(&m->mu, NULL) ||
      pthread_mutex_init(&m->pmu, NULL)) {
    free(m->buckets);
    free(m->tbuckets);
    free(m);
    return bw_fail(BW_ENOMEM, "state store: out of memory");
  }
  m->base.ops = &mem_ops;
  m->base.refs = 1;
  if (asprintf(&m->base.id, "memory:%p", (void *)m) < 0) m->base.id = NULL; /* then its kind */
  *out = &m->base;
  return BW_OK;
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static bw_state *default_store; /* the process's reference, never dropped */

static void make_default(void) {
  if (bw_state_open_memory(NULL, &default_store)) default_store = NULL;
}

int bw_state_default(bw_state **out) {
  pthread_once(&default_once, make_default);
  if (!default_store) return bw_fail(BW_ENOMEM, "state store: no memory for the process's store");
  *out = bw_state_ref(default_store);
  return BW_OK;
}
