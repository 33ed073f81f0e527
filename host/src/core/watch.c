/*
 * watch.c - file watch on Linux inotify, for resources/subscribe and the
 * embedders' ws:watch.
 *
 * inotify_add_watch takes a path, and a path is what the resolver exists
 * to avoid: a watch is added on /proc/self/fd/N of an fd the handle's
 * resolution gave, so the kernel watches exactly that object, and the
 * object found there is checked against the one the policies judged.
 * A file is watched through its holding directory, filtered by its name:
 * writes that replace the file (burrow's own atomic replace, an editor's
 * save) give it a new inode a watch on the old one would never see.
 *
 * Events only set flags on the watches they touch, so a flood of changes
 * costs no memory; a watch is reported at most once per interval.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "watch.h"

#define PROC_MAGIC 0x9fa0 /* PROC_SUPER_MAGIC */

/* Every watch asks for the same events, so two watches on one directory
 * share the kernel's watch descriptor without one narrowing the other. */
#define MASK                                                                  \
  (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE |           \
   IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

typedef struct entry {
  int id;   /* 0 = a free slot */
  int wd;   /* the kernel's watch on the directory; -1 once it is gone */
  int dir;  /* watching the directory itself (else the file name in it) */
  int what; /* BW_WATCH_* bits not yet reported */
  double last_ms; /* when it was last reported */
  char name[BW_NAME_MAX + 1];
} entry;

struct bw_watcher {
  int fd;
  int max, interval_ms, next_id;
  entry *e; /* max slots */
};

bw_watcher *bw_watch_new(int max, int interval_ms) {
  if (max < 1) max = 1;
  bw_watcher *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->e = calloc((size_t)max, sizeof *w->e);
  w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (!w->e || w->fd < 0) {
    int err = errno;
    if (w->fd >= 0) close(w->fd);
    free(w->e);
    free(w);
    errno = err;
    return NULL;
  }
  w->max = max;
  w->interval_ms = interval_ms < 0 ? 0 : interval_ms;
  w->next_id = 1;
  return w;
}

void bw_watch_free(bw_watcher *w) {
  if (!w) return;
  close(w->fd);
  free(w->e);
  free(w);
}

int bw_watch_fd(const bw_watcher *w) { return w->fd; }

int bw_watch_count(const bw_watcher *w) {
  int n = 0;
  for (int i = 0; i < w->max; i++) n += w->e[i].id != 0;
  return n;
}

static int wd_users(const bw_watcher *w, int wd) {
  int n = 0;
  for (int i = 0; i < w->max; i++) n += w->e[i].id && w->e[i].wd == wd;
  return n;
}

/* inotify_add_watch on the object fd holds, by its /proc magic link: only
 * if /proc is procfs and the link leads to that very object. */
static int add_by_fd(bw_watcher *w, int fd, int *wd) {
  char p[64];
  struct statfs sf;
  struct stat a, b;
  if (statfs("/proc/self", &sf) < 0 || sf.f_type != PROC_MAGIC)
    return bw_fail(BW_EACCES, "/proc is not procfs: cannot watch by fd");
  snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
  int got = inotify_add_watch(w->fd, p, MASK);
  if (got < 0) {
    int err = errno;
    if (err == ENOSPC)
      return bw_fail(BW_TOO_LARGE, "the system's inotify watch limit is reached");
    return bw_code_from_errno(err);
  }
  if (fstat(fd, &a) < 0 || stat(p, &b) < 0 || a.st_dev != b.st_dev ||
      a.st_ino != b.st_ino) {
    if (!wd_users(w, got)) inotify_rm_watch(w->fd, got);
    return bw_fail(BW_EAGAIN, "the watched object changed, retry");
  }
  *wd = got;
  return BW_OK;
}

int bw_watch_add(bw_watcher *w, const bw_handle *h, int *id) {
  if (!h->exists || h->dirfd < 0) return BW_ENOENT;
  int slot = -1;
  for (int i = 0; i < w->max && slot < 0; i++)
    if (!w->e[i].id) slot = i;
  if (slot < 0) return bw_fail(BW_TOO_LARGE, "too many watches (max_watches)");
  int is_dir = S_ISDIR(h->st.st_mode);
  if (!is_dir && !S_ISREG(h->st.st_mode)) return BW_NOT_REGULAR;
  char name[BW_NAME_MAX + 1];
  size_t n = strlen(h->rest);
  while (n > 1 && h->rest[n - 1] == '/') n--;
  if (n > BW_NAME_MAX || memchr(h->rest, '/', n))
    return bw_fail(BW_INVALID_ARGUMENT, "not a final name");
  memcpy(name, h->rest, n);
  name[n] = '\0';
  /* the object again, beneath the held directory: the one judged? */
  int fd = openat(h->dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return bw_code_from_errno(errno);
  struct stat st;
  int rc = BW_OK;
  if (fstat(fd, &st) < 0) rc = bw_code_from_errno(errno);
  else if (st.st_dev != h->st.st_dev || st.st_ino != h->st.st_ino ||
           (st.st_mode & S_IFMT) != (h->st.st_mode & S_IFMT)) /* a freed
                                           inode number is reused at once */
    rc = bw_fail(BW_EAGAIN, "the path changed since it was judged, retry");
  int wd = -1;
  if (rc == BW_OK) rc = add_by_fd(w, is_dir ? fd : h->dirfd, &wd);
  close(fd);
  if (rc) return rc;
  entry *e = &w->e[slot];
  memset(e, 0, sizeof *e);
  e->id = w->next_id++;
  if (w->next_id == INT_MAX) w->next_id = 1;
  e->wd = wd;
  e->dir = is_dir;
  e->last_ms = -1e18;
  if (!is_dir) strcpy(e->name, name);
  *id = e->id;
  return BW_OK;
}

int bw_watch_remove(bw_watcher *w, int id) {
  for (int i = 0; i < w->max; i++) {
    entry *e = &w->e[i];
    if (e->id != id || !id) continue;
    int wd = e->wd;
    e->id = 0;
    if (wd >= 0 && !wd_users(w, wd)) inotify_rm_watch(w->fd, wd);
    return BW_OK;
  }
  return bw_fail(BW_INVALID_ARGUMENT, "no such watch");
}

/* One event: the flags of the watches on its wd it concerns. */
static void mark(bw_watcher *w, const struct inotify_event *ev) {
  const uint32_t listed = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
  const uint32_t self = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT;
  for (int i = 0; i < w->max; i++) {
    entry *e = &w->e[i];
    if (!e->id || e->wd != ev->wd) continue;
    if (ev->mask & self) {
      e->what |= e->dir ? BW_WATCH_GONE | BW_WATCH_LIST : BW_WATCH_CHANGED;
      if (ev->mask & IN_IGNORED) e->wd = -1; /* the kernel dropped it */
    } else if (e->dir) {
      if (ev->mask & listed) e->what |= BW_WATCH_LIST;
    } else if (ev->len && !strcmp(ev->name, e->name)) {
      e->what |= BW_WATCH_CHANGED;
    }
  }
}

int bw_watch_read(bw_watcher *w) {
  char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
  int count = 0;
  for (;;) {
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return count;
    if (n <= 0) return n < 0 ? -1 : count;
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      if (ev->mask & IN_Q_OVERFLOW) { /* events were lost: every watch */
        for (int i = 0; i < w->max; i++)
          if (w->e[i].id)
            w->e[i].what |= w->e[i].dir ? BW_WATCH_LIST : BW_WATCH_CHANGED;
      } else {
        mark(w, ev);
      }
      count++;
      p += sizeof *ev + ev->len;
    }
  }
}

int bw_watch_due(bw_watcher *w, double now_ms, bw_watch_event *out, int max,
                 double *next_ms) {
  int n = 0;
  double next = -1;
  for (int i = 0; i < w->max; i++) {
    entry *e = &w->e[i];
    if (!e->id || !e->what) continue;
    double due = e->last_ms + w->interval_ms;
    if (due <= now_ms && n < max) {
      out[n].id = e->id;
      out[n].what = e->what;
      n++;
      e->what = 0;
      e->last_ms = now_ms;
      continue;
    }
    double wait = due > now_ms ? due - now_ms : 0;
    if (next < 0 || wait < next) next = wait;
  }
  *next_ms = next;
  return n;
}
