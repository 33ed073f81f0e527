/*
 * test_undo.c - undo stores (undo.c) without Lua: stacks per key, the
 * oldest-first trim by bytes and by records, markers for what cannot fit,
 * splices (a cell's bytes, not the file's), a change of several files as
 * one group (each record carries it, and the group's keys are found),
 * a budget two stores share, ids other threads find the store by, and
 * two threads recording at once; and stores whose records live in the
 * embedded state store (undo_cases.h, which test_stateredis.c runs on
 * Redis).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "undo.h"
#include "undo_cases.h"

static void test_stack(void) {
  bw_undo *u = bw_undo_new(100, 64, NULL, 0);
  CHECK(u != NULL, "new");
  CHECK(bw_undo_record(u, "1:a", BW_UNDO_ABSENT, NULL, 0, 0, "h1") == BW_UNDO_ABSENT, "absent");
  CHECK(bw_undo_record(u, "1:a", BW_UNDO_CONTENT, "one", 3, 0, "h2") == BW_UNDO_CONTENT, "content");
  CHECK(bw_undo_record(u, "1:b", BW_UNDO_TRUNCATE, NULL, 0, 7, "h3") == BW_UNDO_TRUNCATE, "truncate");
  CHECK(bw_undo_depth(u, "1:a") == 2 && bw_undo_depth(u, "1:b") == 1 && bw_undo_depth(u, "1:c") == 0, "depths");
  bw_undo_entry e;
  CHECK(bw_undo_peek(u, "1:a", &e) == 1 && e.kind == BW_UNDO_CONTENT && e.len == 3 &&
            !memcmp(e.before, "one", 3) && !strcmp(e.after, "h2"), "the newest on top");
  bw_undo_entry_free(&e);
  bw_undo_pop(u, "1:a");
  CHECK(bw_undo_peek(u, "1:a", &e) == 1 && e.kind == BW_UNDO_ABSENT && !strcmp(e.after, "h1"), "then the older");
  bw_undo_entry_free(&e);
  bw_undo_pop(u, "1:a");
  CHECK(bw_undo_peek(u, "1:a", &e) == 0 && bw_undo_depth(u, "1:a") == 0, "none left");
  CHECK(bw_undo_peek(u, "1:b", &e) == 1 && e.size == 7, "the other key kept");
  bw_undo_entry_free(&e);
  /* many keys: the buckets grow, every key still found */
  char key[32];
  for (int i = 0; i < 50; i++) {
    snprintf(key, sizeof key, "2:f%d", i);
    bw_undo_record(u, key, BW_UNDO_ABSENT, NULL, 0, 0, "h");
  }
  int found = 0;
  for (int i = 0; i < 50; i++) {
    snprintf(key, sizeof key, "2:f%d", i);
    found += bw_undo_depth(u, key) == 1;
  }
  CHECK(found == 50, "all 50 keys found (%d)", found);
  bw_undo_unref(u);
}

static void test_bounds(void) {
  bw_undo *u = bw_undo_new(10, 4, NULL, 0);
  char big[11] = "0123456789";
  CHECK(bw_undo_record(u, "k", BW_UNDO_CONTENT, big, 11, 0, "h") == BW_UNDO_TOO_LARGE, "over the cap: a marker");
  bw_undo_entry e;
  CHECK(bw_undo_peek(u, "k", &e) == 1 && e.size == 11 && !e.before, "its size, no bytes");
  bw_undo_entry_free(&e);
  bw_undo_record(u, "a", BW_UNDO_CONTENT, "aaaaaa", 6, 0, "h");
  bw_undo_record(u, "b", BW_UNDO_CONTENT, "bbbbbb", 6, 0, "h"); /* 12 > 10: a goes */
  size_t bytes, count, bb;
  bw_undo_totals(u, &bytes, &count, &bb);
  CHECK(bytes == 6 && bw_undo_depth(u, "a") == 0 && bw_undo_depth(u, "b") == 1, "bytes: the oldest went (%zu)", bytes);
  for (int i = 0; i < 10; i++) bw_undo_record(u, "c", BW_UNDO_ABSENT, NULL, 0, 0, "h");
  bw_undo_totals(u, &bytes, &count, &bb);
  CHECK(count == 4 && bw_undo_depth(u, "c") == 4 && bw_undo_depth(u, "b") == 0, "records: at most 4 (%zu)", count);
  bw_undo_unref(u);
}

/* A splice keeps the bytes it replaced, where, and how many the change
 * wrote there; its cost is those bytes alone, bounded as content is. */
static void test_splice(void) {
  bw_undo *u = bw_undo_new(10, 64, NULL, 0);
  CHECK(bw_undo_record_splice(u, "nb", "cell", 4, 120, 7, "h1") == BW_UNDO_SPLICE, "a splice");
  bw_undo_entry e;
  CHECK(bw_undo_peek(u, "nb", &e) == 1 && e.kind == BW_UNDO_SPLICE && e.len == 4 &&
            !memcmp(e.before, "cell", 4) && e.size == 120 && e.cut == 7 && !strcmp(e.after, "h1"),
        "its bytes, offset and cut");
  bw_undo_entry_free(&e);
  CHECK(bw_undo_record_splice(u, "nb", "", 0, 5, 30, "h2") == BW_UNDO_SPLICE, "an insert: no bytes");
  CHECK(bw_undo_peek(u, "nb", &e) == 1 && e.len == 0 && e.before && e.cut == 30, "an empty before");
  bw_undo_entry_free(&e);
  size_t bytes, count, bb;
  bw_undo_totals(u, &bytes, &count, &bb);
  CHECK(bytes == 4 && count == 2, "the cost: the bytes kept (%zu)", bytes);
  CHECK(bw_undo_record_splice(u, "nb", "0123456789x", 11, 0, 1, "h3") == BW_UNDO_TOO_LARGE, "over the cap: a marker");
  CHECK(bw_undo_peek(u, "nb", &e) == 1 && e.size == 11 && e.cut == 0 && !e.before, "its size, no bytes");
  bw_undo_entry_free(&e);
  bw_undo_unref(u);
}

static void test_budget(void) {
  bw_undo *a = bw_undo_new(100, 64, "tenant-t", 10);
  bw_undo *b = bw_undo_new(100, 64, "tenant-t", 10);
  CHECK(bw_undo_record(a, "x", BW_UNDO_CONTENT, "aaaaaaaa", 8, 0, "h") == BW_UNDO_CONTENT, "a fits");
  CHECK(bw_undo_record(b, "y", BW_UNDO_CONTENT, "bbbbbbbb", 8, 0, "h") == BW_UNDO_NO_ROOM, "b does not: a's bytes stay");
  bw_undo_entry e;
  CHECK(bw_undo_peek(b, "y", &e) == 1 && e.kind == BW_UNDO_NO_ROOM && e.size == 8, "b's marker");
  bw_undo_entry_free(&e);
  CHECK(bw_undo_depth(a, "x") == 1, "a's record kept");
  CHECK(bw_undo_record(a, "z", BW_UNDO_CONTENT, "cccccc", 6, 0, "h") == BW_UNDO_CONTENT, "a's own oldest goes for a's next");
  CHECK(bw_undo_depth(a, "x") == 0, "x went");
  size_t bytes, count, bb;
  bw_undo_totals(b, &bytes, &count, &bb);
  CHECK(bb == 6, "the budget holds 6 (%zu)", bb);
  char id[33];
  CHECK(bw_undo_publish(a, id) == 0 && strlen(id) == 32, "published");
  bw_undo *f = bw_undo_find(id);
  CHECK(f == a, "found by its id");
  bw_undo_unref(f);
  CHECK(bw_undo_find("00000000000000000000000000000000") == NULL, "no such id");
  bw_undo_drop(a);
  CHECK(bw_undo_find(id) == NULL, "dropped: gone from the registry");
  bw_undo_totals(b, &bytes, &count, &bb);
  CHECK(bb == 0, "its bytes back in the budget (%zu)", bb);
  CHECK(bw_undo_record(b, "y", BW_UNDO_CONTENT, "bbbbbbbb", 8, 0, "h") == BW_UNDO_CONTENT, "now b fits");
  bw_undo_unref(a);
  bw_undo_unref(b);
}

static void *writer(void *arg) {
  bw_undo *u = arg;
  char key[16];
  for (int i = 0; i < 20000; i++) {
    snprintf(key, sizeof key, "k%d", i % 37);
    bw_undo_record(u, key, BW_UNDO_CONTENT, "0123456789", 1 + i % 10, 0, "h");
    if (i % 3 == 0) bw_undo_pop(u, key);
  }
  return NULL;
}

static void test_threads(void) {
  bw_undo *a = bw_undo_new(1000, 100, "tenant-p", 1500);
  bw_undo *b = bw_undo_new(1000, 100, "tenant-p", 1500);
  pthread_t t1, t2;
  pthread_create(&t1, NULL, writer, a);
  pthread_create(&t2, NULL, writer, b);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  size_t ab, ac, bb, bc, budget;
  bw_undo_totals(a, &ab, &ac, &budget);
  bw_undo_totals(b, &bb, &bc, &budget);
  CHECK(budget == ab + bb && ab <= 1000 && bb <= 1000 && budget <= 1500 && ac <= 100 && bc <= 100,
        "the budget is the sum of the stores (%zu = %zu + %zu)", budget, ab, bb);
  bw_undo_unref(a);
  bw_undo_unref(b);
}

/* Two threads naming one store at once find the same one, and a record
 * made through either is the other's. */
static void *name_it(void *arg) {
  return bw_undo_named("stateless00000000000000000000001", 1000, 100, NULL, 0) == arg ? arg : NULL;
}

static void test_named(void) {
  const char *id = "stateless00000000000000000000001";
  bw_undo *a = bw_undo_named(id, 1000, 100, NULL, 0);
  bw_undo *b = bw_undo_named(id, 1000, 100, NULL, 0);
  CHECK(a && a == b, "one name, one store");
  CHECK(bw_undo_record(a, "1:f", BW_UNDO_CONTENT, "old", 3, 3, "sha256:x") == BW_UNDO_CONTENT, "recorded");
  bw_undo_entry e;
  CHECK(bw_undo_peek(b, "1:f", &e) == 1 && e.len == 3 && !memcmp(e.before, "old", 3), "seen through the other");
  bw_undo_entry_free(&e);
  bw_undo *f = bw_undo_find(id);
  CHECK(f == a, "found by its name as by an id");
  pthread_t t[4];
  void *got[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, name_it, a);
  for (int i = 0; i < 4; i++) pthread_join(t[i], &got[i]);
  CHECK(got[0] == a && got[1] == a && got[2] == a && got[3] == a, "threads find the same store");
  for (int i = 0; i < 4; i++) bw_undo_unref(a); /* the threads' references */
  bw_undo_unref(f);
  bw_undo_unref(b);
  bw_undo_drop(a);
  bw_undo_unref(a);
  CHECK(bw_undo_find(id) == NULL, "dropped");
  bw_undo *c = bw_undo_named("stateless00000000000000000000002", 10, 100, NULL, 0);
  CHECK(c && c != a, "another name, another store");
  bw_undo_drop(c);
  bw_undo_unref(c);
}

/* each record of an edit_files change carries its group */
static void add_key(void *arg, const char *key) {
  char *out = arg;
  strcat(out, key);
  strcat(out, ";");
}

static void test_group(void) {
  bw_undo *u = bw_undo_new(1000, 64, NULL, 0);
  bw_undo_record(u, "1:a", BW_UNDO_CONTENT, "a0", 2, 0, "ha0");
  CHECK(bw_undo_record_group(u, "1:a", BW_UNDO_CONTENT, "a1", 2, 0, "ha1", "g1:2") == BW_UNDO_CONTENT, "a in g1");
  CHECK(bw_undo_record_group(u, "1:b", BW_UNDO_ABSENT, NULL, 0, 0, "hb1", "g1:2") == BW_UNDO_ABSENT, "b in g1");
  bw_undo_record(u, "1:c", BW_UNDO_CONTENT, "c0", 2, 0, "hc0");
  bw_undo_entry e;
  CHECK(bw_undo_peek(u, "1:b", &e) == 1 && e.group && !strcmp(e.group, "g1:2"), "the group comes with the record");
  bw_undo_entry_free(&e);
  CHECK(bw_undo_peek(u, "1:c", &e) == 1 && e.group == NULL, "a record of one file has none");
  bw_undo_entry_free(&e);
  char keys[64] = "";
  CHECK(bw_undo_members(u, "g1:2", add_key, keys) == 2 && !strcmp(keys, "1:b;1:a;"), "the group's keys, newest first: %s", keys);
  bw_undo_pop(u, "1:a");
  CHECK(bw_undo_peek(u, "1:a", &e) == 1 && e.group == NULL && !strcmp(e.after, "ha0"), "under it, the record before the group");
  bw_undo_entry_free(&e);
  keys[0] = '\0';
  CHECK(bw_undo_members(u, "g1:2", add_key, keys) == 1, "one left in the group");
  bw_undo_unref(u);
}

int main(void) {
  test_named();
  test_stack();
  test_bounds();
  test_splice();
  test_group();
  test_budget();
  test_threads();
  /* shared: the embedded state store (two handles of one store stand for
   * two instances); and one whose tenant share is 4 KiB */
  bw_state *s, *small;
  bw_state_caps caps = {.max_bytes_per_tenant = 4096};
  CHECK(bw_state_open_memory(NULL, &s) == BW_OK && bw_state_open_memory(&caps, &small) == BW_OK, "stores");
  undo_cases(s, bw_state_ref(s));
  ucase_tenant_cap(small);
  bw_state_close(s), bw_state_close(s), bw_state_close(small);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
