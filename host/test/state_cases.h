/*
 * state_cases.h - the behaviours every state store backend shares, for
 * the C tests of each (test_state.c: the embedded store and the counter
 * file; test_stateredis.c: Redis/Valkey): counters up to a limit, marks,
 * records and their compare-and-set, argument checks, exactness under
 * threads, expiry (waited for, never slept for). A backend without
 * records (the file) skips their cases by its kind.
 */
#ifndef BURROW_TEST_STATE_CASES_H
#define BURROW_TEST_STATE_CASES_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "state.h"

static const char *detail(void) { return bw_detail() ? bw_detail() : ""; }

/* Call fn until it says the state was reached, at most 30 s of tries. */
static int wait_for(int (*fn)(void *), void *ud) {
  int64_t until = bw_now_ms() + 30000;
  while (bw_now_ms() < until) {
    if (fn(ud)) return 1;
    usleep(1000);
  }
  return 0;
}

static void test_counter(bw_state *s) {
  int added = -1;
  int64_t v = -1;
  CHECK(bw_state_add(s, "t", "c", 3, 10, 60, &added, &v) == BW_OK && added && v == 3, "add 3 (%s)", detail());
  CHECK(bw_state_add(s, "t", "c", 7, 10, 60, &added, &v) == BW_OK && added && v == 10, "up to the limit: %lld", (long long)v);
  CHECK(bw_state_add(s, "t", "c", 1, 10, 60, &added, &v) == BW_OK && !added && v == 10, "past it: refused, value kept");
  CHECK(bw_state_add(s, "t", "c", -20, -1, 60, &added, &v) == BW_OK && added && v == 0, "below 0: kept at 0");
  CHECK(bw_state_add(s, "t", "c", 5, -1, 60, &added, &v) == BW_OK && added && v == 5, "no limit");
  CHECK(bw_state_add(s, "u", "c", 1, -1, 60, &added, &v) == BW_OK && v == 1, "another tenant, the same key: its own");
  CHECK(bw_state_add(s, "t", "fresh", 11, 10, 60, &added, &v) == BW_OK && !added && v == 0,
        "a refused first addition");
  size_t n = 0;
  CHECK(bw_state_count(s, "t", &n) == BW_OK && n == 1, "and it made no entry (%zu)", n);
  int first;
  if (strcmp(bw_state_kind(s), "file")) /* the file keeps kinds apart */
    CHECK(bw_state_once(s, "t", "c", 60, &first) == BW_INVALID_ARGUMENT, "a counter's key is no mark");
}

static void test_once(bw_state *s) {
  int first = -1;
  CHECK(bw_state_once(s, "t", "m", 60, &first) == BW_OK && first == 1, "first (%s)", detail());
  CHECK(bw_state_once(s, "t", "m", 60, &first) == BW_OK && first == 0, "then a replay");
  CHECK(bw_state_once(s, "t2", "m", 60, &first) == BW_OK && first == 1, "another tenant's own");
  CHECK(bw_state_once(s, "", "m", 60, &first) == BW_OK && first == 1, "the empty tenant is one too");
}

static void test_records(bw_state *s) {
  char *val = NULL;
  size_t len = 9;
  uint64_t ver = 9, v1, v2;
  int done = -1, del = -1;
  CHECK(bw_state_get(s, "t", "r", &val, &len, &ver) == BW_OK && !val && len == 0 && ver == 0, "absent");
  CHECK(bw_state_cas(s, "t", "r", 0, "one", 3, 60, &done, &v1) == BW_OK && done && v1 > 0, "created");
  CHECK(bw_state_cas(s, "t", "r", 0, "two", 3, 60, &done, &ver) == BW_OK && !done && ver == v1,
        "create-only when it exists: refused, its version told");
  CHECK(bw_state_cas(s, "t", "r", v1 + 100, "two", 3, 60, &done, &ver) == BW_OK && !done && ver == v1,
        "a stale version: refused");
  CHECK(bw_state_cas(s, "t", "r", v1, "three", 5, 60, &done, &v2) == BW_OK && done && v2 > v1, "the right one: written");
  CHECK(bw_state_cas(s, "t", "r", v1, "four", 4, 60, &done, &ver) == BW_OK && !done && ver == v2,
        "the loser of a race sees the winner's version");
  CHECK(bw_state_get(s, "t", "r", &val, &len, &ver) == BW_OK && val && len == 5 && !memcmp(val, "three", 5) && ver == v2,
        "read back");
  free(val);
  CHECK(bw_state_cas(s, "t", "empty", 0, NULL, 0, 60, &done, &ver) == BW_OK && done, "an empty value");
  CHECK(bw_state_get(s, "t", "empty", &val, &len, &ver) == BW_OK && val && len == 0 && ver > 0, "is there, empty");
  free(val);
  CHECK(bw_state_del(s, "t", "r", v1, &del) == BW_OK && !del, "delete at a stale version: kept");
  CHECK(bw_state_del(s, "t", "r", v2, &del) == BW_OK && del, "at its version: gone");
  CHECK(bw_state_get(s, "t", "r", &val, &len, &ver) == BW_OK && !val && ver == 0, "absent again");
  CHECK(bw_state_cas(s, "t", "r", 0, "again", 5, 60, &done, &ver) == BW_OK && done && ver > v2,
        "made again: a version never used before");
  CHECK(bw_state_del(s, "t", "r", 0, &del) == BW_OK && del, "delete whatever it is");
  CHECK(bw_state_get(s, "t", "m", &val, &len, &ver) == BW_INVALID_ARGUMENT, "a mark is no record");
}

static void test_arguments(bw_state *s) {
  int first;
  char big[300];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  CHECK(bw_state_once(s, "t", "k", 0, &first) == BW_INVALID_ARGUMENT, "ttl 0");
  CHECK(bw_state_once(s, "t", "k", -1, &first) == BW_INVALID_ARGUMENT, "ttl < 0");
  CHECK(bw_state_once(s, "t", "k", 1e12, &first) == BW_INVALID_ARGUMENT, "ttl past a year");
  CHECK(bw_state_once(s, "t", "", 1, &first) == BW_INVALID_ARGUMENT, "empty key");
  CHECK(bw_state_once(s, big, "k", 1, &first) == BW_INVALID_ARGUMENT, "tenant over 255 bytes");
  char *huge = calloc(1, BW_STATE_VALUE_MAX + 1);
  int done;
  uint64_t ver;
  CHECK(bw_state_cas(s, "t", "h", 0, huge, BW_STATE_VALUE_MAX + 1, 1, &done, &ver) == BW_TOO_LARGE,
        "a value over 1 MiB");
  free(huge);
}

/* ---- threads */

typedef struct race {
  bw_state *s;
  int tries, added, firsts;
} race;

static void *adder(void *ud) {
  race *r = ud;
  for (int i = 0; i < r->tries; i++) {
    int added;
    int64_t v;
    if (bw_state_add(r->s, "t", "shared", 1, 10000, 600, &added, &v) == BW_OK && added) r->added++;
  }
  /* the same 1000 marks, every thread */
  char key[32];
  for (int i = 0; i < 1000; i++) {
    int first;
    snprintf(key, sizeof key, "m%d", i);
    if (bw_state_once(r->s, "race", key, 600, &first) == BW_OK && first) r->firsts++;
  }
  return NULL;
}

static void test_threads(bw_state *s, int nthreads, int tries) {
  pthread_t th[8];
  race r[8];
  for (int i = 0; i < nthreads; i++) {
    r[i] = (race){s, tries, 0, 0};
    pthread_create(&th[i], NULL, adder, &r[i]);
  }
  int added = 0, firsts = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(th[i], NULL);
    added += r[i].added;
    firsts += r[i].firsts;
  }
  int want = nthreads * tries < 10000 ? nthreads * tries : 10000;
  int64_t v = 0;
  int a;
  bw_state_add(s, "t", "shared", 0, -1, 600, &a, &v);
  CHECK(added == want && v == want, "%s: %d threads: %d added, value %lld, want %d", bw_state_kind(s),
        nthreads, added, (long long)v, want);
  CHECK(firsts == 1000, "%s: each of 1000 marks first once among %d threads (%d)", bw_state_kind(s), nthreads,
        firsts);
}

/* A record as a shared counter: each thread reads it, then writes the
 * next value at the version it read, again on a conflict. No update is
 * lost or doubled: the final value is the number of writes. */
typedef struct casrace {
  bw_state *s;
  int tries, conflicts, errors;
} casrace;

static void *cas_bumper(void *ud) {
  casrace *c = ud;
  for (int i = 0; i < c->tries;) {
    char *val = NULL, buf[32];
    size_t len = 0;
    uint64_t ver = 0, now;
    int done = 0;
    if (bw_state_get(c->s, "t", "casctr", &val, &len, &ver) != BW_OK) {
      c->errors++;
      break;
    }
    char text[32] = ""; /* the value is not NUL-terminated */
    if (val) memcpy(text, val, len < 31 ? len : 31);
    free(val);
    long n = atol(text);
    int l = snprintf(buf, sizeof buf, "%ld", n + 1);
    if (bw_state_cas(c->s, "t", "casctr", ver, buf, (size_t)l, 600, &done, &now) != BW_OK) {
      c->errors++;
      break;
    }
    if (done) i++;
    else c->conflicts++;
  }
  return NULL;
}

static void test_cas_race(bw_state *s, int nthreads, int tries) {
  pthread_t th[8];
  casrace c[8];
  for (int i = 0; i < nthreads; i++) {
    c[i] = (casrace){s, tries, 0, 0};
    pthread_create(&th[i], NULL, cas_bumper, &c[i]);
  }
  int conflicts = 0, errors = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(th[i], NULL);
    conflicts += c[i].conflicts;
    errors += c[i].errors;
  }
  char *val = NULL;
  size_t len = 0;
  uint64_t ver;
  bw_state_get(s, "t", "casctr", &val, &len, &ver);
  char text[32] = "";
  if (val) memcpy(text, val, len < 31 ? len : 31);
  free(val);
  CHECK(errors == 0 && atol(text) == (long)nthreads * tries,
        "%s: %d threads x %d compare-and-set increments: %s (%d conflicts retried, %d errors)", bw_state_kind(s),
        nthreads, tries, text, conflicts, errors);
}

/* ---- expiry */

typedef struct probe {
  bw_state *s;
  const char *key;
} probe;

static int mark_free_again(void *ud) {
  probe *p = ud;
  int first = 0;
  return bw_state_once(p->s, "t", p->key, 3600, &first) == BW_OK && first;
}

static int window_restarted(void *ud) {
  probe *p = ud;
  int added;
  int64_t v = 0;
  return bw_state_add(p->s, "t", p->key, 1, -1, 0.02, &added, &v) == BW_OK && v == 1;
}

static int record_gone(void *ud) {
  probe *p = ud;
  char *val = NULL;
  size_t len;
  uint64_t ver = 1;
  int rc = bw_state_get(p->s, "t", p->key, &val, &len, &ver);
  free(val);
  return rc == BW_OK && ver == 0;
}

static void test_expiry(bw_state *s, double short_ttl) {
  int first, added, done;
  int64_t v;
  uint64_t ver;
  CHECK(bw_state_once(s, "t", "long", 3600, &first) == BW_OK && first, "a long mark");
  CHECK(bw_state_once(s, "t", "short", short_ttl, &first) == BW_OK && first, "a short mark");
  probe p = {s, "short"};
  CHECK(wait_for(mark_free_again, &p), "%s: the short mark expires: first again", bw_state_kind(s));
  CHECK(bw_state_once(s, "t", "long", 3600, &first) == BW_OK && !first, "the long one still lives");
  /* a counter's window: from its creation, not extended by additions */
  CHECK(bw_state_add(s, "t", "win", 1, -1, short_ttl, &added, &v) == BW_OK && v == 1, "a window opens");
  probe w = {s, "win"};
  CHECK(wait_for(window_restarted, &w), "%s: a new window starts from 0", bw_state_kind(s));
  if (!strcmp(bw_state_kind(s), "file")) return; /* no records */
  CHECK(bw_state_cas(s, "t", "rec", 0, "x", 1, short_ttl, &done, &ver) == BW_OK && done, "a short record");
  probe r = {s, "rec"};
  CHECK(wait_for(record_gone, &r), "the record expires");
}

/* ---- publish/subscribe */

typedef struct heard {
  bw_state_sub *sub;
  int msgs, gaps;
  char last[64];
  size_t last_len;
} heard;

/* Take what waits (never blocks); true once at least want messages came. */
static int take_all(heard *h) {
  char *ch, *msg;
  size_t len;
  int gap;
  while (bw_state_sub_next(h->sub, &ch, &msg, &len, &gap) == BW_OK) {
    if (gap) {
      h->gaps++;
      continue;
    }
    h->msgs++;
    h->last_len = len < sizeof h->last ? len : sizeof h->last - 1;
    memcpy(h->last, msg, h->last_len);
    h->last[h->last_len] = 0;
    free(ch);
    free(msg);
  }
  return 0;
}

typedef struct want {
  heard *h;
  int msgs;
} want;

static int got_msgs(void *ud) {
  want *w = ud;
  take_all(w->h);
  return w->h->msgs >= w->msgs;
}

static void test_pubsub(bw_state *s) {
  heard a = {0}, b = {0}, other = {0};
  const char *ch[] = {"changes"}, *ch2[] = {"elsewhere"};
  CHECK(bw_state_subscribe(s, "ta", ch, 1, &a.sub) == BW_OK, "subscribe (%s)", detail());
  CHECK(bw_state_subscribe(s, "tb", ch, 1, &b.sub) == BW_OK, "another tenant's (%s)", detail());
  CHECK(bw_state_subscribe(s, "ta", ch2, 1, &other.sub) == BW_OK, "another channel (%s)", detail());
  CHECK(bw_state_sub_fd(a.sub) >= 0, "an fd to poll");
  CHECK(bw_state_publish(s, "ta", "changes", "hello\0x", 7) == BW_OK, "publish (%s)", detail());
  want w = {&a, 1};
  CHECK(wait_for(got_msgs, &w), "the subscriber hears it");
  CHECK(a.last_len == 7 && !memcmp(a.last, "hello\0x", 7), "bytes as sent, NUL too");
  /* a marker after it: once it arrives, the first one had its chance */
  CHECK(bw_state_publish(s, "tb", "changes", "for b", 5) == BW_OK, "b's own");
  want wb = {&b, 1};
  CHECK(wait_for(got_msgs, &wb), "b hears its own");
  take_all(&other);
  CHECK(b.msgs == 1 && !strcmp(b.last, "for b"), "b never heard a's (%d)", b.msgs);
  CHECK(other.msgs == 0, "nor did another channel of a's");
  CHECK(a.msgs == 1, "and a not b's (%d)", a.msgs);
  /* arguments */
  char *big = calloc(1, BW_STATE_MESSAGE_MAX + 1);
  CHECK(bw_state_publish(s, "ta", "changes", big, BW_STATE_MESSAGE_MAX + 1) == BW_TOO_LARGE, "oversized");
  CHECK(bw_state_publish(s, "ta", "changes", big, BW_STATE_MESSAGE_MAX) == BW_OK, "at the limit");
  free(big);
  CHECK(bw_state_publish(s, "ta", "a:b", "x", 1) == BW_INVALID_ARGUMENT, "a channel with ':'");
  CHECK(bw_state_publish(s, "ta", "", "x", 1) == BW_INVALID_ARGUMENT, "an empty channel");
  const char *bad[] = {"x*"};
  bw_state_sub *no = NULL;
  CHECK(bw_state_subscribe(s, "ta", bad, 1, &no) == BW_INVALID_ARGUMENT && !no, "no pattern subscriptions");
  /* a flood at a subscriber that does not read: the publisher is never
   * held, the queue stays within its cap, and the reader is told */
  int ok = 0;
  for (int i = 0; i < 5000; i++) ok += bw_state_publish(s, "ta", "changes", "flood", 5) == BW_OK;
  CHECK(ok == 5000, "every publish returned at once (%d)", ok);
  CHECK(bw_state_publish(s, "ta", "changes", "last", 4) == BW_OK, "one more");
  heard flood = {.sub = a.sub};
  /* wait until the flood has all arrived (Redis: asynchronously) before
   * reading any of it (reading while it arrives makes room for more):
   * a marker to b after it, through the same subscriptions, comes after
   * every message of the flood; then a's queue is what it will be */
  CHECK(bw_state_publish(s, "tb", "changes", "after the flood", 15) == BW_OK, "b's marker");
  want wb2 = {&b, 2};
  CHECK(wait_for(got_msgs, &wb2), "b hears its marker");
  take_all(&flood);
  CHECK(flood.gaps >= 1, "a gap told (%d)", flood.gaps);
  CHECK(flood.msgs <= BW_STATE_SUB_QUEUE + 1, "at most the queue's cap arrived (%d)", flood.msgs);
  /* after the drain it works as before */
  heard after = {.sub = a.sub};
  CHECK(bw_state_publish(s, "ta", "changes", "again", 5) == BW_OK, "publish after");
  want wa = {&after, 1};
  int64_t until = bw_now_ms() + 30000;
  while (bw_now_ms() < until && !(after.msgs && !strcmp(after.last, "again"))) {
    take_all(&after);
    usleep(1000);
  }
  CHECK(!strcmp(after.last, "again"), "heard after the flood (%s)", after.last);
  (void)wa;
  bw_state_unsubscribe(a.sub);
  bw_state_unsubscribe(b.sub);
  bw_state_unsubscribe(other.sub);
  CHECK(bw_state_publish(s, "ta", "changes", "nobody", 6) == BW_OK, "publish with none listening");
}

#endif
