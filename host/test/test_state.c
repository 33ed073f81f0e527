/*
 * test_state.c - the state store (state.c, statemem.c, statefile.c)
 * without Lua: counters exact under threads, marks, records and their
 * compare-and-set, expiry (waited for, never slept for), a tenant's full
 * share refusing while another tenant goes on, the entry count within its
 * cap through a million expiring keys, and the same interface on the
 * counter file beside the quota counters and approval marks it holds.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "counter.h"
#include "state.h"
#include "state_cases.h" /* the cases every backend shares */

/* ---- caps */

static void test_caps(void) {
  bw_state_caps caps = {.max_entries_per_tenant = 100, .max_bytes_per_tenant = 100 * 1024,
                        .max_entries = 150, .max_bytes = 1 << 20};
  bw_state *s;
  CHECK(bw_state_open_memory(&caps, &s) == BW_OK, "open");
  char key[32];
  int first, ok = 0, rc;
  for (int i = 0; i < 100; i++) {
    snprintf(key, sizeof key, "k%d", i);
    ok += bw_state_once(s, "a", key, 3600, &first) == BW_OK && first;
  }
  CHECK(ok == 100, "a's share filled (%d)", ok);
  rc = bw_state_once(s, "a", "one-more", 3600, &first);
  CHECK(rc == BW_TOO_LARGE && strstr(detail(), "max_entries_per_tenant"), "the 101st: %s (%s)",
        bw_code_name(rc), detail());
  CHECK(!first, "and no yes");
  int added = 1;
  int64_t v;
  rc = bw_state_add(s, "a", "ctr", 1, -1, 60, &added, &v);
  CHECK(rc == BW_TOO_LARGE && !added, "nor a new counter");
  CHECK(bw_state_once(s, "b", "k0", 3600, &first) == BW_OK && first, "b still gets its own (%s)", detail());
  size_t n = 0;
  CHECK(bw_state_count(s, "a", &n) == BW_OK && n == 100, "a keeps all 100 (%zu)", n);
  ok = 0;
  for (int i = 0; i < 100; i++) {
    snprintf(key, sizeof key, "k%d", i);
    ok += bw_state_once(s, "a", key, 3600, &first) == BW_OK && !first;
  }
  CHECK(ok == 100, "every one of a's marks still there (%d)", ok);
  /* the store's own cap: 150 in all; b took 1 */
  for (int i = 1; i < 49; i++) {
    snprintf(key, sizeof key, "k%d", i);
    bw_state_once(s, "b", key, 3600, &first);
  }
  CHECK(bw_state_once(s, "c", "k", 3600, &first) == BW_OK && first, "the 150th");
  rc = bw_state_once(s, "d", "k", 3600, &first);
  CHECK(rc == BW_TOO_LARGE && strstr(detail(), "max_entries"), "the 151st: %s (%s)", bw_code_name(rc), detail());
  bw_state_totals t;
  CHECK(bw_state_stats(s, &t) == BW_OK && t.entries == 150 && t.bytes > 150 * BW_STATE_ENTRY_COST,
        "stats: %zu entries, %zu bytes", t.entries, t.bytes);
  /* bytes: a record past a's byte share */
  int del;
  bw_state_del(s, "c", "k", 0, &del);
  char *val = calloc(1, 200 * 1024);
  int done;
  uint64_t ver;
  rc = bw_state_cas(s, "e", "big", 0, val, 200 * 1024, 60, &done, &ver);
  CHECK(rc == BW_TOO_LARGE && strstr(detail(), "max_bytes_per_tenant") && !done, "a record past the byte share: %s",
        detail());
  CHECK(bw_state_cas(s, "e", "small", 0, val, 50 * 1024, 60, &done, &ver) == BW_OK && done, "one within it");
  rc = bw_state_cas(s, "e", "small", ver, val, 150 * 1024, 60, &done, &ver);
  CHECK(rc == BW_TOO_LARGE && !done, "growing it past the share: refused (%s)", detail());
  free(val);
  bw_state_close(s);
}

/* A million distinct keys of one tenant, each living 1 ms: the entry count
 * never passes the share, and every key gets its mark (a full share waits
 * for the oldest to expire, as a caller retrying would). */
static void test_flat(void) {
  bw_state_caps caps = {.max_entries_per_tenant = 1000};
  bw_state *s;
  bw_state_open_memory(&caps, &s);
  char key[32];
  size_t most = 0, n;
  long firsts = 0, refused = 0, other = 0;
  int64_t until = bw_now_ms() + 120000;
  for (long i = 0; i < 1000000; i++) {
    snprintf(key, sizeof key, "k%ld", i);
    for (;;) {
      int first = 0, rc = bw_state_once(s, "flood", key, 0.001, &first);
      if (rc == BW_OK) {
        firsts += first;
        break;
      }
      if (rc != BW_TOO_LARGE || bw_now_ms() > until) { /* no expiry: fail, not hang */
        other++;
        break;
      }
      refused++;
      usleep(100); /* the oldest expires within 1 ms */
    }
    if (i % 997 == 0) {
      bw_state_count(s, "flood", &n);
      if (n > most) most = n;
    }
  }
  bw_state_totals t;
  bw_state_stats(s, &t);
  CHECK(firsts == 1000000 && other == 0, "every key marked once (%ld, %ld other failures)", firsts, other);
  CHECK(most <= 1000, "the tenant's entries stayed within its cap of 1000 (at most %zu)", most);
  CHECK(t.entries <= 1000 && t.bytes <= 1000 * (BW_STATE_ENTRY_COST + 16),
        "the store holds %zu entries, %zu bytes", t.entries, t.bytes);
  printf("# 1,000,000 keys: at most %zu live entries, %ld refusals while the share was full\n", most, refused);
  bw_state_close(s);
}

/* ---- the counter file */

static void test_file(void) {
  char path[] = "/tmp/burrow-state-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  bw_state *s;
  CHECK(bw_state_open_file(path, &s) == BW_OK && !strcmp(bw_state_kind(s), "file"), "open the file");
  test_counter(s);
  test_once(s);
  test_threads(s, 4, 200);
  test_expiry(s, 1);
  /* no publish/subscribe, and the refusal names the stores that have it */
  const char *ch[] = {"changes"};
  bw_state_sub *sub = NULL;
  CHECK(bw_state_publish(s, "t", "changes", "x", 1) == BW_INVALID_ARGUMENT &&
            strstr(detail(), "embedded") && strstr(detail(), "Redis"),
        "the file store has no publish: %s", detail());
  CHECK(bw_state_subscribe(s, "t", ch, 1, &sub) == BW_INVALID_ARGUMENT && !sub, "nor subscribe");
  char *val;
  size_t len, n = 0;
  uint64_t ver;
  int done, del, first, added, rc;
  int64_t v;
  rc = bw_state_get(s, "t", "r", &val, &len, &ver);
  CHECK(rc == BW_INVALID_ARGUMENT && strstr(detail(), "not records"), "no records: %s", detail());
  CHECK(bw_state_cas(s, "t", "r", 0, "x", 1, 60, &done, &ver) == BW_INVALID_ARGUMENT && !done, "no cas");
  /* beside it, as before: a quota counter and an approval mark */
  bw_counters *c;
  CHECK(bw_counters_open(path, &c) == BW_OK, "the counter file opened as the quotas policy does");
  CHECK(bw_counter_add(c, "calls", 42, 5, -1, &v, &added) == BW_OK && v == 5, "shared_add's counter");
  CHECK(bw_counter_once(c, "once:mrtr:abc", 4000000000LL, 1000, &first) == BW_OK && first, "an approval mark");
  CHECK(bw_state_count(s, "t", &n) == BW_OK, "count");
  size_t before = n;
  CHECK(bw_state_once(s, "t", "k", 60, &first) == BW_OK && first, "a state mark");
  CHECK(bw_state_count(s, "t", &n) == BW_OK && n == before + 1, "counted for its tenant (%zu, %zu)", before, n);
  CHECK(bw_state_del(s, "t", "k", 0, &del) == BW_OK && del, "deleted");
  CHECK(bw_state_count(s, "t", &n) == BW_OK && n == before, "uncounted");
  CHECK(bw_counter_add(c, "calls", 42, 1, -1, &v, &added) == BW_OK && v == 6, "the quota counter untouched");
  CHECK(bw_counter_once(c, "once:mrtr:abc", 4000000000LL, 1000, &first) == BW_OK && !first, "the mark too");
  char long_key[100];
  memset(long_key, 'k', 95);
  long_key[95] = 0;
  CHECK(bw_state_once(s, "t", long_key, 60, &first) == BW_INVALID_ARGUMENT, "a key too long for the file");
  CHECK(bw_state_once(s, "a\x1f" "b", "k", 60, &first) == BW_INVALID_ARGUMENT, "a tenant with the separator");
  bw_counters_close(c);
  bw_state_close(s);
  unlink(path);
}

int main(void) {
  bw_state *s;
  CHECK(bw_state_open_memory(NULL, &s) == BW_OK && !strcmp(bw_state_kind(s), "memory"), "open");
  test_counter(s);
  test_once(s);
  test_records(s);
  test_arguments(s);
  test_threads(s, 8, 2000);
  test_cas_race(s, 8, 200);
  test_expiry(s, 0.02);
  test_pubsub(s);
  bw_state_close(s);
  test_caps();
  test_flat();
  test_file();
  bw_state *d1, *d2;
  CHECK(bw_state_default(&d1) == BW_OK && bw_state_default(&d2) == BW_OK && d1 == d2, "one default store");
  bw_state_close(d1);
  bw_state_close(d2);
  CHECK(bw_state_default(&d1) == BW_OK, "still there after its users closed it");
  bw_state_close(d1);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
