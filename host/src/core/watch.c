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
 *
 * One inotify instance serves the whole process (the hub): every watcher
 * (an MCP session's subscriptions, an embedder's ws:watch) adds its
 * watches to it, and its fd is an eventfd of its own, so each can be
 * polled by its own loop. A thread of the hub's, started with the first
 * watcher and joined with the last, waits for the instance to turn
 * readable, makes every watcher with a watch readable, and waits for one
 * of them to read. A read drains the instance and marks the watches of
 * every watcher, under the hub's lock (HTTP workers are threads); the
 * watchers a mark reached are made readable. The thread never reads, so
 * events nobody reads stay with the kernel as before. A uid has 128 inotify
 * instances by default: one per session let 127 sessions lock out every
 * other tenant, and every other process of that uid.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/random.h>
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
  char view[BW_WATCH_VIEW]; /* a folder's: what its owner last saw of it (bw_watch_view) */
  /* where it is, for changes heard from other instances (bw_watch_heard):
   * the root's mount and the in-root path, "mount\0rel\0" malloc'd (NULL:
   * added without); its inotify watch is wd (-1 for a root the operator
   * turned inotify off for) */
  char *at;
  const char *rel;
  int64_t ino_ms;    /* when inotify last marked it */
  uint32_t ino_hash; /* and the in-root path that report was about */
} entry;

/* Watches several watchers share a cap on (a tenant's): under the hub's
 * lock, freed with its last watcher. */
typedef struct budget {
  struct budget *next;
  int refs, cap, used;
  char name[];
} budget;

struct bw_watcher {
  int refs;      /* under the hub's lock: owners, and the registry while published */
  int published; /* found by id (bw_watch_find) until bw_watch_drop */
  char id[33];
  bw_watcher *next_pub;
  budget *b;  /* NULL: none */
  int fd;     /* the hub's inotify instance */
  int efd;    /* its own eventfd: readable once a watch of its is marked */
  int kicked; /* marked since the last kick (under the hub's lock) */
  int max, interval_ms, next_id;
  entry *e; /* max slots */
  bw_watcher *next; /* the hub's list */
  /* changes heard through the state store (changes.c): whose they are
   * (the store, the tenant), and what lives as long as the watcher */
  const void *scope;
  char *tenant;
  void *hold;
  void (*release)(void *);
};

/* The process's one inotify instance, its thread, and the watchers on it. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a read happened (gen), or the thread must end */
  int fd;            /* -1 while no watcher lives */
  struct hub_run *run; /* the thread's (a new hub may start before it ends) */
  unsigned gen;      /* reads so far */
  pthread_t th;
  bw_watcher *list;
  budget *budgets;
  bw_watcher *published;
} hub = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, -1, NULL, 0, 0, NULL, NULL, NULL};

int bw_watch_budget(bw_watcher *w, const char *name, int cap) {
  pthread_mutex_lock(&hub.mu);
  budget *b = hub.budgets;
  while (b && strcmp(b->name, name)) b = b->next;
  if (!b && (b = calloc(1, sizeof *b + strlen(name) + 1))) {
    strcpy(b->name, name);
    b->next = hub.budgets;
    hub.budgets = b;
  }
  if (b && !w->b) {
    b->refs++;
    b->cap = cap; /* the newest word of the configuration */
    w->b = b;
  }
  pthread_mutex_unlock(&hub.mu);
  return b ? BW_OK : BW_ENOMEM;
}

static void budget_put(budget *b) {
  if (!b || --b->refs > 0) return;
  for (budget **p = &hub.budgets; *p; p = &(*p)->next)
    if (*p == b) {
      *p = b->next;
      break;
    }
  free(b);
}

static int drain(int fd);

/* Make the watchers marked since the last kick readable. Under the lock. */
static void kick(void) {
  for (bw_watcher *w = hub.list; w; w = w->next)
    if (w->kicked) {
      uint64_t one = 1;
      if (write(w->efd, &one, sizeof one) < 0) { /* full (2^64-2): readable anyway */ }
      w->kicked = 0;
    }
}

typedef struct hub_run {
  int fd, stop; /* the instance; an eventfd that ends the thread */
  int stopping; /* under the hub's lock */
} hub_run;

static int has_watches(const bw_watcher *w) {
  for (int i = 0; i < w->max; i++)
    if (w->e[i].id) return 1;
  return 0;
}

static void *hub_thread(void *arg) {
  hub_run *r = arg;
  for (;;) {
    struct pollfd p[2] = {{.fd = r->fd, .events = POLLIN}, {.fd = r->stop, .events = POLLIN}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (p[1].revents) break;
    if (!p[0].revents) continue;
    pthread_mutex_lock(&hub.mu);
    for (bw_watcher *w = hub.list; w; w = w->next)
      if (has_watches(w)) w->kicked = 1; /* whose events these are, a read tells */
    kick();
    unsigned g = hub.gen; /* then wait for a read: it drains the instance */
    while (hub.gen == g && !r->stopping) pthread_cond_wait(&hub.cv, &hub.mu);
    int stopping = r->stopping;
    pthread_mutex_unlock(&hub.mu);
    if (stopping) break;
  }
  return NULL;
}

/* The instance and its thread, with the first watcher. Under the lock. */
static int hub_start(void) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  int stop = fd < 0 ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  hub_run *arg = stop < 0 ? NULL : malloc(sizeof *arg);
  int err = errno, rc = -1;
  if (arg) {
    *arg = (hub_run){fd, stop, 0};
    /* no signal of the process's is handled on this thread; the caller's
       mask is put back as it was */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&hub.th, NULL, hub_thread, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    err = rc;
  }
  if (rc != 0) {
    free(arg);
    if (fd >= 0) close(fd);
    if (stop >= 0) close(stop);
    errno = err;
    return -1;
  }
  hub.fd = fd;
  hub.run = arg;
  return 0;
}

bw_watcher *bw_watch_new(int max, int interval_ms) {
  if (max < 1) max = 1;
  bw_watcher *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->e = calloc((size_t)max, sizeof *w->e);
  w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (!w->e || w->efd < 0) {
    int err = w->e ? errno : ENOMEM;
    if (w->efd >= 0) close(w->efd);
    free(w->e);
    free(w);
    errno = err;
    return NULL;
  }
  pthread_mutex_lock(&hub.mu);
  int ok = hub.fd >= 0 || hub_start() == 0;
  int err = errno;
  if (ok) {
    w->fd = hub.fd;
    w->next = hub.list;
    hub.list = w;
  }
  pthread_mutex_unlock(&hub.mu);
  if (!ok) {
    close(w->efd);
    free(w->e);
    free(w);
    errno = err;
    return NULL;
  }
  w->max = max;
  w->interval_ms = interval_ms < 0 ? 0 : interval_ms;
  w->next_id = 1;
  w->refs = 1;
  return w;
}

int bw_watch_publish(bw_watcher *w, char id[33]) {
  pthread_mutex_lock(&hub.mu);
  if (!w->published) {
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
      pthread_mutex_unlock(&hub.mu);
      return BW_EIO;
    }
    for (int i = 0; i < 16; i++) sprintf(w->id + 2 * i, "%02x", rnd[i]);
    w->published = 1;
    w->refs++;
    w->next_pub = hub.published;
    hub.published = w;
  }
  memcpy(id, w->id, 33);
  pthread_mutex_unlock(&hub.mu);
  return BW_OK;
}

bw_watcher *bw_watch_find(const char *id) {
  pthread_mutex_lock(&hub.mu);
  bw_watcher *w = hub.published;
  while (w && strcmp(w->id, id)) w = w->next_pub;
  if (w) w->refs++;
  pthread_mutex_unlock(&hub.mu);
  return w;
}

void bw_watch_drop(bw_watcher *w) {
  pthread_mutex_lock(&hub.mu);
  int was = w->published;
  if (was) {
    for (bw_watcher **p = &hub.published; *p; p = &(*p)->next_pub)
      if (*p == w) {
        *p = w->next_pub;
        break;
      }
    w->published = 0;
  }
  pthread_mutex_unlock(&hub.mu);
  if (was) bw_watch_free(w); /* the registry's reference */
}

static int wd_users(int wd);

void bw_watch_free(bw_watcher *w) {
  if (!w) return;
  hub_run *run = NULL;
  pthread_t th;
  pthread_mutex_lock(&hub.mu);
  if (--w->refs > 0) { /* another owner (a published watcher's finder) holds it */
    pthread_mutex_unlock(&hub.mu);
    return;
  }
  for (bw_watcher **p = &hub.list; *p; p = &(*p)->next)
    if (*p == w) {
      *p = w->next;
      break;
    }
  for (int i = 0; i < w->max; i++) { /* its watches, unless another holds them */
    int wd = w->e[i].wd;
    free(w->e[i].at);
    w->e[i].at = NULL;
    if (!w->e[i].id) continue;
    w->e[i].id = 0;
    if (w->b) w->b->used--;
    if (wd >= 0 && !wd_users(wd)) inotify_rm_watch(hub.fd, wd);
  }
  budget_put(w->b);
  w->b = NULL;
  if (!hub.list) { /* the last one: the instance and its thread go too */
    run = hub.run;
    th = hub.th;
    hub.fd = -1;
    hub.run = NULL;
    run->stopping = 1;
    pthread_cond_broadcast(&hub.cv);
  }
  pthread_mutex_unlock(&hub.mu);
  if (run) { /* joined outside the lock, which the thread takes */
    uint64_t one = 1;
    if (write(run->stop, &one, sizeof one) < 0) { /* cannot fail: a fresh counter */ }
    pthread_join(th, NULL);
    close(run->stop);
    close(run->fd);
    free(run);
  }
  close(w->efd);
  free(w->e);
  free(w->tenant);
  if (w->release) w->release(w->hold); /* outside the hub's lock: it may unsubscribe */
  free(w);
}

int bw_watch_fd(const bw_watcher *w) { return w->efd; }

int bw_watch_count(const bw_watcher *w) {
  int n = 0;
  pthread_mutex_lock(&hub.mu);
  for (int i = 0; i < w->max; i++) n += w->e[i].id != 0;
  pthread_mutex_unlock(&hub.mu);
  return n;
}

/* How many watches of any watcher use the kernel's wd (one instance: two
 * watchers of one directory share it). Under the hub's lock. */
static int wd_users(int wd) {
  int n = 0;
  for (const bw_watcher *w = hub.list; w; w = w->next)
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
    if (!wd_users(got)) inotify_rm_watch(w->fd, got);
    return bw_fail(BW_EAGAIN, "the watched object changed, retry");
  }
  *wd = got;
  return BW_OK;
}

static int watch_add(bw_watcher *w, const bw_handle *h, int inotify, int *id);

int bw_watch_add(bw_watcher *w, const bw_handle *h, int *id) {
  return bw_watch_add_at(w, h, NULL, 1, id);
}

int bw_watch_add_at(bw_watcher *w, const bw_handle *h, const char *mount, int inotify, int *id) {
  char *at = NULL;
  if (mount) { /* "mount\0rel\0": made before the lock */
    size_t ml = strlen(mount), rl = strlen(h->rel);
    if (!(at = malloc(ml + rl + 2))) return BW_ENOMEM;
    memcpy(at, mount, ml + 1);
    memcpy(at + ml + 1, h->rel, rl + 1);
  }
  pthread_mutex_lock(&hub.mu);
  int rc = watch_add(w, h, inotify, id);
  if (!rc) {
    for (int i = 0; i < w->max; i++)
      if (w->e[i].id == *id) {
        w->e[i].at = at;
        w->e[i].rel = at ? at + strlen(at) + 1 : NULL;
        at = NULL;
      }
  }
  pthread_mutex_unlock(&hub.mu);
  free(at);
  return rc;
}

static int watch_add(bw_watcher *w, const bw_handle *h, int inotify, int *id) {
  if (!h->exists || h->dirfd < 0) return BW_ENOENT;
  int slot = -1;
  for (int i = 0; i < w->max && slot < 0; i++)
    if (!w->e[i].id) slot = i;
  if (slot < 0) return bw_fail(BW_TOO_LARGE, "too many watches (max_watches)");
  if (w->b && w->b->used >= w->b->cap)
    return bw_fail(BW_TOO_LARGE, "the tenant's watches are all in use (http.max_watches)");
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
  int wd = -1; /* none where inotify is off: changes come only as heard */
  if (rc == BW_OK && inotify) rc = add_by_fd(w, is_dir ? fd : h->dirfd, &wd);
  close(fd);
  if (rc) return rc;
  entry *e = &w->e[slot];
  free(e->at);
  memset(e, 0, sizeof *e);
  e->id = w->next_id++;
  if (w->next_id == INT_MAX) w->next_id = 1;
  if (w->b) w->b->used++;
  e->wd = wd;
  e->dir = is_dir;
  e->last_ms = -1e18;
  if (!is_dir) strcpy(e->name, name);
  *id = e->id;
  return BW_OK;
}

int bw_watch_remove(bw_watcher *w, int id) {
  pthread_mutex_lock(&hub.mu);
  for (int i = 0; i < w->max; i++) {
    entry *e = &w->e[i];
    if (e->id != id || !id) continue;
    int wd = e->wd;
    e->id = 0;
    free(e->at);
    e->at = NULL;
    e->rel = NULL;
    if (w->b) w->b->used--;
    if (wd >= 0 && !wd_users(wd)) inotify_rm_watch(w->fd, wd);
    pthread_mutex_unlock(&hub.mu);
    return BW_OK;
  }
  pthread_mutex_unlock(&hub.mu);
  return bw_fail(BW_INVALID_ARGUMENT, "no such watch");
}

int bw_watch_view(bw_watcher *w, int id, const char *set, char out[BW_WATCH_VIEW]) {
  pthread_mutex_lock(&hub.mu); /* any worker of the session may ask */
  for (int i = 0; i < w->max; i++) {
    entry *e = &w->e[i];
    if (e->id != id || !id) continue;
    if (set) snprintf(e->view, sizeof e->view, "%s", set);
    memcpy(out, e->view, BW_WATCH_VIEW);
    pthread_mutex_unlock(&hub.mu);
    return BW_OK;
  }
  pthread_mutex_unlock(&hub.mu);
  return bw_fail(BW_INVALID_ARGUMENT, "no such watch");
}

static void mark_one(bw_watcher *w, const struct inotify_event *ev, int64_t now);

/* One event: the flags of the watches on its wd it concerns, in every
 * watcher. Under the hub's lock. */
static void mark(const struct inotify_event *ev, int64_t now) {
  for (bw_watcher *w = hub.list; w; w = w->next) mark_one(w, ev, now);
}

/* FNV-1a of an in-root path: a report's identity, to tell whether a
 * change heard from the store is one inotify already reported. The
 * child name of a folder's event is hashed on as "rel/name". */
static uint32_t fnv(uint32_t h, const char *s) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}
#define FNV0 2166136261u
static uint32_t path_hash(const char *rel, const char *name) {
  if (!name || !*name) return fnv(FNV0, rel);
  if (!strcmp(rel, ".")) return fnv(FNV0, name);
  return fnv(fnv(fnv(FNV0, rel), "/"), name);
}

static void mark_one(bw_watcher *w, const struct inotify_event *ev, int64_t now) {
  const uint32_t listed = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
  const uint32_t self = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT;
  for (int i = 0; i < w->max; i++) {
    entry *e = &w->e[i];
    if (!e->id || e->wd != ev->wd) continue;
    int before = e->what;
    if (ev->mask & self) {
      e->what |= e->dir ? BW_WATCH_GONE | BW_WATCH_LIST : BW_WATCH_CHANGED;
      if (ev->mask & IN_IGNORED) e->wd = -1; /* the kernel dropped it */
    } else if (e->dir) {
      if (ev->mask & listed) e->what |= BW_WATCH_LIST;
    } else if (ev->len && !strcmp(ev->name, e->name)) {
      e->what |= BW_WATCH_CHANGED;
    }
    if (e->what != before) {
      w->kicked = 1;
      if (e->rel) {
        e->ino_ms = now;
        e->ino_hash = path_hash(e->rel, e->dir && ev->len ? ev->name : NULL);
      }
    }
  }
}

static int drain(int fd) {
  static char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
  int count = 0;
  int64_t now = bw_now_ms();
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return count;
    if (n <= 0) return n < 0 ? -1 : count;
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      if (ev->mask & IN_Q_OVERFLOW) { /* events were lost: every watch */
        for (bw_watcher *w = hub.list; w; w = w->next)
          for (int i = 0; i < w->max; i++)
            if (w->e[i].id) {
              w->e[i].what |= w->e[i].dir ? BW_WATCH_LIST : BW_WATCH_CHANGED;
              w->kicked = 1;
            }
      } else {
        mark(ev, now);
      }
      count++;
      p += sizeof *ev + ev->len;
    }
  }
}

int bw_watch_read(bw_watcher *w) {
  pthread_mutex_lock(&hub.mu); /* the buffer is the hub's too */
  int n = drain(w->fd);
  int err = errno;
  hub.gen++; /* the thread may wait for the instance again */
  pthread_cond_broadcast(&hub.cv);
  kick();
  uint64_t v; /* quiet again: what it signalled is what due now reports */
  if (read(w->efd, &v, sizeof v) < 0) { /* EAGAIN: nothing was signalled */ }
  pthread_mutex_unlock(&hub.mu);
  errno = err;
  return n;
}

int bw_watch_due(bw_watcher *w, double now_ms, bw_watch_event *out, int max,
                 double *next_ms) {
  int n = 0;
  double next = -1;
  pthread_mutex_lock(&hub.mu);
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
  pthread_mutex_unlock(&hub.mu);
  *next_ms = next;
  return n;
}

/* ---- changes heard through the state store (changes.c) */

void bw_watch_scope(bw_watcher *w, const void *scope, const char *tenant, void *hold,
                    void (*release)(void *)) {
  char *t = strdup(tenant);
  pthread_mutex_lock(&hub.mu);
  void *old = w->hold;
  void (*old_release)(void *) = w->release;
  free(w->tenant);
  w->tenant = t;
  w->scope = t ? scope : NULL;
  w->hold = hold;
  w->release = release;
  pthread_mutex_unlock(&hub.mu);
  if (old_release) old_release(old);
}

/* rel lies beneath (or is) dir, in-root paths: "." holds them all. */
static int beneath(const char *rel, const char *dir) {
  if (!strcmp(dir, ".")) return 1;
  size_t n = strlen(dir);
  return !strncmp(rel, dir, n) && (rel[n] == '/' || rel[n] == 0);
}

/* What a change of rel means to watch e (0: nothing), and the in-root
 * path its report is about (*h). */
static int heard_one(const entry *e, const char *rel, int gone, uint32_t *h) {
  int self = e->dir ? BW_WATCH_LIST | (gone ? BW_WATCH_GONE : 0) : BW_WATCH_CHANGED;
  if (!strcmp(e->rel, rel)) {
    *h = path_hash(e->rel, NULL);
    return self;
  }
  if (beneath(e->rel, rel)) { /* a folder above it moved, went, or was replaced */
    *h = path_hash(e->rel, NULL);
    return e->dir ? BW_WATCH_LIST | BW_WATCH_GONE : BW_WATCH_CHANGED;
  }
  const char *slash = strrchr(rel, '/');
  int parent = slash ? (size_t)(slash - rel) == strlen(e->rel) && !strncmp(rel, e->rel, (size_t)(slash - rel))
                     : !strcmp(e->rel, ".");
  if (e->dir && parent) { /* an entry of the folder */
    *h = path_hash(rel, NULL);
    return BW_WATCH_LIST;
  }
  return 0;
}

int bw_watch_heard(const void *scope, const char *tenant, const char *mount, const char *rel,
                   int gone) {
  int64_t now = bw_now_ms();
  int n = 0;
  pthread_mutex_lock(&hub.mu);
  for (bw_watcher *w = hub.list; w; w = w->next) {
    if (!w->scope || w->scope != scope || strcmp(w->tenant, tenant)) continue;
    for (int i = 0; i < w->max; i++) {
      entry *e = &w->e[i];
      uint32_t h = 0;
      if (!e->id || !e->at || strcmp(e->at, mount)) continue;
      int bits = heard_one(e, rel, gone, &h);
      if (!bits) continue;
      /* the echo of what inotify reported: the same path, a moment ago */
      if (e->ino_ms && now - e->ino_ms < BW_WATCH_ECHO_MS && e->ino_hash == h) continue;
      if ((e->what | bits) != e->what) w->kicked = 1;
      e->what |= bits;
      n++;
    }
  }
  kick();
  pthread_mutex_unlock(&hub.mu);
  return n;
}

void bw_watch_heard_gap(const void *scope, const char *tenant) {
  pthread_mutex_lock(&hub.mu);
  for (bw_watcher *w = hub.list; w; w = w->next) {
    if (!w->scope || w->scope != scope || strcmp(w->tenant, tenant)) continue;
    for (int i = 0; i < w->max; i++)
      if (w->e[i].id && w->e[i].at) {
        w->e[i].what |= w->e[i].dir ? BW_WATCH_LIST : BW_WATCH_CHANGED;
        w->kicked = 1;
      }
  }
  kick();
  pthread_mutex_unlock(&hub.mu);
}
