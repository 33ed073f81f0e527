/*
 * undo_cases.h - undo stores whose records live in a state store
 * (bw_undo_shared, undostate.c), for the C tests of each backend that
 * keeps records (test_undo.c: the embedded store; test_stateredis.c: a
 * real redis-server). Two stores naming one tenant and id stand for two
 * instances: what one records the other peeks and pops, in order; other
 * ids and tenants see nothing; the 1 MiB record, max_records, the
 * tenant's budget and the store's own tenant cap; a key with ".." and a
 * record that is not ours; two threads recording one key at once; a
 * change of several files (its group) read and held across instances.
 */
#ifndef BURROW_TEST_UNDO_CASES_H
#define BURROW_TEST_UNDO_CASES_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "state.h"
#include "undo.h"

#define UID_A "0123456789abcdef0123456789abcdef"
#define UID_B "fedcba9876543210fedcba9876543210"

static const char *ucase_detail(void) { return bw_detail() ? bw_detail() : ""; }

/* A store for tenant t and id over s (as an instance makes one). */
static bw_undo *ushared(bw_state *s, const char *t, const char *id, size_t records, size_t budget) {
  return bw_undo_shared(s, t, id, 64 << 20, records, budget, 0, 3600);
}

static int top_is(bw_undo *u, const char *key, int kind, const char *before, const char *after) {
  bw_undo_entry e;
  int rc = bw_undo_peek(u, key, &e), ok = rc == 1 && e.kind == kind && !strcmp(e.after, after) &&
                                        (!before || (e.len == strlen(before) && !memcmp(e.before, before, e.len)));
  if (rc == 1) bw_undo_entry_free(&e);
  return ok;
}

static void ucase_instances(bw_state *s1, bw_state *s2) {
  bw_undo *a = ushared(s1, "acme", UID_A, 64, 0), *b = ushared(s2, "acme", UID_A, 64, 0);
  CHECK(a && b && bw_undo_is_shared(a), "two instances' stores");
  CHECK(bw_undo_record(a, "1:f", BW_UNDO_ABSENT, NULL, 0, 0, "h1") == BW_UNDO_ABSENT, "recorded on one (%s)",
        ucase_detail());
  CHECK(bw_undo_record(b, "1:f", BW_UNDO_CONTENT, "one", 3, 0, "h2") == BW_UNDO_CONTENT, "then on the other");
  CHECK(bw_undo_record(a, "1:f", BW_UNDO_TRUNCATE, NULL, 0, 3, "h3") == BW_UNDO_TRUNCATE, "then the first");
  CHECK(bw_undo_record_splice(b, "1:g", "cell", 4, 10, 7, "h4") == BW_UNDO_SPLICE, "a splice");
  size_t d = 0;
  CHECK(bw_undo_check(b, "1:f", &d) == BW_OK && d == 3 && bw_undo_depth(a, "1:f") == 3, "both see 3 (%zu)", d);
  bw_undo_entry e;
  CHECK(bw_undo_peek(b, "1:f", &e) == 1 && e.kind == BW_UNDO_TRUNCATE && e.size == 3 && !strcmp(e.after, "h3"),
        "the other sees the newest");
  bw_undo_entry_free(&e);
  CHECK(bw_undo_pop(b, "1:f") == BW_OK, "undone there");
  CHECK(top_is(a, "1:f", BW_UNDO_CONTENT, "one", "h2"), "the first sees the next one down");
  CHECK(bw_undo_pop(a, "1:f") == BW_OK && top_is(b, "1:f", BW_UNDO_ABSENT, NULL, "h1"), "in order");
  CHECK(bw_undo_pop(b, "1:f") == BW_OK && bw_undo_peek(a, "1:f", &e) == 0 && bw_undo_depth(b, "1:f") == 0,
        "none left");
  CHECK(bw_undo_pop(a, "1:f") == BW_OK, "popping nothing is no error");
  CHECK(bw_undo_peek(a, "1:g", &e) == 1 && e.kind == BW_UNDO_SPLICE && e.size == 10 && e.cut == 7 && e.len == 4 &&
            !memcmp(e.before, "cell", 4),
        "the splice whole");
  bw_undo_entry_free(&e);
  /* a change recorded through another instance between an undo's peek
   * and its pop stays: the pop takes the record that was peeked */
  CHECK(bw_undo_record(a, "1:p", BW_UNDO_ABSENT, NULL, 0, 0, "p1") == BW_UNDO_ABSENT && top_is(a, "1:p", BW_UNDO_ABSENT, NULL, "p1"),
        "peeked on one");
  CHECK(bw_undo_record(b, "1:p", BW_UNDO_CONTENT, "x", 1, 0, "p2") == BW_UNDO_CONTENT, "another change on the other");
  CHECK(bw_undo_pop(a, "1:p") == BW_OK && bw_undo_depth(b, "1:p") == 1 && top_is(b, "1:p", BW_UNDO_CONTENT, "x", "p2"),
        "the pop took the peeked record, the newer one stays");
  /* an empty file's content is content, not a marker */
  CHECK(bw_undo_record(a, "1:empty", BW_UNDO_CONTENT, "", 0, 0, "h0") == BW_UNDO_CONTENT &&
            top_is(b, "1:empty", BW_UNDO_CONTENT, "", "h0"),
        "empty content");
  /* other principals: another id (another token or session), another
   * tenant with the same id */
  bw_undo *o = ushared(s2, "acme", UID_B, 64, 0), *t = ushared(s2, "other", UID_A, 64, 0);
  CHECK(bw_undo_peek(o, "1:g", &e) == 0 && bw_undo_depth(o, "1:g") == 0, "another id sees nothing");
  CHECK(bw_undo_peek(t, "1:g", &e) == 0, "another tenant with the same id sees nothing");
  CHECK(bw_undo_pop(o, "1:g") == BW_OK && bw_undo_pop(t, "1:g") == BW_OK && bw_undo_depth(a, "1:g") == 1,
        "nor can pop it");
  /* a key with "..": its own record, never another key's */
  CHECK(bw_undo_record(a, "1:../g", BW_UNDO_ABSENT, NULL, 0, 0, "hx") == BW_UNDO_ABSENT, "a key with ..");
  CHECK(top_is(b, "1:g", BW_UNDO_SPLICE, "cell", "h4") && bw_undo_depth(b, "1:../g") == 1, "kept apart");
  char key[200], hash[BW_HASH_STR];
  bw_sha256("1:g", 3, hash);
  snprintf(key, sizeof key, "undo/%s/%s", UID_A, hash + 7);
  char *val = NULL;
  size_t len = 0;
  uint64_t ver = 0;
  CHECK(bw_state_get(s1, "acme", key, &val, &len, &ver) == BW_OK && val && len > 12 && !memcmp(val, "BWU1", 4),
        "the record is the tenant's, at undo/<id>/<sha256 of the key>");
  /* a record that is not ours (garbage, or another key's bytes): nothing,
   * and a record over it starts afresh */
  int done = 0;
  CHECK(bw_state_cas(s1, "acme", key, ver, "BWU1\0\0\0\3" "1:x" "\0\0\0\1garbage", 18, 60, &done, &ver) ==
                BW_OK && done,
        "overwritten with another key's head");
  CHECK(bw_undo_peek(b, "1:g", &e) == 0, "not read as this key's");
  CHECK(bw_undo_record(b, "1:g", BW_UNDO_ABSENT, NULL, 0, 0, "h5") == BW_UNDO_ABSENT && bw_undo_depth(a, "1:g") == 1,
        "a new history over it");
  free(val);
  bw_undo_unref(a), bw_undo_unref(b), bw_undo_unref(o), bw_undo_unref(t);
}

static void ucase_bounds(bw_state *s) {
  bw_undo *u = ushared(s, "bounds", UID_A, 3, 0);
  for (int i = 0; i < 5; i++) {
    char after[16]; /* room for any int (make sanitize's -O1 warns) */
    snprintf(after, sizeof after, "h%d", i);
    bw_undo_record(u, "1:f", BW_UNDO_ABSENT, NULL, 0, 0, after);
  }
  CHECK(bw_undo_depth(u, "1:f") == 3 && top_is(u, "1:f", BW_UNDO_ABSENT, NULL, "h4"), "max_records: the newest 3");
  /* one record is at most 1 MiB: a change that cannot fit is a marker
   * with its size, and big ones push the oldest out */
  size_t big = (size_t)BW_STATE_VALUE_MAX + 10;
  char *buf = calloc(1, big);
  CHECK(bw_undo_record(u, "1:big", BW_UNDO_CONTENT, buf, big, 0, "hb") == BW_UNDO_TOO_LARGE, "over 1 MiB: a marker");
  bw_undo_entry e;
  CHECK(bw_undo_peek(u, "1:big", &e) == 1 && e.kind == BW_UNDO_TOO_LARGE && e.size == (long long)big && !e.before,
        "with its size");
  bw_undo_entry_free(&e);
  bw_undo *v = ushared(s, "bounds", UID_B, 64, 0);
  for (int i = 0; i < 3; i++) {
    buf[0] = (char)('a' + i);
    CHECK(bw_undo_record(v, "1:half", BW_UNDO_CONTENT, buf, 400 * 1024, 0, i == 2 ? "last" : "h") ==
              BW_UNDO_CONTENT,
          "400 KiB #%d (%s)", i, ucase_detail());
  }
  CHECK(bw_undo_depth(v, "1:half") == 2 && bw_undo_peek(v, "1:half", &e) == 1 && e.before[0] == 'c' &&
            e.len == 400 * 1024,
        "three of 400 KiB: the oldest went to fit 1 MiB");
  bw_undo_entry_free(&e);
  free(buf);
  bw_undo_unref(u), bw_undo_unref(v);
}

/* keys a group's take hands over */
typedef struct ugot {
  int n;
  char k[4][16];
} ugot;
static void ugot_add(void *arg, const char *key) {
  ugot *g = arg;
  if (g->n < 4) snprintf(g->k[g->n], sizeof g->k[0], "%s", key);
  g->n++;
}

/* The tenant's budget: what its stores hold in all, whichever instance. */
static void ucase_budget(bw_state *s) {
  bw_undo *a = ushared(s, "budget", UID_A, 64, 20000), *b = ushared(s, "budget", UID_B, 64, 20000);
  char *buf = calloc(1, 12000);
  CHECK(bw_undo_record(a, "1:a", BW_UNDO_CONTENT, buf, 12000, 0, "ha") == BW_UNDO_CONTENT, "within the budget");
  CHECK(bw_undo_record(b, "1:b", BW_UNDO_CONTENT, buf, 12000, 0, "hb") == BW_UNDO_NO_ROOM,
        "another store of the tenant past it: a marker");
  bw_undo_entry e;
  CHECK(bw_undo_peek(b, "1:b", &e) == 1 && e.kind == BW_UNDO_NO_ROOM && e.size == 12000, "that says its size");
  bw_undo_entry_free(&e);
  CHECK(top_is(a, "1:a", BW_UNDO_CONTENT, NULL, "ha"), "the first store's record kept");
  size_t used, n, bb;
  bw_undo_totals(a, &used, &n, &bb);
  CHECK(bb >= 12000 && bb <= 20000, "the tenant's counter: %zu", bb);
  /* the same key: its own oldest go first */
  CHECK(bw_undo_record(a, "1:a", BW_UNDO_CONTENT, buf, 12000, 0, "ha2") == BW_UNDO_CONTENT &&
            bw_undo_depth(a, "1:a") == 1,
        "a second change of the same file drops its older one to fit");
  CHECK(bw_undo_pop(a, "1:a") == BW_OK, "undone");
  bw_undo_totals(a, &used, &n, &bb);
  CHECK(bb < 12000, "its bytes given back: %zu", bb);
  CHECK(bw_undo_record(b, "1:b", BW_UNDO_CONTENT, buf, 12000, 0, "hb2") == BW_UNDO_CONTENT, "then the other fits");
  /* a change's group record is charged too: long paths cannot hold the
   * tenant's share past its budget */
  char *keys[4];
  for (int i = 0; i < 4; i++) {
    keys[i] = malloc(4001);
    memset(keys[i], 'a' + i, 4000);
    keys[i][4000] = 0;
  }
  CHECK(bw_undo_group_put(a, "big:4", (const char *const *)keys, 4) == BW_TOO_LARGE, "a group past the budget: refused (%s)",
        ucase_detail());
  bw_undo_totals(a, &used, &n, &bb);
  CHECK(bb <= 20000, "nothing charged for it: %zu", bb);
  CHECK(bw_undo_group_put(a, "small:1", (const char *const *)keys, 1) == BW_OK, "one within it is kept");
  size_t before = bb;
  bw_undo_totals(a, &used, &n, &bb);
  CHECK(bb > before + 4000, "and charged: %zu", bb);
  ugot g = {0};
  CHECK(bw_undo_group_take(b, "small:1", ugot_add, &g) == 0, "not by another store of the tenant");
  CHECK(bw_undo_group_take(a, "small:1", ugot_add, &g) == 1, "held by an undo");
  CHECK(bw_undo_group_done(a, "small:1") == BW_OK, "undone");
  bw_undo_totals(a, &used, &n, &bb);
  CHECK(bb == before, "its charge given back: %zu", bb);
  for (int i = 0; i < 4; i++) free(keys[i]);
  free(buf);
  bw_undo_unref(a), bw_undo_unref(b);
}

typedef struct urace {
  bw_undo *u;
  int id, ok;
} urace;

static void *urace_run(void *ud) {
  urace *r = ud;
  char after[32];
  for (int i = 0; i < 30; i++) {
    snprintf(after, sizeof after, "t%d-%d", r->id, i);
    int rc = bw_undo_record(r->u, "1:race", BW_UNDO_ABSENT, NULL, 0, 0, after);
    if (rc == BW_UNDO_ABSENT) r->ok++;
    else printf("# race: %d (%s)\n", rc, ucase_detail());
  }
  return NULL;
}

/* Two instances recording one file at once: compare-and-set loses none. */
static void ucase_race(bw_state *s1, bw_state *s2) {
  bw_undo *a = ushared(s1, "race", UID_A, 128, 0), *b = ushared(s2, "race", UID_A, 128, 0);
  urace r[2] = {{a, 0, 0}, {b, 1, 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, urace_run, &r[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  CHECK(r[0].ok + r[1].ok == 60 && bw_undo_depth(a, "1:race") == 60, "60 records from two at once: %d kept, depth %zu",
        r[0].ok + r[1].ok, bw_undo_depth(a, "1:race"));
  bw_undo_unref(a), bw_undo_unref(b);
}

/* The store's own share of the tenant full (its max_bytes_per_tenant):
 * the change is kept as a marker, or not at all, never an error. */
static void ucase_tenant_cap(bw_state *small) {
  bw_undo *u = ushared(small, "capped", UID_A, 64, 0);
  char *buf = calloc(1, 8000);
  int kind = bw_undo_record(u, "1:f", BW_UNDO_CONTENT, buf, 8000, 0, "h");
  CHECK(kind == BW_UNDO_NO_ROOM, "past the store's tenant share: no room (%d, %s)", kind, ucase_detail());
  bw_undo_entry e;
  CHECK(bw_undo_peek(u, "1:f", &e) == 1 && e.kind == BW_UNDO_NO_ROOM && e.size == 8000, "the marker says so");
  bw_undo_entry_free(&e);
  free(buf);
  bw_undo_unref(u);
}

/* A store that does not answer: every operation says so. */
__attribute__((unused)) static void ucase_down(bw_state *down) {
  bw_undo *u = ushared(down, "acme", UID_A, 64, 1000);
  size_t d = 9;
  bw_undo_entry e;
  int rc = bw_undo_record(u, "1:f", BW_UNDO_ABSENT, NULL, 0, 0, "h");
  CHECK(rc == -BW_STORE_UNAVAILABLE, "record: %d (%s)", rc, ucase_detail());
  CHECK(bw_undo_peek(u, "1:f", &e) == -BW_STORE_UNAVAILABLE, "peek");
  CHECK(bw_undo_pop(u, "1:f") == BW_STORE_UNAVAILABLE, "pop");
  CHECK(bw_undo_check(u, "1:f", &d) == BW_STORE_UNAVAILABLE && d == 0, "check (before a change)");
  ugot g = {0};
  const char *keys[] = {"1:f"};
  CHECK(bw_undo_group_put(u, "g:1", keys, 1) == BW_STORE_UNAVAILABLE, "a group's record");
  CHECK(bw_undo_group_take(u, "g:1", ugot_add, &g) == -BW_STORE_UNAVAILABLE && g.n == 0, "its hold: no yes");
  CHECK(bw_undo_group_release(u, "g:1") == BW_STORE_UNAVAILABLE, "its release");
  CHECK(bw_undo_group_done(u, "g:1") == BW_STORE_UNAVAILABLE, "its drop");
  bw_undo_unref(u);
}

/* A change of several files (edit_files): each record carries its group,
 * which another instance reads; the group's record is held whole by one
 * call only, let go after a failed undo, dropped after one that went
 * through. */
static void ucase_group(bw_state *s1, bw_state *s2) {
  bw_undo *a = ushared(s1, "acme", UID_B, 64, 0), *b = ushared(s2, "acme", UID_B, 64, 0);
  CHECK(bw_undo_record(a, "1:x", BW_UNDO_ABSENT, NULL, 0, 0, "x0") == BW_UNDO_ABSENT, "a plain change first");
  CHECK(bw_undo_record_group(a, "1:x", BW_UNDO_CONTENT, "x1", 2, 0, "x2", "g1:2") == BW_UNDO_CONTENT &&
            bw_undo_record_group(a, "2:y", BW_UNDO_ABSENT, NULL, 0, 0, "y1", "g1:2") == BW_UNDO_ABSENT,
        "two files of one change (%s)", ucase_detail());
  const char *keys[] = {"1:x", "2:y"};
  CHECK(bw_undo_group_put(a, "g1:2", keys, 2) == BW_OK, "the group's record (%s)", ucase_detail());
  bw_undo_entry e;
  CHECK(bw_undo_peek(b, "2:y", &e) == 1 && e.group && !strcmp(e.group, "g1:2"), "the other instance sees the group");
  bw_undo_entry_free(&e);
  CHECK(top_is(b, "1:x", BW_UNDO_CONTENT, "x1", "x2"), "and the bytes beside it");
  ugot g1 = {0}, g2 = {0}, g3 = {0};
  CHECK(bw_undo_group_take(b, "g1:2", ugot_add, &g1) == 2 && g1.n == 2 && !strcmp(g1.k[0], "1:x") &&
            !strcmp(g1.k[1], "2:y"),
        "held whole by one (%d)", g1.n);
  CHECK(bw_undo_group_take(a, "g1:2", ugot_add, &g2) == -BW_EAGAIN && g2.n == 0, "then by no other (%s)",
        ucase_detail());
  CHECK(bw_undo_group_release(b, "g1:2") == BW_OK && bw_undo_group_take(a, "g1:2", ugot_add, &g2) == 2,
        "let go after a failed undo, held again");
  CHECK(bw_undo_pop(a, "1:x") == BW_OK && top_is(b, "1:x", BW_UNDO_ABSENT, NULL, "x0"), "the plain change below stays");
  CHECK(bw_undo_group_done(a, "g1:2") == BW_OK && bw_undo_group_take(b, "g1:2", ugot_add, &g3) == 0 && g3.n == 0,
        "undone: gone for every instance");
  CHECK(bw_undo_peek(b, "1:x", &e) == 1 && !e.group, "with no group");
  bw_undo_entry_free(&e);
  CHECK(bw_undo_group_take(a, "never", ugot_add, &g2) == 0, "an unknown group: none");
  bw_undo_unref(a);
  bw_undo_unref(b);
}

static void undo_cases(bw_state *s1, bw_state *s2) {
  ucase_instances(s1, s2);
  ucase_group(s1, s2);
  ucase_bounds(s1);
  ucase_budget(s2);
  ucase_race(s1, s2);
}

#endif
