/*
 * counter.h - counters several processes share: a small file of records
 * under flock (counter.c), for quotas that hold across burrow instances.
 */
#ifndef BURROW_COUNTER_H
#define BURROW_COUNTER_H

#include <stdint.h>

typedef struct bw_counters bw_counters;

enum {
  BW_COUNTER_KEY = 96,       /* longest key, bytes */
  BW_COUNTER_RECORDS = 4096, /* most keys in one file */
};

/* Open (create, mode 0600) the store at path: a regular file, never
 * through a final symlink. The operator names it; an agent never does. */
int bw_counters_open(const char *path, bw_counters **out);
void bw_counters_close(bw_counters *c);

/* Under an exclusive flock: the counter key, reset to 0 when its window
 * differs from window (a minute number, or 0 for none); if limit >= 0 and
 * value + delta > limit, nothing is added and *added = 0; else delta is
 * added and *added = 1. *value: the counter after the call. */
int bw_counter_add(bw_counters *c, const char *key, int64_t window,
                   int64_t delta, int64_t limit, int64_t *value, int *added);

/* Mark key ("once:..."), under the same lock: *first = 1 when it was not
 * marked yet (or its mark expired before now), and it is marked until
 * expires (unix seconds); *first = 0 when it is marked: a replay. */
int bw_counter_once(bw_counters *c, const char *key, int64_t expires, int64_t now,
                    int *first);

/* The state store's counters (statefile.c), keys "ttl\x1f...": the
 * record's window is its expiry (unix seconds). One expired before now
 * (or none) starts from 0, expiring at expires; then as bw_counter_add,
 * except that a refused addition leaves no new record. A full store takes
 * the slot of an expired "once:" or "ttl\x1f" record. */
int bw_counter_add_until(bw_counters *c, const char *key, int64_t now, int64_t expires,
                         int64_t delta, int64_t limit, int64_t *value, int *added);
/* Forget key: *deleted = 1 when it had a record. */
int bw_counter_del(bw_counters *c, const char *key, int *deleted);
/* *n: the records whose key match(key, window, ud) accepts, read under
 * the lock. */
int bw_counter_count(bw_counters *c, int (*match)(const char *key, int64_t window, void *ud),
                     void *ud, size_t *n);

#endif
