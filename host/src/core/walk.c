/*
 * walk.c - the parallel directory walker behind grep and glob.
 *
 * Workers share one LIFO stack of directories (depth first keeps memory
 * down, and popping the smallest name first keeps the walk close to path
 * order, which lets a capped search prune early). The worker that reads a
 * directory handles its entries itself: files are visited right there,
 * with the directory's fd, so no path string ever reaches a syscall. While
 * another worker waits with nothing to take, it is offered the second half
 * of the entries left (a share: the same directory node and fd, a copy of
 * the names), so one large directory is not one thread's work.
 *
 * Every directory is opened from its parent's fd: O_PATH|O_NOFOLLOW|
 * O_DIRECTORY, checked to be on the root's device and mount, then opened
 * for reading. A symlink is reported, never followed; a mount point is
 * never entered. A parent's fd stays open only until its last child has
 * opened its own, so a deep tree does not hold a fd per level. Entry types
 * come from d_type (an lstat only where the filesystem gives none).
 *
 * With policy rules, each worker builds an entry's in-root path in its own
 * buffer (the walk's base, then the path below the start, which results
 * use as a suffix of it), and a denied entry is skipped and counted before
 * ignore rules or the visitor see it. Below another root's directory
 * (bw_nest: met by identity, nested in this one), the rules see that
 * root's in-root paths instead: its rules apply to everything under it.
 * The directory nodes and their ignore rules are walknode.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "search.h"
#include "stage.h"
#include "walknode.h"

/* SHARE_MIN: entries left for a directory's worker to offer half of them */
enum { MAX_THREADS = 12, DENTS_BUF = 64 * 1024, SHARE_MIN = 4 };

/* A walk reads what it meets and shows its names: a rule denying either
 * (read, or only list) keeps an entry out, a directory unentered. */
#define WALK_OPS (BW_OP_READ | BW_OP_LIST)

typedef struct dent {
  const char *name;
  unsigned char type;
} dent;

/* Part of a directory's entries for another worker: the node (a reference
 * and an fd reference held for it) and its own copy of the entries, the
 * names after the array. */
typedef struct share {
  node *n;
  size_t nv;
  dent v[];
} share;

/* An entry o->defer matched, waiting for the caller's verdict: the
 * worker that met it waits (on the walker's judged_cv) with it on its own
 * stack, holding nothing more than the directory it is reading, so the
 * fds a walk holds stay as they are whatever the judge's pace. */
typedef struct pend {
  struct pend *next;
  bw_wjudge item;
  int verdict; /* -1 until judged; then 1 allowed, 0 refused */
} pend;

/* What the stack holds: a directory to read, or a share of one. */
typedef struct task {
  node *n;
  share *s;
} task;

typedef struct walker {
  const bw_root *r;
  const bw_walk_opts *o;
  pthread_mutex_t mu;
  pthread_cond_t cv, done_cv;
  task *stack;
  size_t n, cap;
  int active, finished, nthreads;
  _Atomic int idle; /* workers waiting for a task (changed under mu) */
  _Atomic int stop, err;
  bw_walk_stats local;
  bw_walk_stats *st;
  /* with rules: the in-root path of the start, "/"-terminated ("" for the
   * root); below's dirs start at boff */
  char pre[2 * BW_PATH_MAX + 2];
  size_t prelen, boff;
  int root; /* the root the start's entries are judged in (bw_nest's index; -1 unknown) */
  /* o->defer: entries waiting for o->judge (under mu); their workers wait
   * on judged_cv */
  pend *pending;
  pthread_cond_t judged_cv;
  int inline_walk; /* no worker threads: this thread walks and judges */
} walker;

typedef struct worker {
  walker *w;
  int id;
  _Alignas(16) char dents[DENTS_BUF]; /* holds struct dirent64 records */
  dent *v;
  size_t n, cap;
  char *names;
  size_t nlen, ncap;
  char *path; /* walker's pre, then an entry's path below the start */
  size_t pcap;
} worker;

/* ---- helpers ---- */

int bw_walk_threads(int requested) {
  if (requested > 0) return requested > MAX_THREADS ? MAX_THREADS : requested;
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0) n = 1;
  return n > MAX_THREADS ? MAX_THREADS : n;
}

/* Is fd on the root's device and mount? */
static int same_mount(const bw_root *r, int fd) {
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
            STATX_TYPE | STATX_MNT_ID, &sx) < 0)
    return 0;
  if (makedev(sx.stx_dev_major, sx.stx_dev_minor) != r->dev) return 0;
  if (r->mnt_id && (!(sx.stx_mask & STATX_MNT_ID) || sx.stx_mnt_id != r->mnt_id))
    return 0;
  return 1;
}

int bw_open_regular(const bw_root *r, int dirfd, const char *name,
                    struct stat *st, int *out) {
  int fd = openat(dirfd, name,
                  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return bw_code_from_errno(errno);
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_MNT_ID, &sx) < 0) {
    int e = errno;
    close(fd);
    return bw_code_from_errno(e);
  }
  int rc = BW_OK;
  if (!S_ISREG(sx.stx_mode)) rc = BW_NOT_REGULAR; /* swapped in after readdir */
  else if (makedev(sx.stx_dev_major, sx.stx_dev_minor) != r->dev ||
           (r->mnt_id && (sx.stx_mask & STATX_MNT_ID) &&
            sx.stx_mnt_id != r->mnt_id))
    rc = BW_OUTSIDE_ROOT; /* a file bind-mounted into the tree */
  if (rc) {
    close(fd);
    return bw_fail(rc, NULL);
  }
  memset(st, 0, sizeof *st);
  st->st_mode = sx.stx_mode;
  st->st_size = (off_t)sx.stx_size;
  st->st_ino = sx.stx_ino;
  st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  st->st_mtim.tv_sec = sx.stx_mtime.tv_sec;
  st->st_mtim.tv_nsec = sx.stx_mtime.tv_nsec;
  *out = fd;
  return BW_OK;
}

/* ---- reading one directory ---- */

static int add_dent(worker *k, const char *name, unsigned char type) {
  size_t l = strlen(name) + 1;
  if (k->nlen + l > k->ncap) {
    size_t c = k->ncap ? k->ncap * 2 : 16384;
    while (c < k->nlen + l) c *= 2;
    char *nn = realloc(k->names, c);
    if (!nn) return -1;
    for (size_t i = 0; i < k->n; i++) k->v[i].name = nn + (k->v[i].name - k->names);
    k->names = nn;
    k->ncap = c;
  }
  if (k->n == k->cap) {
    size_t c = k->cap ? k->cap * 2 : 256;
    dent *nv = realloc(k->v, c * sizeof *nv);
    if (!nv) return -1;
    k->v = nv;
    k->cap = c;
  }
  memcpy(k->names + k->nlen, name, l);
  k->v[k->n].name = k->names + k->nlen;
  k->v[k->n].type = type;
  k->n++;
  k->nlen += l;
  return 0;
}

static int by_dent_name(const void *a, const void *b) {
  return strcmp(((const dent *)a)->name, ((const dent *)b)->name);
}

/* Names of the directory at fd, sorted ("." and ".." left out). */
static int read_dents(worker *k, int fd) {
  k->n = k->nlen = 0;
  for (;;) {
    ssize_t got = getdents64(fd, k->dents, sizeof k->dents);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return bw_code_from_errno(errno);
    if (got == 0) break;
    for (ssize_t off = 0; off < got;) {
      struct dirent64 *d = (struct dirent64 *)(k->dents + off);
      off += d->d_reclen;
      const char *s = d->d_name;
      if (s[0] == '.' && (!s[1] || (s[1] == '.' && !s[2]))) continue;
      if (s[0] == '.' && bw_stage_name(s)) continue; /* a staged tree: no one's */
      if (add_dent(k, s, d->d_type)) return BW_ENOMEM;
    }
  }
  if (k->n > 1) qsort(k->v, k->n, sizeof *k->v, by_dent_name);
  return BW_OK;
}

static char type_of(unsigned char dt, int dirfd, const char *name) {
  if (dt == DT_UNKNOWN) { /* some filesystems give no d_type */
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return 0;
    if (S_ISREG(st.st_mode)) return 'f';
    if (S_ISDIR(st.st_mode)) return 'd';
    if (S_ISLNK(st.st_mode)) return 'l';
    return 'o';
  }
  return dt == DT_REG ? 'f' : dt == DT_DIR ? 'd' : dt == DT_LNK ? 'l' : 'o';
}

/* The child directory name of dirfd opened for reading in one call, where
 * the kernel has openat2: RESOLVE_NO_XDEV refuses a mount point before
 * anything of the other filesystem is asked (no open() reaches it), as
 * the O_PATH step of open_node does in three calls more. *fd, or -1 with
 * the errno to answer (EXDEV: a mount point); -2 where openat2 cannot be
 * used (the caller takes the O_PATH steps). */
static int open_dir_at2(int dirfd, const char *name, int *fd) {
  struct open_how how = {
      .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
      .resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
  };
  for (int i = 0; i < 8; i++) {
    *fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof how);
    if (*fd >= 0 || errno != EAGAIN) break;
  }
  if (*fd < 0 && (errno == ENOSYS || errno == EPERM)) return -2; /* not here */
  return *fd < 0 ? -1 : 0;
}

/* Open the node's directory for reading from its parent's fd. */
static int open_node(walker *w, node *n) {
  if (!n->name) return n->fd >= 0 ? BW_OK : BW_EIO; /* the start: opened */
  int c = -1, at2 = bw_root_backend(w->r) == BW_OPENAT2 ? open_dir_at2(n->parent->fd, n->name, &c) : -2;
  if (at2 == -1) {
    int e = errno;
    bww_fd_release(n->parent);
    return e == EXDEV ? BW_OUTSIDE_ROOT : bw_code_from_errno(e); /* a mount point: listed, never entered */
  }
  if (at2 == -2)
    c = openat(n->parent->fd, n->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  bww_fd_release(n->parent);
  if (c < 0) return bw_code_from_errno(errno);
  if (!same_mount(w->r, c)) { /* a mount point: listed, never entered */
    close(c);                /* (with openat2: another device on this mount) */
    return BW_OUTSIDE_ROOT;
  }
  struct stat st; /* another root's directory: its in-root paths below */
  int in = w->o->nest && w->o->nest->n && fstat(c, &st) == 0
               ? bw_nest_enter(w->o->nest, st.st_dev, st.st_ino, n->path, n->plen)
               : -1;
  if (in >= 0) {
    n->nest_at = n->plen + 1;
    n->nest_root = in;
  }
  if (at2 == 0) { /* opened for reading already */
    n->fd = c;
    return BW_OK;
  }
  n->fd = openat(c, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int e = errno;
  close(c);
  return n->fd < 0 ? bw_code_from_errno(e) : BW_OK;
}

static int stopped(walker *w) {
  if (atomic_load(&w->stop)) return 1;
  if (w->o->cancel && atomic_load(w->o->cancel)) {
    atomic_store(&w->st->cancelled, 1);
    atomic_store(&w->stop, 1);
    return 1;
  }
  return 0;
}

static void push_children(walker *w, node **kids, size_t nk) {
  if (!nk) return;
  pthread_mutex_lock(&w->mu);
  if (w->n + nk > w->cap) {
    size_t c = w->cap ? w->cap : 256;
    while (c < w->n + nk) c *= 2;
    task *ns = realloc(w->stack, c * sizeof *ns);
    if (!ns) {
      pthread_mutex_unlock(&w->mu);
      for (size_t i = 0; i < nk; i++) bww_node_drop(kids[i]);
      atomic_store(&w->err, BW_ENOMEM);
      atomic_store(&w->stop, 1);
      return;
    }
    w->stack = ns;
    w->cap = c;
  }
  for (size_t i = nk; i-- > 0;) w->stack[w->n++] = (task){kids[i], NULL}; /* smallest on top */
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Room for the walker's prefix and need more bytes in the worker's path
 * buffer; the prefix is written once, when the buffer is made. */
static int path_room(const walker *w, worker *k, size_t need) {
  if (w->prelen + need <= k->pcap) return 0;
  size_t c = k->pcap ? k->pcap : 512;
  while (c < w->prelen + need) c *= 2;
  char *p = realloc(k->path, c);
  if (!p) return -1;
  if (!k->path) memcpy(p, w->pre, w->prelen);
  k->path = p;
  k->pcap = c;
  return 0;
}

/* Visit one entry; a child node to push for a directory to descend. */
/* The caller's verdict on the entry at path (of n's directory): 1 allowed,
 * 0 refused (counted as a rule's refusal), -1 the walk stops. Asked by
 * the supervising thread (judge_pending) while this worker waits; by
 * this thread itself where it is the calling one (no worker threads). */
static int judge_entry(walker *w, node *n, char type, const char *path) {
  const bw_walk_opts *o = w->o;
  pend p = {NULL, {path, type, n->nest_at, n->nest_at ? n->nest_root : 0}, -1};
  if (w->inline_walk) {
    unsigned char allow = 0;
    int rc = o->judge && !stopped(w) ? o->judge(o->judge_arg, &p.item, 1, &allow) : BW_OK;
    if (rc) {
      atomic_store(&w->err, rc);
      atomic_store(&w->stop, 1);
      return -1;
    }
    p.verdict = allow;
  } else {
    pthread_mutex_lock(&w->mu);
    p.next = w->pending;
    w->pending = &p;
    pthread_cond_signal(&w->done_cv); /* the supervisor judges */
    while (p.verdict < 0) pthread_cond_wait(&w->judged_cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    if (stopped(w)) return -1;
  }
  if (!p.verdict) atomic_fetch_add(&w->st->skipped_policy, 1);
  return p.verdict;
}

static int visit_entry(walker *w, worker *k, node *n, const dent *d,
                       node **kid) {
  const bw_walk_opts *o = w->o;
  const char *name = d->name;
  *kid = NULL;
  if (name[0] == '.' && !o->include_hidden) return 0;
  char type = type_of(d->type, n->fd, name);
  if (!type) return 0;
  if (o->respect_ignore && type == 'd' && !strcmp(name, ".git")) return 0;
  size_t nl = strlen(name), pl = n->plen + (n->plen ? 1 : 0);
  if (path_room(w, k, pl + nl + 1)) return -1;
  char *path = k->path + w->prelen;
  memcpy(path, n->path, n->plen);
  if (n->plen) path[n->plen] = '/';
  memcpy(path + pl, name, nl + 1);
  if (o->rules &&
      (n->nest_at ? bw_rules_match_in(o->rules, n->nest_root, path + n->nest_at, pl + nl - n->nest_at, WALK_OPS)
                  : bw_rules_match_in(o->rules, w->root, k->path, w->prelen + pl + nl, WALK_OPS)) >= 0) {
    atomic_fetch_add(&w->st->skipped_policy, 1); /* a dir: not entered */
    return 0;
  }
  if (o->respect_ignore && bww_ignored(n, path, type == 'd')) return 0;
  if (o->defer &&
      (n->nest_at ? bw_rules_match_in(o->defer, n->nest_root, path + n->nest_at, pl + nl - n->nest_at, WALK_OPS)
                  : bw_rules_match_in(o->defer, w->root, k->path, w->prelen + pl + nl, WALK_OPS)) >= 0) {
    int v = judge_entry(w, n, type, path); /* not opened, not entered: asked first */
    if (v <= 0) return v;
  }
  atomic_fetch_add(&w->st->entries, 1);
  bw_wentry e = {n->fd, name, path, type, k->id};
  int rc = o->visit(o->arg, &e);
  if (rc > 0 && type == 'd') {
    if (!(*kid = bww_node_new(n, name, path, pl + nl))) return -1;
    atomic_fetch_add(&n->fd_refs, 1);
  }
  return rc < 0 ? -1 : 0;
}

/* A share that will never be visited: give back what it holds. */
static void share_drop(share *s) {
  bww_fd_release(s->n);
  bww_node_release(s->n);
  free(s);
}

static void task_drop(task t) {
  if (t.s) share_drop(t.s);
  else bww_node_drop(t.n);
}

/* Offer the give entries at v (of n's directory) to a waiting worker: 1
 * if pushed as a share, 0 if no worker waits for more than the stack
 * holds (or no memory: this worker visits them). */
static int offer(walker *w, node *n, const dent *v, size_t give) {
  size_t bytes = 0;
  for (size_t i = 0; i < give; i++) bytes += strlen(v[i].name) + 1;
  share *s = malloc(sizeof *s + give * sizeof(dent) + bytes);
  if (!s) return 0;
  char *names = (char *)(s->v + give);
  for (size_t i = 0; i < give; i++) {
    const dent *d = &v[i];
    size_t l = strlen(d->name) + 1;
    memcpy(names, d->name, l);
    s->v[i] = (dent){names, d->type};
    names += l;
  }
  s->n = n;
  s->nv = give;
  pthread_mutex_lock(&w->mu);
  int taken = atomic_load(&w->idle) > (int)w->n && w->n < w->cap && !atomic_load(&w->stop);
  if (taken) {
    atomic_fetch_add(&n->refs, 1);
    atomic_fetch_add(&n->fd_refs, 1);
    w->stack[w->n++] = (task){NULL, s};
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  if (!taken) free(s);
  return taken;
}

/* Visit the nv entries at v of n's directory (read, or shared with this
 * worker), handing half of what is left to a worker that waits, then push
 * the directories to descend. */
static void visit_range(walker *w, worker *k, node *n, const dent *v, size_t nv) {
  node **kids = NULL;
  size_t nk = 0, kcap = 0;
  for (size_t i = 0; i < nv && !stopped(w); i++) {
    size_t give = (nv - i) / 2;
    if (nv - i >= SHARE_MIN && atomic_load_explicit(&w->idle, memory_order_relaxed) > 0 &&
        offer(w, n, v + nv - give, give))
      nv -= give;
    node *kid;
    if (visit_entry(w, k, n, &v[i], &kid) < 0) {
      atomic_store(&w->stop, 1);
      break;
    }
    if (!kid) continue;
    if (nk == kcap) {
      kcap = kcap ? kcap * 2 : 16;
      node **nkids = realloc(kids, kcap * sizeof *nkids);
      if (!nkids) {
        bww_node_drop(kid);
        atomic_store(&w->err, BW_ENOMEM);
        atomic_store(&w->stop, 1);
        break;
      }
      kids = nkids;
    }
    kids[nk++] = kid;
  }
  push_children(w, kids, nk);
  free(kids);
}

static void process(walker *w, worker *k, node *n) {
  int rc = open_node(w, n);
  if (rc) {
    if (rc != BW_OUTSIDE_ROOT) atomic_fetch_add(&w->st->unreadable, 1);
    bww_node_release(n);
    return;
  }
  atomic_fetch_add(&w->st->dirs, 1);
  if (read_dents(k, n->fd)) {
    atomic_fetch_add(&w->st->unreadable, 1);
    bww_fd_release(n);
    bww_node_release(n);
    return;
  }
  if (w->o->respect_ignore) {
    int has_git = 0, has_ign = 0, has_gi = 0;
    for (size_t i = 0; i < k->n; i++) {
      const char *s = k->v[i].name;
      if (s[0] != '.') continue;
      if (!strcmp(s, ".git")) has_git = 1;
      else if (!strcmp(s, ".ignore")) has_ign = 1;
      else if (!strcmp(s, ".gitignore")) has_gi = 1;
    }
    n->in_git |= has_git;
    if (has_git || has_ign || has_gi)
      n->ig = bww_dir_rules(n->fd, n->in_git, has_git, has_ign, has_gi);
  }
  visit_range(w, k, n, k->v, k->n);
  bww_fd_release(n);
  bww_node_release(n);
}

static void *work(void *arg) {
  worker *k = arg;
  walker *w = k->w;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    while (!w->n && w->active && !atomic_load(&w->stop)) {
      atomic_fetch_add(&w->idle, 1);
      pthread_cond_wait(&w->cv, &w->mu);
      atomic_fetch_sub(&w->idle, 1);
    }
    if (!w->n || atomic_load(&w->stop)) {
      pthread_cond_broadcast(&w->cv);
      pthread_mutex_unlock(&w->mu);
      break;
    }
    task t = w->stack[--w->n];
    w->active++;
    pthread_mutex_unlock(&w->mu);
    if (stopped(w)) task_drop(t);
    else if (t.s) {
      visit_range(w, k, t.s->n, t.s->v, t.s->nv);
      share_drop(t.s);
    } else process(w, k, t.n);
    pthread_mutex_lock(&w->mu);
    w->active--;
    if (!w->active && !w->n) pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
  }
  pthread_mutex_lock(&w->mu);
  w->finished++;
  pthread_cond_signal(&w->done_cv);
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* The held-back entries waiting, judged on this thread (called with mu
 * held; released around the judge), their workers woken with the
 * verdicts. Without a judge, or once the walk stops, each is refused. */
static void judge_pending(walker *w) {
  const bw_walk_opts *o = w->o;
  pend *list = w->pending;
  w->pending = NULL;
  size_t n = 0;
  for (pend *p = list; p; p = p->next) n++;
  pthread_mutex_unlock(&w->mu);
  bw_wjudge *items = calloc(n ? n : 1, sizeof *items);
  unsigned char *allow = calloc(n ? n : 1, 1);
  int rc = items && allow ? BW_OK : BW_ENOMEM;
  size_t i = n; /* the list is newest first: asked in the order met */
  for (pend *p = list; p && !rc; p = p->next) items[--i] = p->item;
  if (!rc && o->judge && !stopped(w)) rc = o->judge(o->judge_arg, items, n, allow);
  if (rc) {
    atomic_store(&w->err, rc);
    atomic_store(&w->stop, 1);
  }
  pthread_mutex_lock(&w->mu);
  i = n;
  for (pend *p = list; p; p = p->next) p->verdict = !rc && allow[--i] ? 1 : 0;
  pthread_cond_broadcast(&w->judged_cv);
  if (rc) pthread_cond_broadcast(&w->cv); /* idle workers: the walk stops */
  free(items);
  free(allow);
}

/* Wait for the workers, reporting progress and judging deferred entries
 * on this thread. */
static void supervise(walker *w) {
  const bw_walk_opts *o = w->o;
  pthread_mutex_lock(&w->mu);
  while (w->finished < w->nthreads) {
    if (w->pending) {
      judge_pending(w);
      continue;
    }
    if (!o->progress) {
      pthread_cond_wait(&w->done_cv, &w->mu);
      continue;
    }
    struct timespec ts; /* done_cv runs on the monotonic clock */
    long ms = o->interval_ms > 0 ? o->interval_ms : 100;
    bw_deadline_mono(&ts, (double)ms / 1000.0);
    if (pthread_cond_timedwait(&w->done_cv, &w->mu, &ts) != ETIMEDOUT) continue;
    pthread_mutex_unlock(&w->mu); /* the callback may take its time */
    if (o->progress(o->progress_arg, atomic_load(&w->st->dirs), atomic_load(&w->st->entries))) {
      atomic_store(&w->st->cancelled, 1);
      atomic_store(&w->stop, 1);
      pthread_mutex_lock(&w->mu);
      pthread_cond_broadcast(&w->cv);
      continue;
    }
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
}

/* A literal directory of o->below (its first len bytes) that o->defer
 * matches is judged here, on the calling thread, before anything below it
 * is opened, as a walk's entry would be: refused, it is as if pruned
 * (counted, nothing below: BW_ENOENT). skip, end: its in-root path in
 * w->pre, as descend_below matches rules. */
static int below_judged(walker *w, size_t len, size_t skip, size_t end) {
  const bw_walk_opts *o = w->o;
  if (!o->defer || bw_rules_match_in(o->defer, w->root, w->pre + skip, end - skip, WALK_OPS) < 0)
    return BW_OK;
  char *path = strndup(o->below, len);
  if (!path) return BW_ENOMEM;
  /* below a nested root met on the way: its in-root paths start after it */
  bw_wjudge it = {path, 'd', skip ? skip - w->boff : 0, skip ? w->root : 0};
  unsigned char allow = 0;
  int rc = o->judge ? o->judge(o->judge_arg, &it, 1, &allow) : BW_OK;
  free(path);
  if (rc) return rc;
  if (allow) return BW_OK;
  atomic_fetch_add(&w->st->skipped_policy, 1);
  return BW_ENOENT;
}

/* Descend the literal directories of o->below from fd with O_NOFOLLOW:
 * a link there is not followed, as the walk itself would not. A directory
 * the rules deny, or the judge refuses (o->defer), is as if pruned:
 * counted, nothing below. Past another
 * root's directory the rules see that root's paths: the prefix drops what
 * lies above it (skip). */
static int descend_below(walker *w, int *fd) {
  const char *p = w->o->below;
  size_t skip = 0;
  while (p && *p) {
    const char *e = strchr(p, '/');
    size_t l = e ? (size_t)(e - p) : strlen(p), end = w->boff + (size_t)(p - w->o->below) + l;
    char name[BW_NAME_MAX + 1];
    if (l > BW_NAME_MAX) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
    if (w->o->rules && bw_rules_match_in(w->o->rules, w->root, w->pre + skip, end - skip, WALK_OPS) >= 0) {
      atomic_fetch_add(&w->st->skipped_policy, 1);
      return BW_ENOENT;
    }
    memcpy(name, p, l);
    name[l] = '\0';
    int c = openat(*fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (c < 0) return BW_ENOENT; /* missing, a file or a link: nothing below */
    close(*fd);
    *fd = c;
    if (!same_mount(w->r, c)) return BW_ENOENT;
    int rc = below_judged(w, (size_t)(p - w->o->below) + l, skip, end);
    if (rc) return rc;
    struct stat st;
    int in = w->o->nest && w->o->nest->n && fstat(c, &st) == 0
                 ? bw_nest_enter(w->o->nest, st.st_dev, st.st_ino, w->o->below,
                                 (size_t)(p - w->o->below) + l)
                 : -1;
    if (in >= 0) {
      skip = end + 1;
      w->root = in;
    }
    p = e ? e + 1 : p + l;
  }
  if (skip && w->prelen) { /* the start's in-root path is the nested root's */
    size_t left = skip < w->prelen ? w->prelen - skip : 0;
    memmove(w->pre, w->pre + (skip < w->prelen ? skip : w->prelen), left + 1);
    w->prelen = left;
    w->boff = 0;
  }
  return BW_OK;
}

/* The start directory, opened for reading, under its ancestors' rules. */
static int start_node(walker *w, const char *rel, node **out) {
  struct stat st;
  int fd, rc = bw_resolve(w->r, rel, 0, &fd, &st);
  if (rc) return rc;
  if (!S_ISDIR(st.st_mode)) {
    close(fd);
    return bw_fail(S_ISREG(st.st_mode) ? BW_ENOTDIR : BW_NOT_REGULAR, NULL);
  }
  if ((rc = descend_below(w, &fd))) {
    close(fd);
    return rc;
  }
  int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int e = errno;
  close(fd);
  if (d < 0) return bw_code_from_errno(e);
  node *up = NULL;
  if (w->o->respect_ignore) {
    char full[BW_PATH_MAX + 1];
    int n = snprintf(full, sizeof full, "%s%s%s", rel, w->o->below ? "/" : "",
                     w->o->below ? w->o->below : "");
    if (n > 0 && (size_t)n < sizeof full) up = bww_ancestors(w->r, full);
  }
  node *n = bww_node_new(up, NULL, "", 0);
  if (up) bww_node_release(up);
  if (!n) {
    close(d);
    return BW_ENOMEM;
  }
  n->fd = d;
  *out = n;
  return BW_OK;
}

/* The in-root path of the start for the rules: base (or rel made
 * canonical), then below, "/"-terminated unless it is the root. */
static int rules_prefix(walker *w, const char *rel) {
  const bw_walk_opts *o = w->o;
  size_t bl;
  int rc = bw_rules_start(w->r, rel, o->base, w->pre, &bl);
  if (rc) return rc;
  const char *below = o->below ? o->below : "";
  size_t ul = strlen(below);
  if (bl + ul + 3 > sizeof w->pre) return bw_fail(BW_INVALID_ARGUMENT, "path too long");
  if (bl && ul) w->pre[bl++] = '/';
  w->boff = bl;
  memcpy(w->pre + bl, below, ul);
  w->prelen = bl + ul;
  if (w->prelen) w->pre[w->prelen++] = '/';
  w->pre[w->prelen] = '\0';
  return BW_OK;
}

int bw_walk_run(const bw_root *r, const char *rel, const bw_walk_opts *o) {
  walker w = {.r = r, .o = o, .root = o->nest ? o->nest->self : -1};
  w.st = o->stats ? o->stats : &w.local;
  node *start = NULL;
  int rc = o->rules || o->defer ? rules_prefix(&w, rel) : BW_OK;
  if (!rc) rc = start_node(&w, rel, &start);
  if (rc) return rc;
  w.nthreads = bw_walk_threads(o->threads);
  worker *ks = calloc((size_t)w.nthreads, sizeof *ks);
  pthread_t *ts = calloc((size_t)w.nthreads, sizeof *ts);
  w.stack = malloc(256 * sizeof *w.stack);
  if (!ks || !ts || !w.stack) {
    free(ks);
    free(ts);
    free(w.stack);
    bww_node_release(start);
    return BW_ENOMEM;
  }
  w.cap = 256;
  w.stack[w.n++] = (task){start, NULL};
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  pthread_cond_init(&w.judged_cv, NULL);
  bw_cond_init_mono(&w.done_cv);
  int started = 0;
  for (int i = 0; i < w.nthreads; i++) {
    ks[i].w = &w;
    ks[i].id = i;
    if (pthread_create(&ts[i], NULL, work, &ks[i]) != 0) break;
    started++;
  }
  if (!started) { /* no threads to be had: walk here (and judge: judge_entry) */
    w.inline_walk = 1;
    work(&ks[0]);
  }
  w.nthreads = started ? started : 1;
  supervise(&w);
  for (int i = 0; i < started; i++) pthread_join(ts[i], NULL);
  while (w.n) task_drop(w.stack[--w.n]); /* left by a stop */

  for (int i = 0; i < w.nthreads; i++) {
    free(ks[i].v);
    free(ks[i].names);
    free(ks[i].path);
  }
  free(ks);
  free(ts);
  free(w.stack);
  pthread_mutex_destroy(&w.mu);
  pthread_cond_destroy(&w.cv);
  pthread_cond_destroy(&w.judged_cv);
  pthread_cond_destroy(&w.done_cv);
  return atomic_load(&w.err);
}
