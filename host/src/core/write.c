/*
 * write.c - atomic, durable replacement of a file beneath a root.
 *
 * The parent directory is resolved to an fd and every step acts on it with
 * a validated final name: an unnamed O_TMPFILE (or, where the filesystem or
 * our privileges do not allow linking one, an exclusive 0600 temp name) in
 * the same directory, write, fchown/fchmod to the replaced file's owner and
 * mode, fsync, exchange with the target (rename when there is none), fsync
 * the directory, unlink the old file from the temp name. A kill at any
 * point leaves the old file or the new one, never a torn one; a failure at
 * any step, the directory fsync included, leaves the old one. Temp names
 * carry the writer's pid, so the leftovers of a killed writer are swept.
 * The compare with expected_hash and the replace run under the directory's
 * write lock, so two burrow processes never both win one compare-and-set,
 * and, written through a judged handle, with the directories above it held
 * (the tree lock), so nothing lands in a subtree while a move, copy or
 * remove judges it, nor anywhere the judged path no longer leads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "stage.h"

static _Atomic int tmpfile_linkable = 1; /* cleared once linkat(2) refuses */
static mode_t umask_bits;
static pthread_once_t umask_once = PTHREAD_ONCE_INIT;

/* The process umask, read without changing it (Linux >= 4.7 shows it in
 * /proc/self/status); else by setting and restoring it once. */
static void read_umask(void) {
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  unsigned mask;
  while (f && fgets(line, sizeof line, f)) {
    if (sscanf(line, "Umask: %o", &mask) == 1) {
      umask_bits = (mode_t)mask;
      fclose(f);
      return;
    }
  }
  if (f) fclose(f);
  umask_bits = umask(022);
  umask(umask_bits);
}

static const char TMP_PREFIX[] = ".burrow.";
static const char TMP_SUFFIX[] = ".tmp";

static void temp_name(char *buf, size_t size) {
  unsigned long long rnd = 0;
  if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd)
    rnd = (unsigned long long)(uintptr_t)buf ^ (unsigned long long)getpid();
  snprintf(buf, size, "%s%ld.%016llx%s", TMP_PREFIX, (long)getpid(), rnd,
           TMP_SUFFIX);
}

/* The pid in a temp name of ours, or 0 if the name is not one. */
static long temp_owner(const char *name) {
  size_t pl = sizeof TMP_PREFIX - 1, sl = sizeof TMP_SUFFIX - 1;
  size_t n = strlen(name);
  if (n <= pl + sl || strncmp(name, TMP_PREFIX, pl) != 0 ||
      strcmp(name + n - sl, TMP_SUFFIX) != 0)
    return 0;
  char *end;
  long pid = strtol(name + pl, &end, 10);
  return *end == '.' && pid > 0 ? pid : 0;
}

/* The crash-recovery sweep is recover.c's, above the stager, which
 * writes through this file: asked through this one hook, so the arrows
 * run one way. Set once as the library loads (recover.c), read after. */
static bw_settle_fn settler;

void bw_settle_hook(bw_settle_fn fn) { settler = fn; }

void bw_settle(int dirfd, const bw_root *journal) {
  if (settler) settler(dirfd, journal);
}

void bw_sweep_entry(int dirfd, const char *name) {
  bw_stage_sweep(dirfd, name);
  long pid = temp_owner(name);
  if (pid == 0 || pid == (long)getpid()) return;
  if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) return; /* alive */
  unlinkat(dirfd, name, 0);
}

void bw_sweep_temps(int dirfd) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  struct dirent *e;
  bw_settle(dirfd, NULL); /* first: a stage a record names is settled by it */
  while ((e = readdir(d))) bw_sweep_entry(dirfd, e->d_name);
  closedir(d);
}

/* The write path sweeps each directory once per process, not on every
 * write: a full readdir per write would cost more than the write. A
 * directory is known by device, inode and birth time (an inode number is
 * reused once a directory is gone); without a birth time, always sweep. */
enum { SWEPT_MAX = 256 };
typedef struct swept_dir {
  dev_t dev;
  ino_t ino;
  long long btime_sec;
  unsigned btime_nsec;
} swept_dir;
static swept_dir swept[SWEPT_MAX];
static unsigned swept_next;
static pthread_mutex_t swept_mu = PTHREAD_MUTEX_INITIALIZER;

static void sweep_once(int dirfd) {
  struct statx sx;
  if (statx(dirfd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) < 0 ||
      !(sx.stx_mask & STATX_BTIME)) {
    bw_sweep_temps(dirfd);
    return;
  }
  swept_dir me = {makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino,
                  sx.stx_btime.tv_sec, sx.stx_btime.tv_nsec};
  pthread_mutex_lock(&swept_mu);
  int seen = 0;
  for (unsigned i = 0; i < SWEPT_MAX && !seen; i++)
    seen = swept[i].ino == me.ino && swept[i].dev == me.dev &&
           swept[i].btime_sec == me.btime_sec &&
           swept[i].btime_nsec == me.btime_nsec;
  if (!seen) swept[swept_next++ % SWEPT_MAX] = me; /* the oldest goes first */
  pthread_mutex_unlock(&swept_mu);
  if (!seen) bw_sweep_temps(dirfd);
}

/* ---- the write lock ----
 *
 * Per directory, not per file: a replace gives the file a new inode, so a
 * lock on the old one would not exclude the next writer (it would have to
 * look again and retry); the name may not exist yet ("absent"); opening
 * the target to lock it could open a FIFO or a device; and a lock file
 * beside it would litter the user's tree. The directory is the one inode
 * every rename into it leaves in place. The price: writes to different
 * files of one directory take turns. flock(2), not an OFD lock: a write
 * lock needs an fd open for writing, which a directory cannot be. The
 * directory is opened as "." of the resolved parent's fd, so no link is
 * followed to reach it. Only burrow takes this lock (flock is advisory):
 * other programs' writes are caught by the hash compare alone. */
enum { LOCK_WAIT_MS = 5000, PAUSE_MAX_US = 5000 };

static long long deadline_of(unsigned wait_ms) {
  return bw_now_ms() + (wait_ms ? wait_ms : LOCK_WAIT_MS);
}

/* flock(fd, how) polled until the deadline: BW_OK (also where the
 * filesystem has no flock: NFS's ENOLCK, EBADF), or EAGAIN with why. */
static int flock_until(int fd, int how, long long deadline, const char *why) {
  /* poll, not a blocking flock: a stopped holder must not stop us */
  long pause_us = 50;
  while (flock(fd, how | LOCK_NB) < 0) {
    int e = errno;
    if (e == EINTR) continue;
    if (e != EWOULDBLOCK) break; /* no flock here: the hash compare alone */
    if (bw_now_ms() >= deadline) return bw_fail(BW_EAGAIN, why);
    struct timespec ts = {0, pause_us * 1000};
    nanosleep(&ts, NULL);
    pause_us = pause_us * 2 < PAUSE_MAX_US ? pause_us * 2 : PAUSE_MAX_US;
  }
  return BW_OK;
}

static const char LOCKED[] = "the file is locked by another writer; retry";
static const char MOVED[] = "a folder on its path was moved or replaced since it was judged; nothing was written; retry";
static const char BUSY[] = "a folder on its path is being moved, copied or removed; nothing was written; retry";

static int lock_ex(int dirfd, long long deadline, bw_dir_lock *l) {
  l->fd = -1;
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return bw_code_from_errno(errno);
  struct stat st;
  int rc = fstat(fd, &st) < 0 ? bw_code_from_errno(errno) : BW_OK;
  if (!rc) rc = flock_until(fd, LOCK_EX, deadline, LOCKED);
  if (rc) {
    close(fd);
    return rc;
  }
  l->fd = fd;
  l->dev = st.st_dev;
  l->ino = st.st_ino;
  return BW_OK;
}

int bw_lock_dir(int dirfd, unsigned wait_ms, bw_dir_lock *l) {
  memset(&l->chain, 0, sizeof l->chain);
  return lock_ex(dirfd, deadline_of(wait_ms), l);
}

/* ---- the tree lock ----
 *
 * A write judged as d/x links x into the directory fd it resolved d to,
 * wherever d is by then; a subtree move renames d aside, lists it, judges
 * the list and renames it on. Unordered, a write could link x after the
 * list was made, into a tree judged without it (d moved to .claude: a
 * .claude/settings.json the policies deny to a direct write). So a change
 * into a directory holds every directory between the root and it with a
 * shared flock, top down, each checked once held to be the entry its
 * (held) parent names, and the directory itself with the exclusive write
 * lock; a move or a remove of a subtree takes its top exclusively before
 * renaming it aside and keeps it until the commit. Either the change ends
 * before the subtree is listed (and is judged with it), or it starts after
 * the commit and finds that the judged path no longer reaches its
 * directory (EAGAIN, nothing written). flock is per open file description,
 * so threads of one process exclude each other as processes do. The root
 * itself is not held: it cannot be moved. Every wait polls, up to 5 s. */

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

void bw_chain_release(bw_chain *c) {
  for (int i = c->n - 1; i >= 0; i--) {
    if (i < c->locked) flock(c->fd[i], LOCK_UN); /* a forked child may share it */
    close(c->fd[i]);
  }
  free(c->fd);
  memset(c, 0, sizeof *c);
}

int bw_chain_check(const bw_chain *c, int want) {
  struct stat a, b;
  if (!c->last[0]) return BW_OK; /* the root itself, or nothing held */
  if (fstatat(c->parent, c->last, &a, AT_SYMLINK_NOFOLLOW) < 0 || fstat(want, &b) < 0 ||
      !same_file(&a, &b))
    return bw_fail(BW_EAGAIN, MOVED);
  return BW_OK;
}

/* Is there a component other than "." in p? */
static int more_names(const char *p) {
  for (;;) {
    while (*p == '/') p++;
    if (!*p) return 0;
    if (p[0] != '.' || (p[1] && p[1] != '/')) return 1;
    p++;
  }
}

int bw_chain_hold(const bw_root *top, const char *path, int hold_last,
                  int want, unsigned wait_ms, bw_chain *c) {
  memset(c, 0, sizeof *c);
  long long deadline = deadline_of(wait_ms);
  int cap = 1;
  for (const char *p = path; *p; p++) cap += *p == '/';
  if (!(c->fd = malloc((size_t)cap * sizeof *c->fd))) return BW_ENOMEM;
  c->parent = top->fd;
  int rc = BW_OK;
  for (const char *p = path; !rc && *p;) {
    while (*p == '/') p++;
    const char *e = p;
    while (*e && *e != '/') e++;
    size_t len = (size_t)(e - p);
    const char *next = e;
    while (*next == '/') next++;
    if (len == 0 || (len == 1 && p[0] == '.')) {
      p = next;
      continue;
    }
    if (len > BW_NAME_MAX || (len == 2 && p[0] == '.' && p[1] == '.')) {
      rc = bw_fail(BW_INVALID_ARGUMENT, "not a plain path");
      break;
    }
    int cur = c->n ? c->fd[c->n - 1] : top->fd;
    memcpy(c->last, p, len);
    c->last[len] = '\0';
    c->parent = cur;
    int fd = openat(cur, c->last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int e2 = errno;
      rc = e2 == ENOENT || e2 == ENOTDIR || e2 == ELOOP ? bw_fail(BW_EAGAIN, MOVED)
                                                         : bw_code_from_errno(e2);
      break;
    }
    c->fd[c->n++] = fd;
    struct stat st, now;
    if (fstat(fd, &st) < 0) rc = bw_code_from_errno(errno);
    else if (!bw_same_mount(top, fd, "", &st)) rc = bw_fail(BW_EAGAIN, MOVED);
    if (!rc && (more_names(next) || hold_last)) {
      rc = flock_until(fd, LOCK_SH, deadline, BUSY);
      if (!rc) c->locked = c->n;
    }
    /* held (or, the last, about to be): is it still the entry it was opened as? */
    if (!rc && (fstatat(cur, c->last, &now, AT_SYMLINK_NOFOLLOW) < 0 || !same_file(&st, &now)))
      rc = bw_fail(BW_EAGAIN, MOVED);
    p = next;
  }
  if (!rc) {
    struct stat a, b;
    int last = c->n ? c->fd[c->n - 1] : top->fd;
    if (fstat(last, &a) < 0 || fstat(want, &b) < 0) rc = bw_code_from_errno(errno);
    else if (!same_file(&a, &b)) rc = bw_fail(BW_EAGAIN, MOVED);
  }
  if (rc) bw_chain_release(c);
  return rc;
}

/* The root a write view's chain starts from: its innermost root. */
static bw_root top_of(const bw_root *r) {
  return (bw_root){.fd = r->top_fd, .dev = r->dev, .mnt_id = r->mnt_id};
}

int bw_chain_path(const bw_root *r, const char *sub, char out[BW_PATH_MAX + 1]) {
  const char *at = r->at && strcmp(r->at, ".") ? r->at : "";
  int n = snprintf(out, BW_PATH_MAX + 1, "%s%s%s", at, *at && *sub ? "/" : "", sub);
  return n < 0 || n > BW_PATH_MAX ? bw_fail(BW_INVALID_ARGUMENT, "name too long") : BW_OK;
}

int bw_lock_write(const bw_root *r, const char *sub, int dirfd,
                  unsigned wait_ms, bw_dir_lock *l) {
  memset(&l->chain, 0, sizeof l->chain);
  l->fd = -1;
  if (!r->at) return bw_lock_dir(dirfd, wait_ms, l); /* not a judged view */
  long long deadline = deadline_of(wait_ms);
  char path[BW_PATH_MAX + 1];
  int rc = bw_chain_path(r, sub, path);
  bw_root top = top_of(r);
  if (!rc) rc = bw_chain_hold(&top, path, 0, dirfd, wait_ms, &l->chain);
  if (!rc) rc = lock_ex(dirfd, deadline, l);
  if (!rc) rc = bw_chain_check(&l->chain, dirfd); /* both held: it stays so */
  if (rc) bw_unlock_dir(l);
  return rc;
}

int bw_lock_tree(int dirfd, const char *name, unsigned wait_ms, int *out) {
  *out = -1;
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return bw_code_from_errno(errno);
  struct stat st, now;
  int rc = fstat(fd, &st) < 0 ? bw_code_from_errno(errno) : BW_OK;
  if (!rc) rc = flock_until(fd, LOCK_EX, deadline_of(wait_ms),
                            "a change inside it is in progress; retry");
  if (!rc && (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || !same_file(&st, &now)))
    rc = bw_fail(BW_EAGAIN, "it changed meanwhile; retry");
  if (rc) close(fd);
  else *out = fd;
  return rc;
}

int bw_parent_path(const char *rel, char out[BW_PATH_MAX + 1]) {
  size_t n = strlen(rel);
  while (n > 0 && rel[n - 1] == '/') n--;
  while (n > 0 && rel[n - 1] != '/') n--;
  out[0] = '\0';
  if (n > BW_PATH_MAX) return -1;
  memcpy(out, rel, n);
  out[n] = '\0';
  return 0;
}

int bw_lock_parent(const bw_root *r, const char *rel, unsigned wait_ms,
                   bw_dir_lock *l) {
  *l = BW_DIR_UNLOCKED;
  int dirfd, trailing;
  char name[BW_NAME_MAX + 1], sub[BW_PATH_MAX + 1];
  int rc = bw_resolve_parent(r, rel, &dirfd, name, &trailing);
  if (rc) return rc;
  if (bw_parent_path(rel, sub)) rc = bw_fail(BW_INVALID_ARGUMENT, "name too long");
  else rc = trailing ? bw_fail(BW_EISDIR, NULL) : bw_lock_write(r, sub, dirfd, wait_ms, l);
  close(dirfd);
  return rc;
}

void bw_unlock_dir(bw_dir_lock *l) {
  if (l->fd >= 0) {
    flock(l->fd, LOCK_UN); /* a forked child may share the description */
    close(l->fd);
  }
  l->fd = -1;
  bw_chain_release(&l->chain);
}

int bw_mkdirs_held(const bw_root *r, const char *rel) {
  if (!r->at) return bw_mkdirs(r, rel);
  bw_chain c;
  char path[BW_PATH_MAX + 1];
  bw_root top = top_of(r);
  int rc = bw_chain_path(r, "", path);
  if (!rc) rc = bw_chain_hold(&top, path, 1, r->fd, 0, &c);
  if (rc) return rc;
  rc = bw_mkdirs(r, rel);
  bw_chain_release(&c);
  return rc;
}

/* ---- the lock set: several writes held at once (txn.c) ----
 *
 * A change of many files holds, for every directory it writes into, the
 * write lock and the chain above it, all at once and each directory once:
 * two flocks of one process on one directory through two descriptions
 * conflict, so a chain through a directory the set already holds (a
 * target's parent that is another target, two files of one folder) uses
 * the lock it has. A directory some target writes into is locked
 * exclusively the first time it is met, even as another's chain member.
 * The targets are taken in path order, parents first, as single writes
 * take their chains, so two sets wait for each other rather than deadlock
 * (and a wait past the deadline is EAGAIN, nothing done). */

struct bw_held {
  dev_t dev;
  ino_t ino;
  int fd;
};

static int held_find(const bw_lock_set *s, const struct stat *st) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].dev == st->st_dev && s->v[i].ino == st->st_ino) return (int)i;
  return -1;
}

/* Lock fd (ours to keep or close) as a directory of the set: exclusive
 * if it is one of the targets' own. *idx: its place in the set. */
static int held_add(bw_lock_set *s, int fd, const struct stat *st,
                    const struct stat *targets, size_t nt, long long deadline,
                    int *idx) {
  int ex = 0;
  for (size_t i = 0; i < nt && !ex; i++) ex = same_file(st, &targets[i]);
  int rc = flock_until(fd, ex ? LOCK_EX : LOCK_SH, deadline, ex ? LOCKED : BUSY);
  if (rc) {
    close(fd);
    return rc;
  }
  s->v[s->n] = (struct bw_held){st->st_dev, st->st_ino, fd};
  *idx = (int)s->n++;
  return BW_OK;
}

/* Hold target t's chain (its write view's path from its innermost root)
 * and its directory. */
static int hold_one(bw_lock_set *s, const bw_root *r, const char *path, int dirfd,
                    const struct stat *targets, size_t nt, long long deadline) {
  int rc = BW_OK;
  bw_root top = r->at ? top_of(r) : *r;
  int cur = r->at ? top.fd : dirfd;
  for (const char *p = r->at ? path : ""; *p;) {
    while (*p == '/') p++;
    const char *e = p;
    while (*e && *e != '/') e++;
    size_t len = (size_t)(e - p);
    char name[BW_NAME_MAX + 1];
    if (len == 0 || (len == 1 && p[0] == '.')) {
      p = e;
      continue;
    }
    if (len > BW_NAME_MAX || (len == 2 && p[0] == '.' && p[1] == '.'))
      return bw_fail(BW_INVALID_ARGUMENT, "not a plain path");
    memcpy(name, p, len);
    name[len] = '\0';
    p = e;
    int fd = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int e2 = errno;
      return e2 == ENOENT || e2 == ENOTDIR || e2 == ELOOP ? bw_fail(BW_EAGAIN, MOVED)
                                                           : bw_code_from_errno(e2);
    }
    struct stat st, now;
    if (fstat(fd, &st) < 0 || !bw_same_mount(&top, fd, "", &st)) {
      close(fd);
      return bw_fail(BW_EAGAIN, MOVED);
    }
    int at = held_find(s, &st);
    if (at >= 0) close(fd); /* held already: its lock serves */
    else if ((rc = held_add(s, fd, &st, targets, nt, deadline, &at))) return rc;
    if (fstatat(cur, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || !same_file(&st, &now))
      return bw_fail(BW_EAGAIN, MOVED);
    cur = s->v[at].fd;
  }
  struct stat a, b;
  if (fstat(cur, &a) < 0 || fstat(dirfd, &b) < 0) return bw_code_from_errno(errno);
  if (!same_file(&a, &b)) return bw_fail(BW_EAGAIN, MOVED);
  if (held_find(s, &b) >= 0) return BW_OK; /* its chain's last: held exclusively */
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), at;
  if (fd < 0) return bw_code_from_errno(errno);
  return held_add(s, fd, &b, targets, nt, deadline, &at); /* a root: no chain */
}

typedef struct lock_order {
  const bw_root *r;
  int dirfd;
  char path[BW_PATH_MAX + 1]; /* the directory's chain path (r->at, then rel's parent) */
} lock_order;

static int by_path(const void *a, const void *b) {
  return strcmp(((const lock_order *)a)->path, ((const lock_order *)b)->path);
}

int bw_lock_many(const bw_root *const *r, const char *const *rel,
                 const int *dirfd, size_t n, unsigned wait_ms, bw_lock_set *s) {
  memset(s, 0, sizeof *s);
  long long deadline = deadline_of(wait_ms);
  struct stat *targets = calloc(n ? n : 1, sizeof *targets);
  lock_order *o = calloc(n ? n : 1, sizeof *o);
  /* at most one chain member per path component, and the targets */
  size_t most = n;
  int rc = targets && o ? BW_OK : BW_ENOMEM;
  for (size_t i = 0; !rc && i < n; i++) {
    char sub[BW_PATH_MAX + 1];
    o[i] = (lock_order){r[i], dirfd[i], ""};
    if (bw_parent_path(rel[i], sub) || bw_chain_path(r[i], sub, o[i].path))
      rc = bw_fail(BW_INVALID_ARGUMENT, "name too long");
    for (const char *p = o[i].path; *p; p++) most += *p == '/';
    most += o[i].path[0] != '\0';
  }
  s->v = rc ? NULL : calloc(most ? most : 1, sizeof *s->v);
  if (!rc && !s->v) rc = BW_ENOMEM;
  for (size_t i = 0; !rc && i < n; i++)
    if (fstat(dirfd[i], &targets[i]) < 0) rc = bw_code_from_errno(errno);
  if (!rc) qsort(o, n, sizeof *o, by_path);
  for (size_t i = 0; !rc && i < n; i++) rc = hold_one(s, o[i].r, o[i].path, o[i].dirfd, targets, n, deadline);
  free(targets);
  free(o);
  if (rc) bw_unlock_many(s);
  return rc;
}

int bw_lock_many_fd(const bw_lock_set *s, int dirfd) {
  struct stat st;
  if (fstat(dirfd, &st) < 0) return -1;
  int at = held_find(s, &st);
  return at < 0 ? -1 : s->v[at].fd;
}

void bw_unlock_many(bw_lock_set *s) {
  for (size_t i = s->n; i-- > 0;) {
    flock(s->v[i].fd, LOCK_UN); /* a forked child may share it */
    close(s->v[i].fd);
  }
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* The lock for a write into dirfd: the caller's, if it is this directory's
 * (the path may have moved since it was taken), else our own. */
static int lock_for(const bw_root *r, const char *rel, int dirfd,
                    const bw_write_opts *o, bw_dir_lock *own,
                    const bw_dir_lock **lk) {
  *lk = own;
  if (!o->held) {
    char sub[BW_PATH_MAX + 1];
    if (bw_parent_path(rel, sub)) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
    return bw_lock_write(r, sub, dirfd, o->lock_wait_ms, own);
  }
  struct stat st;
  if (fstat(dirfd, &st) < 0) return bw_code_from_errno(errno);
  if (st.st_dev != o->held->dev || st.st_ino != o->held->ino)
    return bw_fail(BW_EAGAIN, "the directory changed during the edit; retry");
  *lk = o->held;
  return BW_OK;
}

/* All n bytes of p to fd (EINTR retried): BW_OK or the error's code. */
int bw_write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return bw_code_from_errno(errno);
    p += w;
    n -= (size_t)w;
  }
  return BW_OK;
}

/* Hash of the current file (dirfd, name), already lstat'ed as regular:
 * read in pieces, not mapped (the pages of a mapping count in RSS). */
static int current_hash(int dirfd, const char *name, const struct stat *st,
                        size_t max, char out[BW_HASH_STR]) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return bw_code_from_errno(errno);
  struct stat now;
  int rc = fstat(fd, &now) < 0 ? bw_code_from_errno(errno) : BW_OK;
  if (rc == BW_OK && (now.st_ino != st->st_ino || !S_ISREG(now.st_mode)))
    rc = bw_fail(BW_EAGAIN, "the file changed during the write, retry");
  if (rc == BW_OK && (size_t)now.st_size > max) rc = bw_fail(BW_TOO_LARGE, NULL);
  if (rc == BW_OK) rc = bw_sha256_fd(fd, max, out);
  close(fd);
  return rc;
}

/* What is at (dirfd, name) now, and may we replace it? */
static int check_target(int dirfd, const char *name, const bw_write_opts *o,
                        struct stat *st, int *exists) {
  *exists = 0;
  if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0) {
    if (errno == ENOENT) return BW_OK;
    return bw_code_from_errno(errno);
  }
  *exists = 1;
  if (S_ISLNK(st->st_mode) && !o->allow_symlink)
    return bw_fail(BW_POLICY_DENIED,
                   "the path is a symlink; writing through links is refused");
  if (S_ISDIR(st->st_mode)) return bw_fail(BW_EISDIR, NULL);
  if (!S_ISREG(st->st_mode)) return bw_fail(BW_NOT_REGULAR, NULL);
  if (st->st_nlink > 1 && !o->allow_hardlink)
    return bw_fail(BW_POLICY_DENIED,
                   "the file has other hard links; writing is refused");
  return BW_OK;
}

static int compare_hash(int dirfd, const char *name, const struct stat *st,
                        int exists, const bw_write_opts *o, bw_write_res *res) {
  const char *expected = o->expected_hash;
  size_t max = o->max_compare ? o->max_compare : (size_t)1 << 40;
  if (!expected) return BW_OK;
  if (!strcmp(expected, "absent")) {
    if (!exists) return BW_OK;
    if (current_hash(dirfd, name, st, max, res->current_hash))
      strcpy(res->current_hash, "unknown");
    return bw_fail(BW_HASH_MISMATCH, NULL);
  }
  if (!exists) {
    strcpy(res->current_hash, "absent");
    return bw_fail(BW_HASH_MISMATCH, NULL);
  }
  int rc = current_hash(dirfd, name, st, max, res->current_hash);
  if (rc) return rc;
  if (strcmp(res->current_hash, expected) != 0)
    return bw_fail(BW_HASH_MISMATCH, NULL);
  return BW_OK;
}

/* Give the new file the old one's owner and mode (set-id bits dropped),
 * or the default mode of a new file. fchown first: it clears set-id bits. */
static int set_meta(int fd, const struct stat *old, int exists) {
  if (!exists) return fchmod(fd, 0666 & ~umask_bits) < 0 ? bw_code_from_errno(errno) : BW_OK;
  if (fchown(fd, old->st_uid, old->st_gid) < 0 && errno != EPERM)
    return bw_code_from_errno(errno);
  if (fchmod(fd, old->st_mode & 01777) < 0) return bw_code_from_errno(errno);
  return BW_OK;
}

/* Create the temp file: *tmpname is "" for an unnamed O_TMPFILE. */
static int make_temp(int dirfd, char *tmpname, size_t size, int *fd) {
  tmpname[0] = '\0';
  if (atomic_load(&tmpfile_linkable)) {
    *fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (*fd >= 0) return BW_OK;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
      return bw_code_from_errno(errno);
  }
  for (int i = 0; i < 8; i++) {
    temp_name(tmpname, size);
    *fd = openat(dirfd, tmpname,
                 O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (*fd >= 0) return BW_OK;
    if (errno != EEXIST) return bw_code_from_errno(errno);
  }
  return bw_fail(BW_EIO, "could not create a temp file");
}

enum { NEED_NAMED = -1 };

/* Put the written temp file in place of name. With exists, the two are
 * exchanged where the filesystem can (*swapped): the old file then waits
 * under tmpname until the directory is synced, so a failed sync can put
 * it back. */
static int install(int dirfd, int fd, char *tmpname, size_t size,
                   const char *name, int create_only, int exists, int *swapped) {
  *swapped = 0;
  if (!tmpname[0]) { /* unnamed: give it a name first */
    const char *dest = name;
    if (!create_only) {
      temp_name(tmpname, size);
      dest = tmpname;
    }
    if (linkat(fd, "", dirfd, dest, AT_EMPTY_PATH) < 0) {
      int e = errno;
      tmpname[0] = '\0';
      if (e == EEXIST && create_only) return bw_fail(BW_HASH_MISMATCH, NULL);
      if (e != ENOENT && e != EPERM) return bw_code_from_errno(e);
      /* linking an O_TMPFILE needs CAP_DAC_READ_SEARCH: use names instead */
      atomic_store(&tmpfile_linkable, 0);
      return NEED_NAMED;
    }
    if (create_only) return BW_OK; /* linked straight to its name */
  }
  if (exists && !create_only) {
    struct stat old;
    if (renameat2(dirfd, tmpname, dirfd, name, RENAME_EXCHANGE) == 0) {
      if (fstatat(dirfd, tmpname, &old, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(old.st_mode)) {
        *swapped = 1;
        return BW_OK;
      } /* a directory took the file's place meanwhile: rename refuses that */
      renameat2(dirfd, tmpname, dirfd, name, RENAME_EXCHANGE);
      unlinkat(dirfd, tmpname, 0);
      return bw_fail(BW_EAGAIN, "the file changed during the write; retry");
    }
    int e = errno;
    if (e != EINVAL && e != ENOENT) { /* else: no exchange here, or gone: rename */
      unlinkat(dirfd, tmpname, 0);
      return bw_code_from_errno(e);
    }
  }
  unsigned flags = create_only ? RENAME_NOREPLACE : 0;
  if (renameat2(dirfd, tmpname, dirfd, name, flags) == 0) return BW_OK;
  int e = errno;
  unlinkat(dirfd, tmpname, 0);
  if (e == EEXIST && create_only) return bw_fail(BW_HASH_MISMATCH, NULL);
  return bw_code_from_errno(e);
}

/* The directory fsync after the install failed: put the old file back (or
 * take the new one away), so the failed write changes nothing. mine: the
 * new file's identity, NULL if unknown. */
static int put_back(int dirfd, const char *name, const char *tmpname,
                    int swapped, int exists, const struct stat *mine) {
  struct stat now;
  int back = 0;
  if (swapped)
    back = renameat2(dirfd, tmpname, dirfd, name, RENAME_EXCHANGE) == 0;
  else if (!exists && mine && fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
           now.st_dev == mine->st_dev && now.st_ino == mine->st_ino)
    back = unlinkat(dirfd, name, 0) == 0;
  if (swapped) unlinkat(dirfd, tmpname, 0); /* the new file, or if it stuck the old */
  return bw_fail(BW_EIO, back ? "the directory fsync failed; the target is unchanged"
                              : "the new content is in place but the directory "
                                "fsync failed");
}

/* fsync of the temp file failed: nothing is installed yet. A full disk or
 * quota (delayed allocation) is said as such. */
static int fsync_failed(int e) {
  if (e == ENOSPC || e == EDQUOT) return bw_code_from_errno(e);
  return bw_fail(BW_EIO, "fsync failed; the target is unchanged");
}

int bw_write_check(int dirfd, const char *name, const char *expected,
                   size_t max, struct stat *st, int *exists,
                   char current[BW_HASH_STR]) {
  bw_write_opts o = {.expected_hash = expected, .max_compare = max};
  bw_write_res res;
  memset(&res, 0, sizeof res);
  int rc = check_target(dirfd, name, &o, st, exists);
  if (!rc) rc = compare_hash(dirfd, name, st, *exists, &o, &res);
  if (rc == BW_HASH_MISMATCH) memcpy(current, res.current_hash, BW_HASH_STR);
  return rc;
}

int bw_write_meta(int fd, const struct stat *old, int exists) {
  pthread_once(&umask_once, read_umask);
  return set_meta(fd, old, exists);
}

/* Compare and replace, under the directory's lock (lk). */
static int replace(int dirfd, const bw_dir_lock *lk, const char *name,
                   const void *data, size_t len, const bw_write_opts *o,
                   bw_write_res *res) {
  struct stat st;
  int exists;
  int rc = check_target(dirfd, name, o, &st, &exists);
  if (rc) return rc;
  if ((rc = compare_hash(dirfd, name, &st, exists, o, res)))
    return rc;
  int create_only = o->expected_hash && !strcmp(o->expected_hash, "absent");
  for (int attempt = 0; attempt < 2; attempt++) {
    char tmpname[64];
    int fd, swapped = 0;
    if ((rc = make_temp(dirfd, tmpname, sizeof tmpname, &fd))) return rc;
    rc = bw_write_all(fd, data, len);
    if (!rc) rc = set_meta(fd, &st, exists);
    if (!rc && fsync(fd) < 0) rc = fsync_failed(errno);
    if (!rc)
      rc = install(dirfd, fd, tmpname, sizeof tmpname, name, create_only, exists, &swapped);
    else if (tmpname[0]) unlinkat(dirfd, tmpname, 0);
    struct stat mine;
    int known = !rc && fstat(fd, &mine) == 0;
    close(fd);
    if (rc == NEED_NAMED) continue; /* retry with a named temp file */
    if (rc) return rc;
    if (fsync(lk->fd) < 0) /* lk->fd: the directory, open for reading */
      return put_back(dirfd, name, tmpname, swapped, exists, known ? &mine : NULL);
    if (swapped) unlinkat(dirfd, tmpname, 0); /* the old file */
    res->created = !exists;
    return BW_OK;
  }
  return bw_fail(BW_EIO, "could not install the temp file");
}

/* "name/" names a directory: what is there decides the answer, asked of
 * the resolver so a link is never followed out of the root. */
static int trailing_slash(const bw_root *r, const char *rel) {
  int fd;
  struct stat st;
  int rc = bw_resolve(r, rel, 0, &fd, &st);
  if (rc == BW_OK) close(fd);
  return rc == BW_OK || rc == BW_ENOENT ? bw_fail(BW_EISDIR, NULL) : rc;
}

int bw_write_file(const bw_root *r, const char *rel, const void *data,
                  size_t len, const bw_write_opts *o, bw_write_res *res) {
  pthread_once(&umask_once, read_umask);
  memset(res, 0, sizeof *res);
  if (r->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  int dirfd, trailing;
  char name[BW_NAME_MAX + 1];
  size_t n = strlen(rel);
  if (n > 0 && rel[n - 1] == '/') return trailing_slash(r, rel); /* makes nothing */
  int rc = bw_resolve_parent(r, rel, &dirfd, name, &trailing);
  if (rc == BW_INVALID_ARGUMENT && bw_dot_final(rel)) {
    /* ".", "dir/..": a directory, or what resolving it says ("file/." is
       ENOTDIR) */
    int fd;
    struct stat st;
    if ((rc = bw_resolve(r, rel, 0, &fd, &st))) return rc;
    close(fd);
    return bw_fail(BW_EISDIR, NULL);
  }
  int must_exist = o->expected_hash && strcmp(o->expected_hash, "absent") != 0;
  if (rc == BW_ENOENT && must_exist) { /* nothing to compare with: create nothing */
    strcpy(res->current_hash, "absent");
    return bw_fail(BW_HASH_MISMATCH, NULL);
  }
  if (rc == BW_ENOENT && o->create_dirs) {
    char parent[BW_PATH_MAX + 1];
    size_t n = strlen(rel);
    while (n > 0 && rel[n - 1] == '/') n--;
    while (n > 0 && rel[n - 1] != '/') n--;
    memcpy(parent, rel, n);
    parent[n] = '\0';
    if (n > 0 && (rc = bw_mkdirs_held(r, parent))) return rc;
    rc = bw_resolve_parent(r, rel, &dirfd, name, &trailing);
  }
  if (rc) return rc;
  if (trailing) {
    close(dirfd);
    return trailing_slash(r, rel);
  }
  sweep_once(dirfd);
  struct stat lst;
  if (!r->anchored && fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISLNK(lst.st_mode)) {
    /* say so when the link leads out of the root (or loops) */
    int fd;
    struct stat st;
    int lrc = bw_resolve(r, rel, 0, &fd, &st);
    if (lrc == BW_OK) close(fd);
    if (lrc == BW_OUTSIDE_ROOT || lrc == BW_ELOOP) {
      close(dirfd);
      return lrc;
    }
  }
  bw_dir_lock own = BW_DIR_UNLOCKED;
  const bw_dir_lock *lk;
  rc = lock_for(r, rel, dirfd, o, &own, &lk);
  if (!rc) rc = replace(dirfd, lk, name, data, len, o, res);
  bw_unlock_dir(&own);
  close(dirfd);
  if (rc) return rc;
  return bw_sha256(data, len, res->hash);
}
