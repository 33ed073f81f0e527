/*
 * statefile.c - the state store on the counter file (counter.c): the
 * processes of one machine share it under its flock, and expiry is on the
 * wall clock (whole seconds), which they share. A counter is the record
 * "ttl\x1f" TENANT "\x1f" KEY, a mark "once:" TENANT "\x1f" KEY (the
 * prefix counter.c's marks carry, so expired ones give their slots back
 * alike); quota counters (shared_add) and the approval marks of
 * core.store_open live in the same file beside them, unchanged. A record
 * holds no value bytes: records are the embedded store's (and a later
 * Redis one's), refused here. A mutex keeps this process's threads apart:
 * flock does not, on one descriptor.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "counter.h"
#include "state.h"

typedef struct file {
  bw_state base;
  pthread_mutex_t mu;
  bw_counters *c;
} file;

/* The record's key for (tenant, key) under prefix, in out[BW_COUNTER_KEY]. */
static int record_key(const char *prefix, const char *tenant, const char *key, char *out) {
  if (strchr(tenant, '\x1f'))
    return bw_fail(BW_INVALID_ARGUMENT, "state store (file): a tenant holds no \\x1f byte");
  int n = snprintf(out, BW_COUNTER_KEY, "%s%s\x1f%s", prefix, tenant, key);
  if (n < 0 || n >= BW_COUNTER_KEY)
    return bw_fail(BW_INVALID_ARGUMENT,
                   "state store (file): tenant and key are at most 89 bytes together");
  return BW_OK;
}

/* now + ttl rounded up to a whole second (no libm: the tests link none) */
static int64_t expiry(double ttl, int64_t now) {
  int64_t whole = (int64_t)ttl;
  return now + whole + (whole < ttl);
}

static int file_add(bw_state *s, const char *tenant, const char *key, int64_t delta,
                    int64_t limit, double ttl, int *added, int64_t *value) {
  file *f = (file *)s;
  char k[BW_COUNTER_KEY];
  *added = 0;
  *value = 0;
  int rc = record_key("ttl\x1f", tenant, key, k);
  if (rc) return rc;
  pthread_mutex_lock(&f->mu);
  int64_t now = (int64_t)time(NULL);
  rc = bw_counter_add_until(f->c, k, now, expiry(ttl, now), delta, limit, value, added);
  pthread_mutex_unlock(&f->mu);
  return rc;
}

static int file_once(bw_state *s, const char *tenant, const char *key, double ttl,
                     int *first) {
  file *f = (file *)s;
  char k[BW_COUNTER_KEY];
  *first = 0;
  int rc = record_key("once:", tenant, key, k);
  if (rc) return rc;
  pthread_mutex_lock(&f->mu);
  int64_t now = (int64_t)time(NULL);
  rc = bw_counter_once(f->c, k, expiry(ttl, now), now, first);
  pthread_mutex_unlock(&f->mu);
  return rc;
}

static int no_records(void) {
  return bw_fail(BW_INVALID_ARGUMENT,
                 "state store (file): it keeps counters and marks, not records");
}

static int file_get(bw_state *s, const char *tenant, const char *key, char **val,
                    size_t *len, uint64_t *version) {
  (void)s, (void)tenant, (void)key, (void)val, (void)len, (void)version;
  return no_records();
}

static int file_cas(bw_state *s, const char *tenant, const char *key, uint64_t expected,
                    const void *val, size_t len, double ttl, int *done, uint64_t *version) {
  (void)s, (void)tenant, (void)key, (void)expected, (void)val, (void)len, (void)ttl;
  (void)done, (void)version;
  return no_records();
}

/* A counter or a mark (expected 0: the file's entries have no version). */
static int file_del(bw_state *s, const char *tenant, const char *key, uint64_t expected,
                    int *deleted) {
  file *f = (file *)s;
  char k[BW_COUNTER_KEY];
  *deleted = 0;
  if (expected) return BW_OK;
  int rc = BW_OK;
  for (int i = 0; i < 2 && !rc && !*deleted; i++) {
    rc = record_key(i ? "once:" : "ttl\x1f", tenant, key, k);
    if (rc) break;
    pthread_mutex_lock(&f->mu);
    rc = bw_counter_del(f->c, k, deleted);
    pthread_mutex_unlock(&f->mu);
  }
  return rc;
}

typedef struct match {
  const char *tenant; /* NULL: every state entry */
  size_t len;
  int64_t now;
} match;

/* A live state entry ("ttl\x1f" or "once:" TENANT "\x1f" KEY; the
 * approval marks of core.store_open, "once:mrtr:...", have no \x1f) */
static int live(const char *key, int64_t window, void *ud) {
  const match *m = ud;
  const char *rest = !strncmp(key, "ttl\x1f", 4) ? key + 4 : !strncmp(key, "once:", 5) ? key + 5 : NULL;
  if (!rest || window < m->now) return 0;
  const char *sep = strchr(rest, '\x1f');
  if (!sep) return 0;
  return !m->tenant || ((size_t)(sep - rest) == m->len && !memcmp(rest, m->tenant, m->len));
}

static int file_count(bw_state *s, const char *tenant, size_t *n) {
  file *f = (file *)s;
  pthread_mutex_lock(&f->mu);
  match m = {tenant, strlen(tenant), (int64_t)time(NULL)};
  int rc = bw_counter_count(f->c, live, &m, n);
  pthread_mutex_unlock(&f->mu);
  return rc;
}

/* bytes: the file's records they take */
static int file_stats(bw_state *s, bw_state_totals *st) {
  file *f = (file *)s;
  pthread_mutex_lock(&f->mu);
  match m = {NULL, 0, (int64_t)time(NULL)};
  int rc = bw_counter_count(f->c, live, &m, &st->entries);
  pthread_mutex_unlock(&f->mu);
  st->bytes = st->entries * 128;
  return rc;
}

static void file_free(bw_state *s) {
  file *f = (file *)s;
  bw_counters_close(f->c);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

static const bw_state_ops file_ops = {
    .kind = "file",
    .add = file_add,
    .once = file_once,
    .get = file_get,
    .cas = file_cas,
    .del = file_del,
    .count = file_count,
    .stats = file_stats,
    .free = file_free,
};

int bw_state_open_file(const char *path, bw_state **out) {
  file *f = calloc(1, sizeof *f);
  if (!f) return bw_fail(BW_ENOMEM, "state store: out of memory");
  int rc = bw_counters_open(path, &f->c);
  if (!rc && pthread_mutex_init(&f->mu, NULL)) {
    bw_counters_close(f->c);
    rc = bw_fail(BW_ENOMEM, "state store: out of memory");
  }
  if (rc) {
    free(f);
    return rc;
  }
  f->base.ops = &file_ops;
  f->base.refs = 1;
  if (asprintf(&f->base.id, "file:%s", path) < 0) f->base.id = NULL;
  *out = &f->base;
  return BW_OK;
}
