/*
 * topn.c - the sorted capped set a capped walk keeps its results in
 * (bw_topn: the first N items in path order, whatever order the workers
 * find them in), and the path order itself (bw_path_cmp). Shared by the
 * walk's visitors (grep.c, glob.c), thread-safe.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

int bw_path_cmp(const char *a, const char *b) {
  for (;; a++, b++) {
    unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
    if (x == y) {
      if (!x) return 0;
      continue;
    }
    if (!x) return -1;
    if (!y) return 1;
    if (x == '/') return -1; /* "a/b" before "a-b": a directory's contents first */
    if (y == '/') return 1;
    return x < y ? -1 : 1;
  }
}

void bw_topn_init(bw_topn *t, size_t limit, void (*free_item)(bw_item *)) {
  memset(t, 0, sizeof *t);
  pthread_mutex_init(&t->mu, NULL);
  t->limit = limit ? limit : (size_t)-1;
  t->free_item = free_item;
}

int bw_topn_add(bw_topn *t, bw_item *it) {
  pthread_mutex_lock(&t->mu);
  if (t->full && bw_path_cmp(it->path, t->v[t->n - 1]->path) > 0) {
    t->dropped = 1;
    pthread_mutex_unlock(&t->mu);
    t->free_item(it);
    return BW_OK;
  }
  if (t->n == t->cap) {
    size_t c = t->cap ? t->cap * 2 : 64;
    bw_item **nv = realloc(t->v, c * sizeof *nv);
    if (!nv) {
      pthread_mutex_unlock(&t->mu);
      t->free_item(it);
      return BW_ENOMEM;
    }
    t->v = nv;
    t->cap = c;
  }
  size_t lo = 0, hi = t->n;
  if (hi && bw_path_cmp(t->v[hi - 1]->path, it->path) < 0)
    lo = hi; /* the walk goes near path order: most items go last */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (bw_path_cmp(t->v[mid]->path, it->path) < 0) lo = mid + 1;
    else hi = mid;
  }
  memmove(t->v + lo + 1, t->v + lo, (t->n - lo) * sizeof *t->v);
  t->v[lo] = it;
  t->n++;
  t->units += it->units;
  while (t->n > 1 && t->units - t->v[t->n - 1]->units >= t->limit) {
    t->units -= t->v[t->n - 1]->units; /* not needed to reach the cap */
    t->free_item(t->v[--t->n]);
    t->dropped = 1;
  }
  if (t->units >= t->limit) t->full = 1;
  if (t->units > t->limit) t->dropped = 1;
  pthread_mutex_unlock(&t->mu);
  return BW_OK;
}

/* The queries below answer 0 at once while the set is not full (most
 * searches: no cap reached), without the lock the workers' adds hold: a
 * set that fills just after is as if it filled just after the call. */
int bw_topn_beyond(bw_topn *t, const char *path) {
  if (!atomic_load(&t->full)) return 0;
  pthread_mutex_lock(&t->mu);
  int b = t->full && bw_path_cmp(path, t->v[t->n - 1]->path) > 0;
  if (b) t->dropped = 1;
  pthread_mutex_unlock(&t->mu);
  return b;
}

int bw_topn_past(bw_topn *t, const char *path) {
  if (!atomic_load(&t->full)) return 0;
  pthread_mutex_lock(&t->mu);
  int past = t->full && bw_path_cmp(path, t->v[t->n - 1]->path) > 0;
  pthread_mutex_unlock(&t->mu);
  return past;
}

int bw_topn_is_full(bw_topn *t) { return atomic_load(&t->full); }

void bw_topn_free(bw_topn *t) {
  for (size_t i = 0; i < t->n; i++) t->free_item(t->v[i]);
  free(t->v);
  pthread_mutex_destroy(&t->mu);
  memset(t, 0, sizeof *t);
}

