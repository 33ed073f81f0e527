/*
 * dir.c - directory listing and stat beneath a root. Listings walk by
 * directory fds opened with O_NOFOLLOW from their parent: a symlink is
 * listed as a symlink and never descended, and a walk never crosses into
 * another mount. Entries come sorted by name, depth first, so the output
 * does not depend on readdir order. Policy rules leave out what they deny
 * reading, checked on the in-root path before the entry is even stat'ed:
 * below another root's directory (bw_nest, by identity) the in-root path
 * of that root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "search.h"
#include "stage.h"

int bw_stat(const bw_root *r, const char *rel, struct stat *st, char *target,
            size_t target_size) {
  int fd, rc = bw_resolve(r, rel, BW_NOFOLLOW, &fd, st);
  if (rc) return rc;
  target[0] = '\0';
  if (S_ISLNK(st->st_mode)) {
    ssize_t n = readlinkat(fd, "", target, target_size - 1);
    target[n > 0 ? n : 0] = '\0';
  }
  close(fd);
  return BW_OK;
}

typedef struct lister {
  const bw_root *r;
  const bw_list_opts *o;
  bw_list_cb cb;
  void *arg;
  size_t delivered, omitted, skipped;
  int stop;
  int err; /* what stopped it (the judge's code), 0: nothing */
  char *path; /* with rules: the in-root path of rel, "/", an entry's path */
  size_t prelen, cap;
} lister;

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the directory open at fd, "." and ".." and staged trees
 * left out (edit.h): the one reader of a directory's names, for listings
 * (BW_NAMES_SORTED, without BW_NAMES_HIDDEN) and for the mutations that
 * visit every entry. */
int bw_read_names(int fd, int flags, char ***out, size_t *count) {
  int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return bw_code_from_errno(errno);
  DIR *d = fdopendir(dfd);
  if (!d) {
    int e = errno;
    close(dfd);
    return bw_code_from_errno(e);
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = BW_OK;
  struct dirent *e;
  while (!rc && (e = readdir(d))) {
    const char *s = e->d_name;
    if (!strcmp(s, ".") || !strcmp(s, "..") || (!(flags & BW_NAMES_HIDDEN) && s[0] == '.') ||
        bw_stage_name(s))
      continue; /* a staged tree (stage.h) is no one's to see */
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) rc = BW_ENOMEM;
      else names = nn;
    }
    if (!rc && !(names[n] = strdup(s))) rc = BW_ENOMEM;
    if (!rc) n++;
  }
  closedir(d);
  if (rc) {
    bw_free_names(names, n);
    return rc;
  }
  if ((flags & BW_NAMES_SORTED) && n > 1) qsort(names, n, sizeof *names, by_name); /* names NULL if empty */
  *out = names;
  *count = n;
  return BW_OK;
}

int bw_nest_enter(bw_nest *nest, uint64_t dev, uint64_t ino, const char *path, size_t len) {
  for (size_t i = 0; nest && i < nest->n; i++) {
    if (nest->v[i].dev != dev || nest->v[i].ino != ino) continue;
    char *m = strndup(path, len), *none = NULL;
    if (m && !atomic_compare_exchange_strong(&nest->v[i].met, &none, m)) free(m);
    return nest->v[i].root;
  }
  return -1;
}

void bw_nest_clear(bw_nest *nest) {
  for (size_t i = 0; nest && i < nest->n; i++) free(atomic_exchange(&nest->v[i].met, NULL));
}

void bw_free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

static char type_of(mode_t m) {
  if (S_ISREG(m)) return 'f';
  if (S_ISDIR(m)) return 'd';
  if (S_ISLNK(m)) return 'l';
  return 'o';
}

/* Open a child directory to descend, or -1 if we must not (a mount). */
static int open_child(const lister *l, int fd, const char *name,
                      const struct stat *st) {
  if (st->st_dev != l->r->dev) return -1;
  int c = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (c < 0) return -1;
  struct statx sx;
  if (l->r->mnt_id &&
      (statx(c, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 ||
       !(sx.stx_mask & STATX_MNT_ID) || sx.stx_mnt_id != l->r->mnt_id)) {
    close(c);
    return -1;
  }
  return c;
}

/* Do the rules rs match reading (or listing) prefix/name? Built in the
 * lister's buffer; matched from nest_at of prefix/name on (a nested
 * root's in-root path), or as a whole after the walk's in-root start. */
static int matched(lister *l, const struct bw_rules *rs, const char *prefix, size_t pl, const char *name,
                   size_t nest_at, int root) {
  size_t nl = strlen(name), need = l->prelen + pl + 1 + nl + 1;
  if (need > l->cap) {
    size_t c = l->cap * 2 > need ? l->cap * 2 : need + 256;
    char *p = realloc(l->path, c);
    if (!p) return -1;
    l->path = p;
    l->cap = c;
  }
  char *q = l->path + l->prelen;
  memcpy(q, prefix, pl);
  if (pl) q[pl++] = '/';
  memcpy(q + pl, name, nl + 1);
  /* a listing shows names: a rule denying list keeps them out as one
   * denying read does */
  if (nest_at) return bw_rules_match_in(rs, root, q + nest_at, pl + nl - nest_at, BW_OP_READ | BW_OP_LIST) >= 0;
  return bw_rules_match_in(rs, root, l->path, l->prelen + pl + nl, BW_OP_READ | BW_OP_LIST) >= 0;
}

/* An entry o->defer matches, judged before it is delivered or entered:
 * 1 allowed, 0 refused, or a negative BW_* code that stops the listing. */
static int judged(lister *l, const char *path, char type, size_t nest_at, int root) {
  const bw_list_opts *o = l->o;
  bw_wjudge it = {path, type, nest_at, nest_at ? root : 0};
  unsigned char allow = 0;
  int rc = o->judge ? o->judge(o->judge_arg, &it, 1, &allow) : BW_OK;
  return rc ? -rc : allow;
}

/* List prefix's directory, open at fd; below a nested root (nest_at > 0)
 * its entries are judged from nest_at on, as objects of root. */
static int list_level(lister *l, int fd, const char *prefix, int depth, size_t nest_at, int root) {
  char **names = NULL;
  size_t n = 0;
  int rc = bw_read_names(fd, BW_NAMES_SORTED | (l->o->include_hidden ? BW_NAMES_HIDDEN : 0), &names, &n);
  if (rc) return rc;
  size_t pl = strlen(prefix);
  for (size_t i = 0; i < n && !l->stop && !rc; i++) {
    int d = l->o->rules ? matched(l, l->o->rules, prefix, pl, names[i], nest_at, root) : 0;
    if (d < 0) {
      rc = BW_ENOMEM;
      break;
    }
    if (d) { /* not shown, not counted as omitted, not entered */
      l->skipped++;
      continue;
    }
    struct stat st;
    if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
    char *path = malloc(pl + strlen(names[i]) + 2);
    if (!path) {
      rc = BW_ENOMEM;
      break;
    }
    strcpy(path, prefix);
    if (pl) strcat(path, "/");
    strcat(path, names[i]);
    int m = l->o->defer ? matched(l, l->o->defer, prefix, pl, names[i], nest_at, root) : 0;
    int ok = m > 0 ? judged(l, path, type_of(st.st_mode), nest_at, root) : m < 0 ? -BW_ENOMEM : 1;
    if (ok <= 0) { /* refused: as a rule's denial; or the listing stops */
      free(path);
      if (ok < 0) { /* the whole listing ends, not only this level */
        l->err = rc = -ok;
        l->stop = 1;
        break;
      }
      l->skipped++;
      continue;
    }
    if (l->delivered < l->o->max_entries) {
      bw_entry e = {path, names[i], type_of(st.st_mode), depth, st};
      rc = l->cb(l->arg, &e);
      l->delivered++;
    } else if (++l->omitted >= l->o->count_limit) {
      l->stop = 1;
    }
    if (!rc && S_ISDIR(st.st_mode) && depth < l->o->max_depth) {
      int c = open_child(l, fd, names[i], &st);
      size_t at = nest_at; /* another root's directory: its paths below */
      int in = c >= 0 ? bw_nest_enter(l->o->nest, st.st_dev, st.st_ino, path, strlen(path)) : -1;
      if (in >= 0) at = strlen(path) + 1;
      if (c >= 0) {
        int sub = list_level(l, c, path, depth + 1, at, in >= 0 ? in : root);
        close(c);
        if (sub == BW_ENOMEM) rc = sub; /* unreadable subdirs are skipped */
      }
    }
    free(path);
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return rc;
}

/* The rules' view of rel: its in-root path and a "/" (nothing for the
 * root), at the start of the lister's buffer. */
static int rules_prefix(lister *l, const char *rel) {
  char start[BW_PATH_MAX + 1];
  size_t bl;
  int rc = bw_rules_start(l->r, rel, l->o->base, start, &bl);
  if (rc) return rc;
  l->cap = bl + 512;
  if (!(l->path = malloc(l->cap))) return BW_ENOMEM;
  memcpy(l->path, start, bl);
  if (bl) l->path[bl++] = '/';
  l->prelen = bl;
  return BW_OK;
}

int bw_list(const bw_root *r, const char *rel, const bw_list_opts *o,
            bw_list_cb cb, void *arg, size_t *omitted) {
  lister l = {.r = r, .o = o, .cb = cb, .arg = arg};
  struct stat st;
  int fd, rc = o->rules || o->defer ? rules_prefix(&l, rel) : BW_OK;
  if (!rc) rc = bw_resolve(r, rel, 0, &fd, &st);
  if (!rc && !S_ISDIR(st.st_mode)) {
    close(fd);
    rc = bw_fail(BW_ENOTDIR, NULL);
  }
  if (rc) {
    free(l.path);
    return rc;
  }
  rc = list_level(&l, fd, "", 0, 0, o->nest ? o->nest->self : -1);
  if (l.err) rc = l.err;
  close(fd);
  free(l.path);
  *omitted = l.omitted;
  if (o->skipped_policy) *o->skipped_policy = l.skipped;
  return rc;
}
