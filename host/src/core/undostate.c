/*
 * undostate.c - an undo store whose records live in the deployment's
 * state store (undostate.h), so every instance behind a round-robin proxy
 * sees one history. Each key's stack is one record of the store, under
 * the principal's tenant at "undo/<store id>/<sha256 of the key>" (the
 * key itself is inside, checked on read: no key can name another's
 * record), changed by compare-and-set with retries, oldest first:
 *
 *   "BWU1" u32 keylen, key, u32 n, n x (u8 kind, i64 size, i64 cut,
 *                                       u32 alen, after, u32 blen, before)
 *
 * or "BWU2", the same with u32 glen, group after each entry's before,
 * when an entry is one file of a change of several (edit_files): BWU1 is
 * still written when none is, so an instance of the release before reads
 * every record it could. Such a change also has a record of its own,
 * "undo/<store id>/g/<sha256 of the group>": "BWG1" u32 n, n x (u32 len,
 * key), its files' keys. An undo of the change holds it first (a mark
 * beside it, "<that key>/held", which lapses by itself after
 * BW_UNDO_GROUP_HOLD seconds): the one call that holds it undoes every
 * file, another finds it held (or gone, once undone) and undoes none (no
 * half-undo between two instances); the undo drops the record when it
 * went through and lets go of the hold when it failed. An undo that
 * cannot let go (the store stopped answering) loses nothing: the hold
 * lapses and the change is undone whole later.
 *
 * A record fits the store's 1 MiB and the store's max_records; the oldest
 * go first, and a change whose bytes cannot fit at all is kept as a
 * TOO_LARGE marker. What a tenant's records hold is charged to its
 * "undo/bytes" counter (as the store charges an entry: 128 bytes, the
 * tenant, the key and the value; at least entry_cost), which refuses past
 * the budget: then the oldest records of the key go, and at last the
 * change is kept as a NO_ROOM marker. The counter is a window of a day
 * (a record expires sooner): a record that expired is not refunded, so
 * the tenant holds at most twice the budget, and the store's own tenant
 * cap bounds it besides.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "undostate.h"

#define MAGIC "BWU1"
#define MAGIC2 "BWU2" /* entries with a group */
#define GMAGIC "BWG1"
#define RETRIES 32
#define WINDOW 86400.0 /* the budget counter's window, seconds */
#define ENTRY_FIXED 25 /* kind, size, cut, alen, blen */
#define BUDGET_KEY "undo/bytes"

struct bw_undostate {
  bw_state *st;
  char *tenant;
  char id[33];
  size_t cap, max_records, budget, entry_cost;
  double ttl;
  pthread_mutex_t mu; /* the cache: the last record read or written */
  char *ckey, *cval;
  size_t clen;
  uint64_t cver;
};

typedef struct ent {
  int kind;
  long long size, cut;
  const char *a, *b;
  size_t alen, blen;
  const char *g; /* the group (BWU2), glen bytes; NULL: none */
  size_t glen;
} ent;

bw_undostate *bw_undostate_new(bw_state *st, const char *tenant, const char *id, size_t cap,
                               size_t max_records, size_t budget, size_t entry_cost, double ttl) {
  bw_undostate *x = calloc(1, sizeof *x);
  if (!x || !(x->tenant = strdup(tenant))) {
    free(x);
    return NULL;
  }
  snprintf(x->id, sizeof x->id, "%s", id);
  x->st = bw_state_ref(st);
  x->cap = cap;
  x->max_records = max_records ? max_records : 1;
  x->budget = budget;
  x->entry_cost = entry_cost;
  x->ttl = ttl > WINDOW ? WINDOW : ttl; /* within the counter's window */
  pthread_mutex_init(&x->mu, NULL);
  return x;
}

static void uncache(bw_undostate *x) {
  free(x->ckey);
  free(x->cval);
  x->ckey = x->cval = NULL;
}

void bw_undostate_free(bw_undostate *x) {
  if (!x) return;
  uncache(x);
  pthread_mutex_destroy(&x->mu);
  bw_state_close(x->st);
  free(x->tenant);
  free(x);
}

/* The store's key of key: "undo/<id>/<64 hex>". */
static void store_key(const bw_undostate *x, const char *key, char out[128]) {
  char h[BW_HASH_STR];
  bw_sha256(key, strlen(key), h);
  snprintf(out, 128, "undo/%s/%s", x->id, h + 7);
}

/* What a record of len bytes is charged (0: none). */
static size_t charge(const bw_undostate *x, const char *skey, size_t len) {
  if (!len) return 0;
  size_t c = 128 + strlen(x->tenant) + strlen(skey) + len;
  return c < x->entry_cost ? x->entry_cost : c;
}

/* ---- the record's bytes */

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static unsigned char *put32(unsigned char *p, uint32_t v) {
  p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v;
  return p + 4;
}
static long long get64(const unsigned char *p) {
  return (long long)((uint64_t)get32(p) << 32 | get32(p + 4));
}
static unsigned char *put64(unsigned char *p, long long v) {
  return put32(put32(p, (uint32_t)((uint64_t)v >> 32)), (uint32_t)v);
}

/* The entries of val (oldest first) in *out, which the caller frees, and
 * room for one more; a record of another key or not ours: none. */
static int parse(const char *val, size_t len, const char *key, ent **out, size_t *n) {
  const unsigned char *p = (const unsigned char *)val, *end = p + len;
  size_t kl = strlen(key), count = 0;
  int v2 = val && len >= 4 && !memcmp(p, MAGIC2, 4);
  *n = 0;
  if (val && len >= 12 && (v2 || !memcmp(p, MAGIC, 4)) && get32(p + 4) == kl && (size_t)(end - p - 12) >= kl &&
      !memcmp(p + 8, key, kl))
    count = get32(p + 8 + kl);
  if (count > len / (ENTRY_FIXED + (v2 ? 4 : 0))) count = 0; /* not ours */
  *out = calloc(count + 1, sizeof **out);
  if (!*out) return -1;
  p += count ? 12 + kl : 0;
  for (size_t i = 0; i < count; i++) {
    ent *e = &(*out)[i];
    if (end - p < ENTRY_FIXED) return *n = 0, 0;
    e->kind = p[0];
    e->size = get64(p + 1);
    e->cut = get64(p + 9);
    e->alen = get32(p + 17);
    if ((size_t)(end - p - 21) < e->alen + 4) return *n = 0, 0;
    e->a = (const char *)p + 21;
    p += 21 + e->alen;
    e->blen = get32(p);
    if ((size_t)(end - p - 4) < e->blen) return *n = 0, 0;
    e->b = (const char *)p + 4;
    p += 4 + e->blen;
    if (v2) {
      if (end - p < 4) return *n = 0, 0;
      e->glen = get32(p);
      if ((size_t)(end - p - 4) < e->glen) return *n = 0, 0;
      e->g = e->glen ? (const char *)p + 4 : NULL;
      p += 4 + e->glen;
    }
    if (e->kind < BW_UNDO_CONTENT || e->kind > BW_UNDO_SPLICE) return *n = 0, 0;
  }
  *n = count;
  return 0;
}

/* Does an entry of e[0..n) carry a group (the record is then BWU2)? */
static int grouped(const ent *e, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (e[i].glen) return 1;
  return 0;
}

static size_t size_of(const char *key, const ent *e, size_t n) {
  int v2 = grouped(e, n);
  size_t s = 12 + strlen(key);
  for (size_t i = 0; i < n; i++) s += ENTRY_FIXED + e[i].alen + e[i].blen + (v2 ? 4 + e[i].glen : 0);
  return s;
}

static char *serialize(const char *key, const ent *e, size_t n, size_t *len) {
  *len = size_of(key, e, n);
  unsigned char *buf = malloc(*len), *p = buf;
  if (!buf) return NULL;
  size_t kl = strlen(key);
  int v2 = grouped(e, n);
  memcpy(p, v2 ? MAGIC2 : MAGIC, 4);
  p = put32(p + 4, (uint32_t)kl);
  memcpy(p, key, kl);
  p = put32(p + kl, (uint32_t)n);
  for (size_t i = 0; i < n; i++) {
    *p++ = (unsigned char)e[i].kind;
    p = put64(put64(p, e[i].size), e[i].cut);
    p = put32(p, (uint32_t)e[i].alen);
    memcpy(p, e[i].a, e[i].alen);
    p = put32(p + e[i].alen, (uint32_t)e[i].blen);
    if (e[i].blen) memcpy(p, e[i].b, e[i].blen);
    p += e[i].blen;
    if (v2) {
      p = put32(p, (uint32_t)e[i].glen);
      if (e[i].glen) memcpy(p, e[i].g, e[i].glen);
      p += e[i].glen;
    }
  }
  return (char *)buf;
}

/* ---- the store */

/* Before a retry of a compare-and-set another writer won: a short random
 * wait that grows, so two instances racing on one file do not lose to
 * each other in step (at most ~6 ms). */
static void backoff(int attempt) {
  if (attempt < 2) return;
  unsigned cap = 100u << (attempt < 7 ? attempt - 2 : 5); /* microseconds */
  usleep((useconds_t)(rand() % cap));
}

/* key's record: from the cache when cached says so and it holds key, else
 * from the store (and cached). *val malloc'd (NULL: none). */
static int fetch(bw_undostate *x, const char *key, const char *skey, int cached, char **val,
                 size_t *len, uint64_t *ver) {
  *val = NULL, *len = 0, *ver = 0;
  pthread_mutex_lock(&x->mu);
  if (cached && x->ckey && !strcmp(x->ckey, key)) {
    *ver = x->cver;
    *len = x->clen;
    if (x->cval && (*val = malloc(x->clen ? x->clen : 1))) memcpy(*val, x->cval, x->clen);
    int oom = x->cval && !*val;
    pthread_mutex_unlock(&x->mu);
    return oom ? BW_ENOMEM : BW_OK;
  }
  pthread_mutex_unlock(&x->mu);
  int rc = bw_state_get(x->st, x->tenant, skey, val, len, ver);
  if (rc) return rc;
  pthread_mutex_lock(&x->mu);
  uncache(x);
  x->ckey = strdup(key);
  if (*val && x->ckey && (x->cval = malloc(*len ? *len : 1))) memcpy(x->cval, *val, *len);
  if (*val && !x->cval) uncache(x);
  x->clen = *len;
  x->cver = *ver;
  pthread_mutex_unlock(&x->mu);
  return BW_OK;
}

/* What the store has now after our write (ver 0: none). */
static void cache_put(bw_undostate *x, const char *key, const char *val, size_t len, uint64_t ver) {
  pthread_mutex_lock(&x->mu);
  uncache(x);
  x->ckey = strdup(key);
  if (val && x->ckey && (x->cval = malloc(len ? len : 1))) memcpy(x->cval, val, len);
  if (val && !x->cval) uncache(x);
  x->clen = val ? len : 0;
  x->cver = ver;
  pthread_mutex_unlock(&x->mu);
}

static void cache_drop(bw_undostate *x) {
  pthread_mutex_lock(&x->mu);
  uncache(x);
  pthread_mutex_unlock(&x->mu);
}

/* Charge delta to the tenant's counter: *ok 0 when the budget refuses. */
static int budget_add(bw_undostate *x, long long delta, int *ok) {
  *ok = 1;
  if (!x->budget || !delta) return BW_OK;
  int64_t v;
  return bw_state_add(x->st, x->tenant, BUDGET_KEY, delta, delta > 0 ? (int64_t)x->budget : -1, WINDOW, ok,
                      &v);
}

/* Write the list e[0..n) as key's record over version ver: *done. The
 * charge is taken first (so two instances cannot both spend the last of
 * the budget) and given back when the write does not land. */
static int store_list(bw_undostate *x, const char *key, const char *skey, const ent *e, size_t n,
                      size_t old_len, uint64_t ver, int *done, int *refused) {
  size_t len = 0;
  char *val = n ? serialize(key, e, n, &len) : NULL;
  *done = *refused = 0;
  if (n && !val) return BW_ENOMEM;
  long long delta = (long long)charge(x, skey, len) - (long long)charge(x, skey, old_len);
  int ok, rc = budget_add(x, delta, &ok);
  if (!rc && !ok) *refused = 1;
  if (rc || !ok) {
    free(val);
    return rc;
  }
  uint64_t nver = 0;
  if (n) rc = bw_state_cas(x->st, x->tenant, skey, ver, val, len, x->ttl, done, &nver);
  else rc = bw_state_del(x->st, x->tenant, skey, ver, done);
  if (rc || !*done) {
    int ignored;
    budget_add(x, -delta, &ignored); /* a failure here over-counts: the safe side */
    cache_drop(x);
  } else {
    cache_put(x, key, val, len, nver);
  }
  free(val);
  return rc;
}

int bw_undostate_record(bw_undostate *x, const char *key, int kind, const char *before, size_t len,
                        long long size, long long cut, const char *after, const char *group) {
  char skey[128];
  store_key(x, key, skey);
  size_t glen = group ? strlen(group) : 0;
  ent add = {kind, size, cut, after ? after : "", NULL, after ? strlen(after) : 0, 0, glen ? group : NULL, glen};
  int bytes = kind == BW_UNDO_CONTENT || kind == BW_UNDO_SPLICE;
  /* what one record can hold of the bytes: the store's value and the cap */
  size_t head = 12 + strlen(key) + ENTRY_FIXED + add.alen + 4 + glen;
  if (head >= BW_STATE_VALUE_MAX) return -bw_fail(BW_INVALID_ARGUMENT, "undo: a key or hash too long for a record");
  size_t room = BW_STATE_VALUE_MAX - head;
  if (room > x->cap) room = x->cap;
  if (bytes && len > room) add = (ent){BW_UNDO_TOO_LARGE, (long long)len, 0, add.a, NULL, add.alen, 0, add.g, glen};
  else if (bytes) add.b = before, add.blen = len;
  for (int attempt = 0; attempt < RETRIES; attempt++) {
    char *val;
    size_t vlen;
    uint64_t ver;
    ent *list;
    size_t n;
    backoff(attempt);
    int rc = fetch(x, key, skey, attempt == 0, &val, &vlen, &ver);
    if (rc) return -rc;
    if (parse(val, vlen, key, &list, &n)) {
      free(val);
      return -bw_fail(BW_ENOMEM, "undo: out of memory");
    }
    list[n++] = add;
    size_t first = 0; /* the oldest kept */
    while (n - first > x->max_records || size_of(key, list + first, n - first) > BW_STATE_VALUE_MAX) first++;
    int done = 0, refused = 0;
    for (;;) {
      rc = store_list(x, key, skey, list + first, n - first, val ? vlen : 0, ver, &done, &refused);
      if (rc == BW_TOO_LARGE) { /* the store's own share of the tenant is full */
        refused = 1;
        rc = BW_OK;
      }
      if (rc || !refused) break;
      if (first < n - 1) { /* the budget: this key's oldest go first */
        first++;
      } else if (list[n - 1].kind == BW_UNDO_CONTENT || list[n - 1].kind == BW_UNDO_SPLICE) {
        /* then the change is a marker */
        list[n - 1] = (ent){BW_UNDO_NO_ROOM, (long long)len, 0, add.a, NULL, add.alen, 0, add.g, glen};
      } else { /* not even that: no history of this key */
        if (val) store_list(x, key, skey, NULL, 0, vlen, ver, &done, &refused);
        free(list);
        free(val);
        return BW_UNDO_NO_ROOM;
      }
    }
    int kept = list[n - 1].kind;
    free(list);
    free(val);
    if (rc) return -rc;
    if (done) return kept;
  }
  return -bw_fail(BW_EAGAIN, "undo: the shared record changed under every retry");
}

int bw_undostate_peek(bw_undostate *x, const char *key, bw_undo_entry *e) {
  char skey[128], *val;
  size_t vlen, n;
  uint64_t ver;
  ent *list;
  memset(e, 0, sizeof *e);
  store_key(x, key, skey);
  int rc = fetch(x, key, skey, 0, &val, &vlen, &ver);
  if (rc) return -rc;
  if (parse(val, vlen, key, &list, &n)) {
    free(val);
    return -bw_fail(BW_ENOMEM, "undo: out of memory");
  }
  int got = 0;
  if (n) {
    const ent *t = &list[n - 1];
    e->kind = t->kind, e->size = t->size, e->cut = t->cut;
    e->after = strndup(t->a, t->alen);
    if (t->blen || t->kind == BW_UNDO_CONTENT || t->kind == BW_UNDO_SPLICE) {
      e->before = malloc(t->blen ? t->blen : 1);
      if (e->before) memcpy(e->before, t->b, t->blen), e->len = t->blen;
    }
    if (t->glen) e->group = strndup(t->g, t->glen);
    got = e->after && (e->before || !(t->kind == BW_UNDO_CONTENT || t->kind == BW_UNDO_SPLICE)) &&
                  (!t->glen || e->group)
              ? 1
              : -BW_ENOMEM;
    if (got < 0) bw_undo_entry_free(e);
  }
  free(list);
  free(val);
  return got;
}

/* The newest entry of list[0..n) that is the one taken first (its kind
 * and after): another change recorded on top meanwhile stays. n when none. */
static size_t find_taken(const ent *list, size_t n, int kind, const char *after, size_t alen) {
  for (size_t i = n; i-- > 0;)
    if (list[i].kind == kind && list[i].alen == alen && !memcmp(list[i].a, after, alen)) return i;
  return n;
}

int bw_undostate_pop(bw_undostate *x, const char *key) {
  char skey[128], *taken = NULL;
  size_t talen = 0;
  int tkind = 0;
  store_key(x, key, skey);
  for (int attempt = 0; attempt < RETRIES; attempt++) {
    char *val;
    size_t vlen, n, at;
    uint64_t ver;
    ent *list;
    backoff(attempt);
    int rc = fetch(x, key, skey, attempt == 0, &val, &vlen, &ver), done = 0, refused;
    if (!rc && parse(val, vlen, key, &list, &n)) {
      free(val);
      rc = bw_fail(BW_ENOMEM, "undo: out of memory");
    }
    if (rc) {
      free(taken);
      return rc;
    }
    if (attempt == 0 && n) { /* the record undo_edit peeked: the one to take */
      tkind = list[n - 1].kind;
      talen = list[n - 1].alen;
      taken = strndup(list[n - 1].a, talen);
    }
    at = taken ? find_taken(list, n, tkind, taken, talen) : n;
    if (at < n) {
      memmove(list + at, list + at + 1, (n - at - 1) * sizeof *list);
      rc = store_list(x, key, skey, list, n - 1, vlen, ver, &done, &refused);
    }
    free(list);
    free(val);
    if (rc || at >= n || done) {
      free(taken);
      return rc;
    }
  }
  free(taken);
  return bw_fail(BW_EAGAIN, "undo: the shared record changed under every retry");
}

int bw_undostate_depth(bw_undostate *x, const char *key, size_t *depth) {
  char skey[128], *val;
  size_t vlen;
  uint64_t ver;
  ent *list;
  *depth = 0;
  store_key(x, key, skey);
  int rc = fetch(x, key, skey, 0, &val, &vlen, &ver);
  if (rc) return rc;
  rc = parse(val, vlen, key, &list, depth) ? bw_fail(BW_ENOMEM, "undo: out of memory") : BW_OK;
  free(list);
  free(val);
  return rc;
}

int bw_undostate_budget(bw_undostate *x, size_t *bytes) {
  int ok;
  int64_t v = 0;
  int rc = bw_state_add(x->st, x->tenant, BUDGET_KEY, 0, -1, WINDOW, &ok, &v);
  *bytes = rc ? 0 : (size_t)v;
  return rc;
}

/* ---- a change of several files: its group's record */

static void group_key(const bw_undostate *x, const char *group, char out[160]) {
  char h[BW_HASH_STR];
  bw_sha256(group, strlen(group), h);
  snprintf(out, 160, "undo/%s/g/%s", x->id, h + 7);
}

int bw_undostate_group_put(bw_undostate *x, const char *group, const char *const *keys, size_t n) {
  char gkey[160];
  group_key(x, group, gkey);
  size_t len = 8;
  for (size_t i = 0; i < n; i++) len += 4 + strlen(keys[i]);
  if (len > BW_STATE_VALUE_MAX) return bw_fail(BW_TOO_LARGE, "undo: a change of too many files for one record");
  unsigned char *buf = malloc(len), *p = buf;
  if (!buf) return bw_fail(BW_ENOMEM, "undo: out of memory");
  memcpy(p, GMAGIC, 4);
  p = put32(p + 4, (uint32_t)n);
  for (size_t i = 0; i < n; i++) {
    size_t kl = strlen(keys[i]);
    p = put32(p, (uint32_t)kl);
    memcpy(p, keys[i], kl);
    p += kl;
  }
  /* charged to the tenant's undo budget as a record is: a change's paths
   * are the agent's to make long, and the group would hold them past it */
  long long cost = (long long)charge(x, gkey, len);
  int ok, rc = budget_add(x, cost, &ok), done = 0;
  if (!rc && !ok) rc = bw_fail(BW_TOO_LARGE, "undo: the tenant's undo budget is spent: the change's files are not kept as one");
  uint64_t ver = 0;
  /* a new group's id is random: none there before, but a put back after
   * a failed undo may find one another call put */
  for (int attempt = 0; attempt < RETRIES && !rc && !done; attempt++) {
    backoff(attempt);
    rc = bw_state_cas(x->st, x->tenant, gkey, ver, buf, len, x->ttl, &done, &ver);
  }
  free(buf);
  if (!rc && !done) rc = bw_fail(BW_EAGAIN, "undo: the group's record changed under every retry");
  if (rc && ok) {
    int ignored;
    budget_add(x, -cost, &ignored); /* not kept: given back (a failure here over-counts: the safe side) */
  }
  return rc;
}

/* The mark that holds a group for one undo: a store-side expiry, so an
 * undo that cannot let go (the store stopped answering) holds it HOLD
 * seconds at most, whichever instance's clock. */
static void hold_key(const bw_undostate *x, const char *group, char out[168]) {
  char gkey[160];
  group_key(x, group, gkey);
  snprintf(out, 168, "%s/held", gkey);
}

long bw_undostate_group_take(bw_undostate *x, const char *group, void (*each)(void *arg, const char *key),
                             void *arg) {
  char gkey[160], hkey[168], *val = NULL;
  size_t len = 0;
  uint64_t ver = 0;
  int first = 0, ignored;
  group_key(x, group, gkey);
  hold_key(x, group, hkey);
  /* the hold first, then the record: a record read after another call let
   * go of it is the record that call left (gone when it undid the change) */
  int rc = bw_state_once(x->st, x->tenant, hkey, BW_UNDO_GROUP_HOLD, &first);
  if (rc) return -rc;
  if (!first) return -bw_fail(BW_EAGAIN, "undo: another call is undoing this change");
  rc = bw_state_get(x->st, x->tenant, gkey, &val, &len, &ver);
  const unsigned char *p = (const unsigned char *)val, *end = p + len;
  size_t n = !rc && val && len >= 8 && !memcmp(p, GMAGIC, 4) ? get32(p + 4) : 0;
  /* every key whole before any is handed over: a record not ours, none */
  const unsigned char *q = p + 8;
  for (size_t i = 0; i < n; i++) {
    if (end - q < 4 || (size_t)(end - q - 4) < get32(q)) n = 0;
    else q += 4 + get32(q);
  }
  if (rc || !n) {
    bw_state_del(x->st, x->tenant, hkey, 0, &ignored); /* a failure here: the hold lapses */
    free(val);
    return rc ? -rc : 0;
  }
  q = p + 8;
  for (size_t i = 0; i < n; i++) {
    size_t kl = get32(q);
    char *k = strndup((const char *)q + 4, kl);
    if (k) each(arg, k);
    free(k);
    q += 4 + kl;
  }
  free(val);
  return (long)n;
}

int bw_undostate_group_done(bw_undostate *x, const char *group) {
  char gkey[160], hkey[168], *val = NULL;
  size_t len = 0;
  uint64_t ver = 0;
  int deleted = 0, ignored;
  group_key(x, group, gkey);
  hold_key(x, group, hkey);
  int rc = bw_state_get(x->st, x->tenant, gkey, &val, &len, &ver);
  free(val);
  if (!rc && ver) rc = bw_state_del(x->st, x->tenant, gkey, ver, &deleted);
  if (!rc && deleted) budget_add(x, -(long long)charge(x, gkey, len), &ignored); /* its charge given back */
  if (!rc) rc = bw_state_del(x->st, x->tenant, hkey, 0, &ignored);
  return rc;
}

int bw_undostate_group_release(bw_undostate *x, const char *group) {
  char hkey[168];
  int ignored;
  hold_key(x, group, hkey);
  return bw_state_del(x->st, x->tenant, hkey, 0, &ignored);
}
