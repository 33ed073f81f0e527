/*
 * resolve.c - resolution of an untrusted relative path beneath a root fd.
 *
 * Two backends give the same answers:
 *  - openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV), the
 *    kernel doing the work, with a bounded retry on EAGAIN;
 *  - a component walk with O_PATH|O_NOFOLLOW fds that never opens "..": it
 *    pops its own fd stack, splices relative symlinks in, refuses absolute
 *    ones and any change of mount, and never consults /proc.
 * A path string never travels from a check to a later use: every answer is
 * an fd, and reopening for I/O is checked against the first answer's inode.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "stage.h"

enum { RETRIES = 128, MAX_HOPS = 40, SWAPPED = -3 };

/* Whether the kernel has openat2 is a fact of the process, learnt once:
 * cached one way, once gone, gone. Which backend a root uses is the
 * root's own choice (r->backend, set when it is opened), never a process
 * setting it defers to. */
static _Atomic int openat2_missing = 0;

const char *bw_backend_name(void) {
  return atomic_load(&openat2_missing) ? "walk" : "openat2";
}

bw_backend bw_root_backend(const bw_root *r) {
  if (atomic_load(&openat2_missing)) return BW_WALK;
  return r->backend == BW_WALK ? BW_WALK : BW_OPENAT2;
}

/* A view lent by a handle: resolving exactly what was judged must give the
 * object that was judged. */
static int expected(const bw_root *r, const char *rel, const struct stat *st) {
  if (!r->expect_rel || strcmp(rel, r->expect_rel) != 0) return BW_OK;
  if (st->st_dev == r->expect_dev && st->st_ino == r->expect_ino) return BW_OK;
  return bw_fail(BW_EAGAIN, "not the object the policies judged");
}

/* ---- openat2 ---- */

/* Does openat2 itself work? (A seccomp filter may answer EPERM or ENOSYS
 * for the syscall as a whole; "." beneath any directory always resolves.) */
static int openat2_works(int dirfd) {
  struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                         .resolve = RESOLVE_BENEATH};
  int fd = (int)syscall(SYS_openat2, dirfd, ".", &how, sizeof how);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

void bw_probe_backend(void) {
  if (!atomic_load(&openat2_missing) && !openat2_works(AT_FDCWD))
    atomic_store(&openat2_missing, 1);
}

static int openat2_open(const bw_root *r, const char *rel, int flags,
                        int *out) {
  struct open_how how = {
      .flags = (unsigned)(flags | O_CLOEXEC),
      .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
  };
  for (int i = 0; i < RETRIES; i++) {
    int fd = (int)syscall(SYS_openat2, r->fd, rel, &how, sizeof how);
    if (fd >= 0) {
      *out = fd;
      return BW_OK;
    }
    int e = errno;
    if (e == EAGAIN) continue;
    if (e == ENOSYS) return -1; /* caller switches to the walk */
    if (e == EPERM && !openat2_works(r->fd)) return -1; /* seccomp said no */
    return bw_code_from_errno(e);
  }
  return bw_fail(BW_EAGAIN, "path changed during resolution, retry");
}

/* ---- the fd walk ---- */

typedef struct walk {
  const bw_root *r;
  int *stack;     /* directory fds; stack[0] is the root's (not owned) */
  char **names;   /* with track: the name of each stacked directory */
  int depth;
  int cap;
  int track;
  char *rest;     /* what is left to resolve */
  const char *fail_at; /* the component a lookup failed on, in rest */
  const char *link_end; /* in rest: the end of the last link's text */
  int hops;
} walk;

static void walk_pop(walk *w) {
  if (w->stack[w->depth] >= 0) close(w->stack[w->depth]);
  if (w->track) free(w->names[w->depth]);
  w->depth--;
}

static void walk_free(walk *w) {
  while (w->depth > 0) walk_pop(w); /* close(-1) of a taken fd: harmless */
  free(w->stack);
  free(w->names);
  free(w->rest);
}

static int walk_push(walk *w, int fd, const char *name) {
  if (w->depth + 1 >= w->cap) {
    int n = w->cap * 2;
    int *s = realloc(w->stack, (size_t)n * sizeof *s);
    if (!s) return BW_ENOMEM;
    w->stack = s;
    if (w->track) {
      char **nm = realloc(w->names, (size_t)n * sizeof *nm);
      if (!nm) return BW_ENOMEM;
      w->names = nm;
    }
    w->cap = n;
  }
  if (w->track && !(w->names[w->depth + 1] = strdup(name))) return BW_ENOMEM;
  w->stack[++w->depth] = fd;
  return BW_OK;
}

/* Stat an O_PATH fd and check it is on the root's mount. */
static int walk_stat(const walk *w, int fd, mode_t *mode) {
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
            STATX_TYPE | STATX_MNT_ID, &sx) < 0)
    return bw_code_from_errno(errno);
  dev_t dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  if (dev != w->r->dev) return bw_fail(BW_OUTSIDE_ROOT, NULL);
  if (w->r->mnt_id && (sx.stx_mask & STATX_MNT_ID) &&
      sx.stx_mnt_id != w->r->mnt_id)
    return bw_fail(BW_OUTSIDE_ROOT, NULL);
  *mode = sx.stx_mode;
  return BW_OK;
}

/* Replace rest by link + "/" + tail (tail = what followed the link). */
static int walk_splice(walk *w, int linkfd, const char *tail) {
  char link[BW_PATH_MAX + 1];
  ssize_t n = readlinkat(linkfd, "", link, sizeof link);
  if (n < 0) return bw_code_from_errno(errno);
  if ((size_t)n >= sizeof link)
    return bw_fail(BW_INVALID_ARGUMENT, "name too long");
  if (n == 0) return BW_ENOENT;
  if (link[0] == '/') return bw_fail(BW_OUTSIDE_ROOT, NULL);
  size_t tl = strlen(tail);
  char *s = malloc((size_t)n + tl + 2);
  if (!s) return BW_ENOMEM;
  memcpy(s, link, (size_t)n);
  s[n] = tl ? '/' : '\0';
  memcpy(s + n + (tl ? 1 : 0), tail, tl + 1);
  free(w->rest);
  w->rest = s;
  w->link_end = s + n;
  return BW_OK;
}

/* Walk rest; on success *out is an O_PATH fd of the result (owned). When
 * the result is not a directory, *parent (if asked) receives a dup of the
 * directory holding it and final (if asked) its final name, so it can be
 * reopened for I/O without following anything. */
static int walk_run(walk *w, int nofollow, int *out, int *parent,
                    char *final) {
  char *p = w->rest;
  for (;;) {
    while (*p == '/') p++;
    if (!*p) break;
    char *s = p;
    while (*p && *p != '/') p++;
    size_t cl = (size_t)(p - s);
    const char *tail = p;
    while (*tail == '/') tail++;
    int last = !*tail;
    int slash_after = *p == '/';

    if (cl == 1 && s[0] == '.') continue;
    if (cl == 2 && s[0] == '.' && s[1] == '.') {
      if (w->depth == 0) return bw_fail(BW_OUTSIDE_ROOT, NULL);
      walk_pop(w);
      continue;
    }
    char name[BW_NAME_MAX + 1];
    if (cl > BW_NAME_MAX) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
    memcpy(name, s, cl);
    name[cl] = '\0';

    int fd = openat(w->stack[w->depth], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      w->fail_at = s;
      return bw_code_from_errno(errno);
    }
    mode_t mode;
    int rc = walk_stat(w, fd, &mode);
    if (rc) {
      close(fd);
      return rc;
    }
    if (S_ISLNK(mode) && !(last && nofollow && !slash_after)) {
      if (++w->hops > MAX_HOPS) {
        close(fd);
        return bw_fail(BW_ELOOP, NULL);
      }
      /* a trailing slash survives the splice: "link/" must be a directory */
      rc = walk_splice(w, fd, slash_after && last ? "." : tail);
      close(fd);
      if (rc) return rc;
      p = w->rest;
      continue;
    }
    if (S_ISDIR(mode)) {
      rc = walk_push(w, fd, name);
      if (rc) close(fd);
      if (rc) return rc;
      continue;
    }
    if (!last || slash_after) { /* "file/x", "file/", "file/." */
      close(fd);
      return bw_fail(BW_ENOTDIR, NULL);
    }
    if (parent) {
      *parent = fcntl(w->stack[w->depth], F_DUPFD_CLOEXEC, 0);
      if (*parent < 0) {
        close(fd);
        return bw_code_from_errno(errno);
      }
    }
    if (final) memcpy(final, name, cl + 1);
    *out = fd;
    return BW_OK;
  }
  /* ended on a directory (or the root itself) */
  int fd = openat(w->stack[w->depth], ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return bw_code_from_errno(errno);
  if (parent) *parent = -1;
  *out = fd;
  return BW_OK;
}

static int walk_init(walk *w, const bw_root *r, const char *rel, int track) {
  memset(w, 0, sizeof *w);
  w->r = r;
  w->track = track;
  w->cap = 16;
  w->rest = strdup(rel);
  w->stack = malloc((size_t)w->cap * sizeof *w->stack);
  w->names = track ? calloc((size_t)w->cap, sizeof *w->names) : NULL;
  if (!w->rest || !w->stack || (track && !w->names)) return BW_ENOMEM;
  w->stack[0] = r->fd; /* the root's own fd, never closed */
  return BW_OK;
}

static int walk_open(const bw_root *r, const char *rel, int nofollow, int *out,
                     int *parent, char *final) {
  walk w;
  int rc = walk_init(&w, r, rel, 0);
  if (rc == BW_OK) rc = walk_run(&w, nofollow, out, parent, final);
  walk_free(&w);
  return rc;
}

/* Append component c (cl bytes) to the path in out, lexically. */
static int canon_add(char *out, size_t size, const char *c, size_t cl) {
  size_t n = strlen(out);
  if (cl == 0 || (cl == 1 && c[0] == '.')) return BW_OK;
  if (cl == 2 && c[0] == '.' && c[1] == '.') {
    while (n > 0 && out[n - 1] != '/') n--;
    out[n > 0 ? n - 1 : 0] = '\0';
    return BW_OK;
  }
  if (n + cl + 2 > size) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
  if (n) out[n++] = '/';
  memcpy(out + n, c, cl);
  out[n + cl] = '\0';
  return BW_OK;
}

int bw_canonical(const bw_root *r, const char *rel, char *out, size_t size) {
  walk w;
  int fd = -1, parent = -1;
  char final[BW_NAME_MAX + 1] = "";
  int rc = walk_init(&w, r, rel, 1);
  if (rc == BW_OK) rc = walk_run(&w, 0, &fd, &parent, final);
  if (rc == BW_OK || (rc == BW_ENOENT && w.fail_at)) {
    out[0] = '\0';
    for (int i = 1; i <= w.depth && rc != BW_INVALID_ARGUMENT; i++)
      rc = canon_add(out, size, w.names[i], strlen(w.names[i])) ? BW_INVALID_ARGUMENT : rc;
    if (parent >= 0) canon_add(out, size, final, strlen(final));
    for (const char *p = w.fail_at; rc == BW_ENOENT && p && *p;) {
      while (*p == '/') p++;
      const char *e = p;
      while (*e && *e != '/') e++;
      canon_add(out, size, p, (size_t)(e - p));
      p = e;
    }
    if (!out[0]) strcpy(out, ".");
    if (rc == BW_ENOENT) rc = BW_OK; /* what does not exist yet, lexically */
  }
  if (fd >= 0) close(fd);
  if (parent >= 0) close(parent);
  walk_free(&w);
  return rc;
}

/* ---- the backend-neutral operations ---- */

static int resolve_path(const bw_root *r, const char *rel, int nofollow,
                        int *fd) {
  if (bw_root_backend(r) == BW_OPENAT2) {
    int rc = openat2_open(r, rel, O_PATH | (nofollow ? O_NOFOLLOW : 0), fd);
    if (rc != -1) return rc;
    atomic_store(&openat2_missing, 1);
  }
  return walk_open(r, rel, nofollow, fd, NULL, NULL);
}

static int type_code(mode_t m) {
  if (S_ISDIR(m)) return BW_EISDIR;
  if (S_ISREG(m)) return BW_OK;
  return bw_fail(BW_NOT_REGULAR, NULL);
}

/* A staged tree (stage.h) is reached by no path: nothing is added to it
 * between its judgement and its rename. */
static int reserved(const char *rel) {
  return bw_stage_in_path(rel)
             ? bw_fail(BW_INVALID_ARGUMENT, "names starting with " BW_STAGE_PREFIX
                                            " are burrow's own (staged subtree operations)")
             : BW_OK;
}

int bw_resolve(const bw_root *r, const char *rel, int how, int *out,
               struct stat *st) {
  int fd, rc = reserved(rel);
  if (rc) return rc;
  rc = resolve_path(r, rel, how & BW_NOFOLLOW, &fd);
  if (rc) return rc;
  if (fstat(fd, st) < 0) {
    rc = bw_code_from_errno(errno);
    close(fd);
    return rc;
  }
  if ((rc = expected(r, rel, st)) != BW_OK ||
      ((how & BW_REGULAR) && (rc = type_code(st->st_mode)) != BW_OK)) {
    close(fd);
    return rc;
  }
  *out = fd;
  return BW_OK;
}

static int check_regular_fd(int fd, struct stat *st) {
  if (fstat(fd, st) < 0) return bw_code_from_errno(errno);
  return type_code(st->st_mode);
}

/* One attempt: find the file on an O_PATH fd, check its type there (so a
 * FIFO or device is refused before any read-capable open), then open it
 * for reading and make sure it is still the same inode. A handle's object
 * (expect_reg: checked on its O_PATH fd when judged) is opened at once,
 * and must be the inode judged. */
static int open_read_once(const bw_root *r, const char *rel, int *out,
                          struct stat *st) {
  const int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  struct stat st1;
  int pfd = -1, parent = -1, fd = -1, rc;
  char name[BW_NAME_MAX + 1];
  if (bw_root_backend(r) == BW_OPENAT2 && r->expect_reg && r->expect_rel &&
      !strcmp(rel, r->expect_rel)) {
    /* a handle's object: its type was checked on an O_PATH fd when it was
       judged, and the inode opened must be that one (else EAGAIN) */
    rc = openat2_open(r, rel, flags, &fd);
    if (rc == -1) {
      atomic_store(&openat2_missing, 1);
      return open_read_once(r, rel, out, st);
    }
    if (rc) return rc;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
        (rc = expected(r, rel, st)) != BW_OK) {
      close(fd);
      return rc ? rc : bw_fail(BW_EAGAIN, "not the object the policies judged");
    }
    *out = fd;
    return BW_OK;
  } else if (bw_root_backend(r) == BW_OPENAT2) {
    rc = openat2_open(r, rel, O_PATH, &pfd);
    if (rc == -1) {
      atomic_store(&openat2_missing, 1);
      return open_read_once(r, rel, out, st);
    }
    if (rc == BW_OK && (rc = check_regular_fd(pfd, &st1)) == BW_OK)
      rc = openat2_open(r, rel, flags, &fd);
  } else {
    rc = walk_open(r, rel, 0, &pfd, &parent, name);
    if (rc == BW_OK && (rc = check_regular_fd(pfd, &st1)) == BW_OK) {
      fd = openat(parent, name, flags | O_NOFOLLOW);
      if (fd < 0) rc = errno == ELOOP ? SWAPPED : bw_code_from_errno(errno);
    }
  }
  if (pfd >= 0) close(pfd);
  if (parent >= 0) close(parent);
  if (rc) return rc;
  if (fstat(fd, st) < 0 || st->st_dev != st1.st_dev ||
      st->st_ino != st1.st_ino || !S_ISREG(st->st_mode)) {
    close(fd);
    return SWAPPED; /* swapped between the lookups: start over */
  }
  if ((rc = expected(r, rel, st)) != BW_OK) {
    close(fd);
    return rc;
  }
  *out = fd;
  return BW_OK;
}

int bw_open_read(const bw_root *r, const char *rel, int *out,
                 struct stat *st) {
  for (int i = 0; i < RETRIES; i++) {
    int rc = open_read_once(r, rel, out, st);
    if (rc != SWAPPED) return rc;
  }
  return bw_fail(BW_EAGAIN, "path changed during resolution, retry");
}

static int split_parent(const char *rel, char *parent, char *name,
                        int *trailing) {
  size_t n = strlen(rel);
  *trailing = 0;
  while (n > 1 && rel[n - 1] == '/') {
    n--;
    *trailing = 1;
  }
  size_t i = n;
  while (i > 0 && rel[i - 1] != '/') i--;
  size_t nl = n - i;
  if (nl == 0 || nl > BW_NAME_MAX)
    return bw_fail(BW_INVALID_ARGUMENT, nl ? "name too long"
                                           : "the path has no final name");
  memcpy(name, rel + i, nl);
  name[nl] = '\0';
  if (!strcmp(name, ".") || !strcmp(name, ".."))
    return bw_fail(BW_INVALID_ARGUMENT, "the final name cannot be . or ..");
  if (i == 0) {
    strcpy(parent, ".");
  } else {
    memcpy(parent, rel, i);
    parent[i] = '\0';
  }
  return BW_OK;
}

int bw_resolve_parent(const bw_root *r, const char *rel, int *dirfd,
                      char name[BW_NAME_MAX + 1], int *trailing) {
  char parent[BW_PATH_MAX + 1];
  int rc = split_parent(rel, parent, name, trailing);
  if (rc) return rc;
  struct stat st;
  int fd;
  rc = bw_resolve(r, parent, 0, &fd, &st);
  if (rc) return rc;
  if (!S_ISDIR(st.st_mode)) {
    close(fd);
    return bw_fail(BW_ENOTDIR, NULL);
  }
  *dirfd = fd;
  return BW_OK;
}

/* Remove the last n components of rel, deepest first: the directories a
 * failed mkdirs made (empty, unless someone filled them meanwhile: then
 * they stay). */
static void unmake(const bw_root *r, const char *rel, int n) {
  char path[BW_PATH_MAX + 1], name[BW_NAME_MAX + 1], parent[BW_PATH_MAX + 1];
  snprintf(path, sizeof path, "%s", rel);
  for (int trailing, fd; n > 0; n--) {
    if (bw_resolve_parent(r, path, &fd, name, &trailing)) return;
    unlinkat(fd, name, AT_REMOVEDIR);
    close(fd);
    if (split_parent(path, parent, name, &trailing)) return;
    memcpy(path, parent, sizeof path);
  }
}

/* mkdir -p; *made: how many trailing components of rel it created. Each
 * directory made is made durable (its parent fsynced) before the next;
 * on any failure the ones this call made are removed again. */
static int mkdirs(const bw_root *r, const char *rel, int *made) {
  *made = 0;
  struct stat st;
  int fd, rc = bw_resolve(r, rel, 0, &fd, &st);
  if (rc == BW_OK) {
    close(fd);
    return S_ISDIR(st.st_mode) ? BW_OK : bw_fail(BW_ENOTDIR, NULL);
  }
  if (rc != BW_ENOENT) return rc;
  char parent[BW_PATH_MAX + 1], name[BW_NAME_MAX + 1];
  int trailing, pmade = 0;
  if ((rc = split_parent(rel, parent, name, &trailing))) return rc;
  if (strcmp(parent, ".") && (rc = mkdirs(r, parent, &pmade))) return rc;
  if (!(rc = bw_resolve_parent(r, rel, &fd, name, &trailing))) {
    if (mkdirat(fd, name, 0777) == 0) {
      int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd < 0 || fsync(dfd) < 0) {
        unlinkat(fd, name, AT_REMOVEDIR);
        rc = bw_fail(BW_EIO, "the directory fsync failed; no directory was made");
      } else {
        *made = pmade + 1;
      }
      if (dfd >= 0) close(dfd);
    } else if (errno != EEXIST) {
      rc = bw_code_from_errno(errno);
    }
    close(fd);
  }
  if (rc) unmake(r, parent, pmade);
  return rc;
}

int bw_mkdirs(const bw_root *r, const char *rel) {
  int made;
  return mkdirs(r, rel, &made);
}

/* ---- handles: one resolution per object ---- */

int bw_dot_final(const char *rel) {
  size_t n = strlen(rel);
  while (n > 1 && rel[n - 1] == '/') n--;
  size_t i = n;
  while (i > 0 && rel[i - 1] != '/') i--;
  return (n - i == 1 && rel[i] == '.') ||
         (n - i == 2 && rel[i] == '.' && rel[i + 1] == '.');
}

void bw_handle_close(bw_handle *h) {
  if (h->dirfd >= 0) close(h->dirfd);
  h->dirfd = -1;
}

/* The deepest level of the walk's stack that is a root's directory (by
 * dev/ino), and which root; level 0 is the root the path named. */
static int innermost(const walk *w, const bw_root *roots, int n, int idx,
                     int *root) {
  *root = idx;
  if (n < 2) return 0;
  for (int i = w->depth; i >= 1; i--) {
    struct stat st;
    if (fstat(w->stack[i], &st) < 0) continue;
    for (int k = 0; k < n; k++)
      if (roots[k].dev == st.st_dev && roots[k].ino == st.st_ino) {
        *root = k;
        return i;
      }
  }
  return 0;
}

/* rel = names[from+1..to] (+ extra); returns a bw_code. */
static int join_upto(const walk *w, int from, int to, const char *extra,
                     char *out, size_t size) {
  out[0] = '\0';
  for (int i = from + 1; i <= to; i++)
    if (canon_add(out, size, w->names[i], strlen(w->names[i])))
      return bw_fail(BW_INVALID_ARGUMENT, "name too long");
  if (extra && *extra && canon_add(out, size, extra, strlen(extra)))
    return bw_fail(BW_INVALID_ARGUMENT, "name too long");
  if (!out[0]) strcpy(out, ".");
  return BW_OK;
}

static int join_names(const walk *w, int from, const char *extra, char *out,
                      size_t size) {
  return join_upto(w, from, w->depth, extra, out, size);
}

/* The missing part of a path, from the component that was not found: made
 * plain ("a//b/./c" -> "a/b/c", a trailing slash kept). A ".." in it cannot
 * be resolved (its directory does not exist): ENOENT, as the kernel says. */
static int missing_tail(const char *from, char *out, size_t size) {
  size_t o = 0;
  for (const char *p = from; *p;) {
    while (*p == '/') p++;
    const char *s = p;
    while (*p && *p != '/') p++;
    size_t cl = (size_t)(p - s);
    if (cl == 0 || (cl == 1 && s[0] == '.')) continue;
    if (cl == 2 && s[0] == '.' && s[1] == '.') return BW_ENOENT;
    if (o + cl + 2 > size) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
    if (o) out[o++] = '/';
    memcpy(out + o, s, cl);
    o += cl;
  }
  size_t n = strlen(from);
  if (o && n && from[n - 1] == '/') out[o++] = '/';
  out[o] = '\0';
  return o ? BW_OK : BW_ENOENT;
}

/* The directory fd at stack level i for a handle: taken from the walk
 * (which would close it), or duplicated when it is the root's own. */
static int take_fd(walk *w, int i, int *out) {
  if (i > 0) {
    *out = w->stack[i];
    w->stack[i] = -1;
    return BW_OK;
  }
  *out = fcntl(w->stack[0], F_DUPFD_CLOEXEC, 0);
  return *out < 0 ? bw_code_from_errno(errno) : BW_OK;
}

int bw_resolve_handle(const bw_root *roots, int nroots, int idx,
                      const char *rel, int how, bw_handle *h) {
  memset(h, 0, sizeof *h);
  h->dirfd = -1;
  h->root = idx;
  walk w;
  int fd = -1, level = 0;
  char final[BW_NAME_MAX + 1] = "";
  size_t rl = strlen(rel);
  int slash = rl > 1 && rel[rl - 1] == '/';
  h->named = idx;
  if (bw_dot_final(rel)) { /* "x/.", "x/..": never the name of a change */
    if (rl > BW_PATH_MAX) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
    memcpy(h->lexical, rel, rl + 1);
  }
  int rc = reserved(rel);
  if (rc) return rc;
  rc = walk_init(&w, &roots[idx], rel, 1);
  /* not a directory: final is set, and the directory holding it stays on
     the walk's stack, taken once innermost() has looked at it */
  if (rc == BW_OK) rc = walk_run(&w, how & BW_NOFOLLOW, &fd, NULL, final);
  if (rc == BW_OK || (rc == BW_ENOENT && w.fail_at))
    level = innermost(&w, roots, nroots, idx, &h->root);
  if (rc == BW_OK) {
    h->exists = 1;
    if (fstat(fd, &h->st) < 0) rc = bw_code_from_errno(errno);
    else if (final[0]) { /* not a directory: parent + final name */
      rc = take_fd(&w, w.depth, &h->dirfd);
      strcpy(h->rest, final);
      if (!rc) rc = join_names(&w, level, final, h->rel, sizeof h->rel);
      if (!rc) rc = join_upto(&w, level, w.depth, NULL, h->at, sizeof h->at);
    } else if (w.depth == level) { /* a root's own directory */
      rc = take_fd(&w, w.depth, &h->dirfd);
      strcpy(h->rest, ".");
      strcpy(h->rel, ".");
      strcpy(h->at, ".");
    } else { /* a directory: its parent + its name */
      rc = take_fd(&w, w.depth - 1, &h->dirfd);
      snprintf(h->rest, sizeof h->rest, "%s%s", w.names[w.depth], slash ? "/" : "");
      if (!rc) rc = join_names(&w, level, NULL, h->rel, sizeof h->rel);
      if (!rc) rc = join_upto(&w, level, w.depth - 1, NULL, h->at, sizeof h->at);
    }
  } else if (rc == BW_ENOENT && w.fail_at) { /* not there (yet) */
    rc = missing_tail(w.fail_at, h->rest, sizeof h->rest);
    h->dangling = w.fail_at < w.link_end; /* it came from a link's text */
    if (rc == BW_ENOENT && h->lexical[0]) { /* "gone/..": the core refuses it */
      h->rest[0] = '\0';
      rc = join_names(&w, level, NULL, h->rel, sizeof h->rel);
      if (!strcmp(h->rel, ".")) h->rel[0] = '\0';
      for (const char *p = w.fail_at; !rc && *p;) {
        while (*p == '/') p++;
        const char *e = p;
        while (*e && *e != '/') e++;
        rc = canon_add(h->rel, sizeof h->rel, p, (size_t)(e - p));
        p = e;
      }
      if (!h->rel[0]) strcpy(h->rel, ".");
    }
    if (!rc) rc = join_names(&w, level, h->rest, h->rel, sizeof h->rel);
    if (!rc) rc = join_upto(&w, level, w.depth, NULL, h->at, sizeof h->at);
    if (!rc) rc = take_fd(&w, w.depth, &h->dirfd);
  }
  if (!rc) rc = reserved(h->rel); /* reached through a link */
  if (fd >= 0) close(fd);
  walk_free(&w);
  if (rc) bw_handle_close(h);
  return rc;
}

void bw_handle_view(const bw_handle *h, const bw_root *roots, int view,
                    bw_root *out, const char **rel) {
  *out = roots[h->root];
  out->expect_rel = NULL;
  out->anchored = 0;
  out->at = NULL;
  if (view == BW_VIEW_WRITE && h->lexical[0]) { /* "x/.": the core refuses it */
    *out = roots[h->named];
    *rel = h->lexical;
    return;
  }
  if (view == BW_VIEW_WRITE) {
    out->top_fd = roots[h->root].fd;
    out->at = h->at;
    out->fd = h->dirfd;
    out->anchored = 1;
    out->alias = NULL;
    *rel = h->rest;
    return;
  }
  *rel = h->rel;
  /* what was judged absent must still be absent (ino 0 is no file's):
   * a link that appears there after the judgement is EAGAIN, not read */
  out->expect_rel = h->rel;
  out->expect_dev = h->exists ? h->st.st_dev : 0;
  out->expect_ino = h->exists ? h->st.st_ino : 0;
  out->expect_reg = h->exists && S_ISREG(h->st.st_mode);
}
