/*
 * dir.c - directory listing and stat beneath a root. Listings walk by
 * directory fds opened with O_NOFOLLOW from their parent: a symlink is
 * listed as a symlink and never descended, and a walk never crosses into
 * another mount. Entries come sorted by name, depth first, so the output
 * does not depend on readdir order.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

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
  size_t delivered, omitted;
  int stop;
} lister;

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the directory open at fd (hidden ones filtered). */
static int read_names(int fd, int hidden, char ***out, size_t *count) {
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
  while ((e = readdir(d))) {
    const char *s = e->d_name;
    if (!strcmp(s, ".") || !strcmp(s, "..") || (!hidden && s[0] == '.'))
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) {
        rc = BW_ENOMEM;
        break;
      }
      names = nn;
    }
    if (!(names[n] = strdup(s))) {
      rc = BW_ENOMEM;
      break;
    }
    n++;
  }
  closedir(d);
  if (rc) {
    while (n) free(names[--n]);
    free(names);
    return rc;
  }
  if (n > 1) qsort(names, n, sizeof *names, by_name); /* names NULL if empty */
  *out = names;
  *count = n;
  return BW_OK;
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

static int list_level(lister *l, int fd, const char *prefix, int depth) {
  char **names = NULL;
  size_t n = 0;
  int rc = read_names(fd, l->o->include_hidden, &names, &n);
  if (rc) return rc;
  size_t pl = strlen(prefix);
  for (size_t i = 0; i < n && !l->stop && !rc; i++) {
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
    if (l->delivered < l->o->max_entries) {
      bw_entry e = {path, names[i], type_of(st.st_mode), depth, st};
      rc = l->cb(l->arg, &e);
      l->delivered++;
    } else if (++l->omitted >= l->o->count_limit) {
      l->stop = 1;
    }
    if (!rc && S_ISDIR(st.st_mode) && depth < l->o->max_depth) {
      int c = open_child(l, fd, names[i], &st);
      if (c >= 0) {
        int sub = list_level(l, c, path, depth + 1);
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

int bw_list(const bw_root *r, const char *rel, const bw_list_opts *o,
            bw_list_cb cb, void *arg, size_t *omitted) {
  struct stat st;
  int fd, rc = bw_resolve(r, rel, 0, &fd, &st);
  if (rc) return rc;
  if (!S_ISDIR(st.st_mode)) {
    close(fd);
    return bw_fail(BW_ENOTDIR, NULL);
  }
  lister l = {.r = r, .o = o, .cb = cb, .arg = arg};
  rc = list_level(&l, fd, "", 0);
  close(fd);
  *omitted = l.omitted;
  return rc;
}
