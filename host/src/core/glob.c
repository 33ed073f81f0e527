/*
 * glob.c - the glob search: a walk (walk.c) keeping the entries the
 * compiled glob (globmatch.c) matches, sorted and capped, newest first on
 * request.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "search.h"

typedef struct gsearch {
  const bw_root *r;
  const bw_glob *g;
  const bw_glob_opts *o;
  const char *prefix; /* literal start below rel, "" if none */
  bw_topn top;
  _Atomic int failed;
} gsearch;

/* An item and its path are one block: one malloc a match. */
static void free_gitem(bw_item *it) { free(it); }

static int type_bit(char t) {
  return t == 'f' ? 1 : t == 'd' ? 2 : t == 'l' ? 4 : 8;
}

/* The entry's path below the glob's literal start in buf (of cap bytes),
 * or in memory of its own (to free) if longer; NULL without memory. */
static char *full_path(const gsearch *s, const bw_wentry *e, char *buf, size_t cap) {
  size_t pl = strlen(s->prefix), el = strlen(e->path);
  char *full = pl + el + 2 <= cap ? buf : malloc(pl + el + 2);
  if (!full) return NULL;
  memcpy(full, s->prefix, pl);
  full[pl] = pl ? '/' : '\0';
  memcpy(full + pl + (pl ? 1 : 0), e->path, el + 1);
  return full;
}

static int glob_visit(void *arg, const bw_wentry *e) {
  gsearch *s = arg;
  char buf[1024];
  char *full = full_path(s, e, buf, sizeof buf);
  if (!full) {
    atomic_store(&s->failed, BW_ENOMEM);
    return -1;
  }
  int descend = 0, rc = 0;
  if (e->type == 'd')
    descend = bw_glob_viable(s->g, full) && !bw_topn_beyond(&s->top, full);
  if ((s->o->types & type_bit(e->type)) && bw_glob_match(s->g, full) &&
      (s->o->by_mtime || !bw_topn_beyond(&s->top, full))) {
    size_t l = strlen(full);
    bw_gitem *it = malloc(sizeof *it + l + 1);
    struct stat st;
    if (it) {
      memset(it, 0, sizeof *it);
      it->item.path = memcpy((char *)(it + 1), full, l + 1);
      it->item.units = 1;
      it->type = e->type;
      if (fstatat(e->dirfd, e->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        it->size = (long long)st.st_size;
        it->mtime = st.st_mtim;
      }
    }
    if (!it || bw_topn_add(&s->top, &it->item)) { /* (topn frees it on failure) */
      atomic_store(&s->failed, BW_ENOMEM);
      rc = -1;
    }
  }
  if (full != buf) free(full);
  return rc ? rc : descend;
}

static int newer_first(const void *a, const void *b) {
  const bw_gitem *x = *(bw_gitem *const *)a, *y = *(bw_gitem *const *)b;
  if (x->mtime.tv_sec != y->mtime.tv_sec)
    return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec)
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
  return bw_path_cmp(x->item.path, y->item.path);
}

int bw_glob_search(const bw_root *r, const char *rel, const char *pattern,
                   size_t len, const bw_glob_opts *o, bw_glob_res *res) {
  memset(res, 0, sizeof *res);
  const char *why;
  bw_glob *g = bw_glob_compile(pattern, len, BW_GLOB_BRACES, &why);
  if (!g) return bw_fail_on(BW_INVALID_ARGUMENT, BW_ON_PATTERN, 0, why);
  char prefix[BW_PATH_MAX + 1];
  bw_glob_prefix(g, prefix, sizeof prefix);
  gsearch s = {.r = r, .g = g, .o = o, .prefix = prefix};
  size_t limit = o->by_mtime ? o->count_limit : o->max_results;
  bw_topn_init(&s.top, limit, free_gitem);
  bw_walk_stats stats = {0};
  bw_walk_opts w = o->walk;
  w.visit = glob_visit;
  w.arg = &s;
  w.stats = &stats;
  w.below = prefix[0] ? prefix : NULL;
  if (bw_glob_names_hidden(g)) w.include_hidden = 1; /* "**" "/.env" */
  int rc = bw_walk_run(r, rel, &w);
  if (rc == BW_ENOENT && prefix[0]) rc = BW_OK; /* nothing there: no match */
  if (!rc) rc = atomic_load(&s.failed);
  if (rc) {
    bw_topn_free(&s.top);
    bw_glob_free(g);
    return rc;
  }
  res->items = (bw_gitem **)s.top.v;
  res->n = s.top.n;
  res->truncated = s.top.dropped;
  res->skipped_policy = atomic_load(&stats.skipped_policy);
  res->cancelled = atomic_load(&stats.cancelled);
  if (res->cancelled) res->truncated = 1;
  s.top.v = NULL;
  s.top.n = 0;
  if (o->by_mtime && res->n > 1)
    qsort(res->items, res->n, sizeof *res->items, newer_first);
  if (o->by_mtime && res->n > o->max_results) {
    for (size_t i = o->max_results; i < res->n; i++)
      free_gitem(&res->items[i]->item);
    res->n = o->max_results;
    res->truncated = 1;
  }
  bw_topn_free(&s.top);
  bw_glob_free(g);
  return BW_OK;
}

void bw_glob_res_free(bw_glob_res *res) {
  for (size_t i = 0; i < res->n; i++) free_gitem(&res->items[i]->item);
  free(res->items);
  memset(res, 0, sizeof *res);
}
