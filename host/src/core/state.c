/*
 * state.c - the state store's interface (state.h): the arguments checked
 * once for every backend, then the backend's function; references. The
 * lowest of the store's files: the backends (statemem.c, statefile.c,
 * stateredis.c) and the subscriptions (statesub.c, which hold a reference
 * to their store) call it, never it them.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

/* Operations the store could not answer (STORE_UNAVAILABLE, EIO), by
 * operation, for the process (the listener's /metrics): counted here, the
 * one place every backend's calls pass. */
static _Atomic uint64_t failures[BW_STATE_NOPS];
static const char *const op_names[BW_STATE_NOPS] = {"add", "once", "get", "cas", "del", "count"};

static int counted(int op, int rc) {
  if (rc == BW_STORE_UNAVAILABLE || rc == BW_EIO) atomic_fetch_add(&failures[op], 1);
  return rc;
}

uint64_t bw_state_failures(int op, const char **name) {
  if (op < 0 || op >= BW_STATE_NOPS) return 0;
  if (name) *name = op_names[op];
  return atomic_load(&failures[op]);
}

static int check_names(const char *tenant, const char *key) {
  if (!tenant || strlen(tenant) > BW_STATE_TENANT_MAX)
    return bw_fail(BW_INVALID_ARGUMENT, "state store: a tenant is 0 to 255 bytes");
  size_t kl = key ? strlen(key) : 0;
  if (kl == 0 || kl > BW_STATE_KEY_MAX)
    return bw_fail(BW_INVALID_ARGUMENT, "state store: a key is 1 to 1024 bytes");
  return BW_OK;
}

static int check_ttl(double ttl) {
  if (!(ttl > 0 && ttl <= BW_STATE_TTL_MAX)) /* NaN and inf too */
    return bw_fail(BW_INVALID_ARGUMENT,
                   "state store: a ttl is more than 0 seconds and at most 366 days");
  return BW_OK;
}

bw_state *bw_state_ref(bw_state *s) {
  if (s) s->refs++;
  return s;
}

void bw_state_close(bw_state *s) {
  if (s && --s->refs == 0) {
    char *id = s->id;
    s->ops->free(s);
    free(id);
  }
}

const char *bw_state_kind(const bw_state *s) { return s->ops->kind; }

const char *bw_state_id(const bw_state *s) { return s->id ? s->id : s->ops->kind; }

int bw_state_add(bw_state *s, const char *tenant, const char *key, int64_t delta,
                 int64_t limit, double ttl, int *added, int64_t *value) {
  int rc = check_names(tenant, key);
  if (!rc) rc = check_ttl(ttl);
  if (rc) return rc;
  return counted(0, s->ops->add(s, tenant, key, delta, limit < 0 ? -1 : limit, ttl, added, value));
}

int bw_state_once(bw_state *s, const char *tenant, const char *key, double ttl,
                  int *first) {
  int rc = check_names(tenant, key);
  if (!rc) rc = check_ttl(ttl);
  if (rc) return rc;
  return counted(1, s->ops->once(s, tenant, key, ttl, first));
}

int bw_state_get(bw_state *s, const char *tenant, const char *key, char **val,
                 size_t *len, uint64_t *version) {
  *val = NULL;
  *len = 0;
  *version = 0;
  int rc = check_names(tenant, key);
  if (rc) return rc;
  return counted(2, s->ops->get(s, tenant, key, val, len, version));
}

int bw_state_cas(bw_state *s, const char *tenant, const char *key, uint64_t expected,
                 const void *val, size_t len, double ttl, int *done, uint64_t *version) {
  *done = 0;
  *version = 0;
  int rc = check_names(tenant, key);
  if (!rc) rc = check_ttl(ttl);
  if (rc) return rc;
  if (len > BW_STATE_VALUE_MAX)
    return bw_fail(BW_TOO_LARGE, "state store: a record's value is at most 1 MiB");
  if (len && !val) return bw_fail(BW_INVALID_ARGUMENT, "state store: no value");
  return counted(3, s->ops->cas(s, tenant, key, expected, val, len, ttl, done, version));
}

int bw_state_del(bw_state *s, const char *tenant, const char *key, uint64_t expected,
                 int *deleted) {
  *deleted = 0;
  int rc = check_names(tenant, key);
  if (rc) return rc;
  return counted(4, s->ops->del(s, tenant, key, expected, deleted));
}

int bw_state_count(bw_state *s, const char *tenant, size_t *n) {
  *n = 0;
  if (!tenant || strlen(tenant) > BW_STATE_TENANT_MAX)
    return bw_fail(BW_INVALID_ARGUMENT, "state store: a tenant is 0 to 255 bytes");
  return counted(5, s->ops->count(s, tenant, n));
}

int bw_state_stats(bw_state *s, bw_state_totals *st) {
  memset(st, 0, sizeof *st);
  return s->ops->stats(s, st);
}
