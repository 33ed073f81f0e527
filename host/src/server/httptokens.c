/*
 * httptokens.c - a token's session limit (max_sessions) held across the
 * deployment's instances: with a shared store (opts.store) every
 * initialize of a token with a limit reserves its session's id in the
 * token's record of the store, "sessions-of/<token id>" under its tenant,
 * by compare-and-set, so N instances hold one limit, not N. The record
 * lists the live sessions' ids, each with its reservation's time:
 *
 *   "burrow-sessions 1\n" then "<32 hex> <unix ms>\n" per session
 *
 * A DELETE takes its id out. A session that ended otherwise (expired, its
 * instance killed) leaves its id behind until a reservation at the limit
 * finds its record ("session/<id>", httpshare.c) gone: a few of the
 * oldest ids are checked then, each reserved more than GRACE_MS ago (a
 * younger one's record may not be written yet). So the record holds at
 * most the limit's ids: nothing an agent does makes it grow past that,
 * and one token's record is its own (no other token is counted in it).
 * A store that does not answer refuses the session (fail closed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "httpint.h"
#include "state.h"

#define MAGIC "burrow-sessions 1\n"
#define GRACE_MS 10000   /* a reservation younger than this counts unchecked */
#define CHECKS 8         /* gone sessions looked for at most, a reservation */
#define RETRIES 16       /* compare-and-set rounds before giving up (503) */
#define TTL (86400.0 * 7) /* the record, from its last change */
#define LINE 48          /* "<32 hex> <ms>\n" fits */

typedef struct ids {
  char (*id)[33];
  long long *at;
  size_t n;
} ids;

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t); /* instances share no other clock */
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void record_key(const bw_http *h, int token, const bw_oauth_who *who, char key[48]) {
  char tid[17];
  bwh_token_id(h, token, who, tid);
  snprintf(key, 48, "sessions-of/%s", tid);
}

/* The ids of val (a record not ours, or a line that does not parse: none
 * from there on), at most cap of them. */
static int parse(const char *val, size_t len, size_t cap, ids *out) {
  out->n = 0;
  out->id = calloc(cap + 1, sizeof *out->id);
  out->at = calloc(cap + 1, sizeof *out->at);
  if (!out->id || !out->at) return -1;
  size_t m = strlen(MAGIC);
  if (!val || len < m || memcmp(val, MAGIC, m)) return 0;
  const char *p = val + m, *end = val + len;
  while (p < end && out->n < cap) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl || nl - p < 34 || nl - p >= LINE) break;
    char line[LINE];
    memcpy(line, p, (size_t)(nl - p));
    line[nl - p] = 0;
    char *rest;
    long long at = strtoll(line + 33, &rest, 10);
    if (line[32] != ' ' || *rest) break;
    memcpy(out->id[out->n], line, 32);
    out->id[out->n][32] = 0;
    out->at[out->n++] = at;
    p = nl + 1;
  }
  return 0;
}

static void ids_free(ids *x) {
  free(x->id);
  free(x->at);
}

static char *serialize(const ids *x, size_t *len) {
  size_t cap = strlen(MAGIC) + x->n * LINE + 1, n = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  n += (size_t)snprintf(buf, cap, "%s", MAGIC);
  for (size_t i = 0; i < x->n; i++) n += (size_t)snprintf(buf + n, cap - n, "%s %lld\n", x->id[i], x->at[i]);
  *len = n;
  return buf;
}

static void drop(ids *x, size_t i) {
  memmove(x->id + i, x->id + i + 1, (x->n - i - 1) * sizeof *x->id);
  memmove(x->at + i, x->at + i + 1, (x->n - i - 1) * sizeof *x->at);
  x->n--;
}

/* At the limit: the oldest ids past their grace whose session record is
 * gone are dropped (at most CHECKS looked at). -1: the store did not answer. */
static int prune(bw_http *h, const char *tenant, ids *x) {
  long long old = now_ms() - GRACE_MS;
  int looked = 0;
  for (size_t i = 0; i < x->n && looked < CHECKS;) {
    if (x->at[i] > old) {
      i++;
      continue;
    }
    looked++;
    char key[48], *val = NULL;
    size_t len;
    uint64_t ver;
    snprintf(key, sizeof key, "session/%s", x->id[i]);
    if (bw_state_get(h->o.store, tenant, key, &val, &len, &ver) != BW_OK) return -1;
    if (val) {
      free(val);
      i++;
    } else {
      drop(x, i);
    }
  }
  return 0;
}

int bwh_tokens_reserve(bw_http *h, int token, const bw_oauth_who *who, int limit, char sid[33]) {
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) return 503;
  for (int i = 0; i < 16; i++) sprintf(sid + 2 * i, "%02x", rnd[i]);
  char key[48];
  record_key(h, token, who, key);
  const char *tenant = bwh_tenant_name(h, token >= 0 ? h->o.tokens[token].tenant : 0);
  for (int attempt = 0; attempt < RETRIES; attempt++) {
    char *val = NULL;
    size_t len = 0;
    uint64_t ver = 0;
    if (bw_state_get(h->o.store, tenant, key, &val, &len, &ver) != BW_OK) return 503;
    ids x;
    int bad = parse(val, len, (size_t)limit, &x);
    free(val);
    if (bad) {
      ids_free(&x);
      return 503;
    }
    if (x.n >= (size_t)limit && prune(h, tenant, &x)) {
      ids_free(&x);
      return 503;
    }
    if (x.n >= (size_t)limit) {
      ids_free(&x);
      return 429;
    }
    memcpy(x.id[x.n], sid, 33);
    x.at[x.n++] = now_ms();
    char *out = serialize(&x, &len);
    ids_free(&x);
    if (!out) return 503;
    int done = 0;
    uint64_t nver;
    int rc = bw_state_cas(h->o.store, tenant, key, ver, out, len, TTL, &done, &nver);
    free(out);
    if (rc) return 503;
    if (done) return 0;
  }
  return 503;
}

void bwh_tokens_release(bw_http *h, int token, const bw_oauth_who *who, const char *sid) {
  char key[48];
  record_key(h, token, who, key);
  const char *tenant = bwh_tenant_name(h, token >= 0 ? h->o.tokens[token].tenant : 0);
  for (int attempt = 0; attempt < RETRIES; attempt++) {
    char *val = NULL;
    size_t len = 0;
    uint64_t ver = 0;
    if (bw_state_get(h->o.store, tenant, key, &val, &len, &ver) != BW_OK || !val) {
      free(val);
      return; /* a store down: the id goes when a reservation finds its session gone */
    }
    ids x;
    int bad = parse(val, len, len / 34 + 1, &x);
    free(val);
    size_t i = 0;
    while (!bad && i < x.n && strcmp(x.id[i], sid)) i++;
    if (bad || i == x.n) {
      ids_free(&x);
      return;
    }
    drop(&x, i);
    char *out = serialize(&x, &len);
    ids_free(&x);
    if (!out) return;
    int done = 0;
    uint64_t nver;
    int rc = bw_state_cas(h->o.store, tenant, key, ver, out, len, TTL, &done, &nver);
    free(out);
    if (rc || done) return;
  }
}
