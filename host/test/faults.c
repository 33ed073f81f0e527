/*
 * faults.c - an LD_PRELOAD shim that makes system calls fail on demand,
 * for spec/security/faults_spec.lua: what a write leaves when the disk is
 * full, over quota, failing, or when a call is interrupted or short.
 *
 *   BURROW_FAULT=CALL:WHAT[:after=N][:times=M][,...]
 *     CALL  write pwrite fsync fdatasync renameat renameat2 linkat read
 *           mkdirat unlinkat copy_file_range symlinkat syncfs, and
 *           (whatever the fd) pthread_create bind: a listener's start that
 *           fails part way (spec/http_lifecycle_spec.lua); any: each of the
 *           calls that change the filesystem (all of the above but read,
 *           pthread_create and bind), counted as one sequence of steps
 *     WHAT  ENOSPC EDQUOT EIO EINTR EPERM EAGAIN EADDRINUSE (fail with that errno, doing
 *           nothing; linkat:EPERM is a kernel that will not link an
 *           O_TMPFILE without CAP_DAC_READ_SEARCH, so named temps are used)
 *           short (write/pwrite/read: do half the bytes, at least one)
 *           KILL (the process kills itself with SIGKILL before the call:
 *           a crash at that step, spec/security/crash_spec.lua)
 *           WAIT (the call waits while the file BURROW_FAULT_GATE exists,
 *           then goes on unharmed; only calls made while it exists are
 *           counted for after=: a test makes the file, starts a long
 *           operation, which is held at its Nth step, does what must
 *           happen meanwhile and lets it go by removing the file;
 *           test/e2e/tasks_instances.test.mjs, tree_tasks.test.mjs,
 *           grep_task.test.mjs, where a grep is held at a read)
 *     after the first N matching calls pass (default 0); then M calls
 *     are hit (default: once for EINTR and short, which a caller must
 *     retry, every call after for the errors, as a full disk stays full)
 *   BURROW_FAULT_DIR  only calls on fds (for the *at calls: directory
 *     fds) whose path is under this directory count; default: any fd
 *     above 2 that is a regular file or a directory
 *   BURROW_FAULT_LOG  a file that gets one line per fault injected
 *     ("write:ENOSPC"), and at exit one per rule with how many matching
 *     calls it saw ("seen write 3"): a rule with a huge after= counts the
 *     calls a tool makes, so a spec can then fail each one in turn
 *   BURROW_FAULT_DLOPEN  a library name (as passed to dlopen, e.g.
 *     "libuchardet.so.0") that dlopen does not find: a machine where a
 *     library burrow opens on demand (dynlib.c) is not installed
 *   BURROW_FAULT_CLOCK  a file holding the epoch seconds time() answers,
 *     read at each call (Lua's os.time: the minute a quota counts in),
 *     so a test sets the clock instead of waiting for it
 *     (test/e2e/quota_store.test.mjs); the real time when it cannot be read
 *
 * Built by the Makefile as build/faults.so; the spec compiles it itself
 * when that is missing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { C_WRITE, C_PWRITE, C_FSYNC, C_FDATASYNC, C_RENAMEAT, C_RENAMEAT2, C_LINKAT, C_READ,
       C_MKDIRAT, C_UNLINKAT, C_PTHREAD_CREATE, C_BIND, C_COPY_FILE_RANGE, C_SYMLINKAT,
       C_SYNCFS, C_ANY, NCALLS };
static const char *const call_names[NCALLS] = {"write", "pwrite", "fsync", "fdatasync",
                                               "renameat", "renameat2", "linkat", "read",
                                               "mkdirat", "unlinkat", "pthread_create", "bind",
                                               "copy_file_range", "symlinkat", "syncfs", "any"};

/* the calls "any" counts: those that change the filesystem */
static int a_step(int call) {
  return call != C_READ && call != C_PTHREAD_CREATE && call != C_BIND;
}

/* the fd of a call that has none to filter on (pthread_create, bind) */
enum { ANY_FD = -1000 };

enum { MAX_RULES = 16, SHORT = -1, KILL = -2, WAIT = -3 };

typedef struct rule {
  int call;
  int err; /* an errno, or SHORT */
  long after, times;
  _Atomic long seen; /* matching calls so far */
} rule;

static rule rules[MAX_RULES];
static int nrules;
static const char *only_dir;
static size_t only_len;
static const char *log_path;
static int ready;

static int parse_err(const char *s) {
  if (!strcmp(s, "ENOSPC")) return ENOSPC;
  if (!strcmp(s, "EDQUOT")) return EDQUOT;
  if (!strcmp(s, "EIO")) return EIO;
  if (!strcmp(s, "EINTR")) return EINTR;
  if (!strcmp(s, "EPERM")) return EPERM;
  if (!strcmp(s, "EAGAIN")) return EAGAIN;
  if (!strcmp(s, "EADDRINUSE")) return EADDRINUSE;
  if (!strcmp(s, "short")) return SHORT;
  if (!strcmp(s, "KILL")) return KILL;
  if (!strcmp(s, "WAIT")) return WAIT;
  return 0;
}

/* "write:ENOSPC:after=2" into r; 0 if it is not a rule */
static int parse_rule(char *spec, rule *r) {
  char *save, *call = strtok_r(spec, ":", &save), *what = strtok_r(NULL, ":", &save);
  if (!call || !what) return 0;
  r->call = -1;
  for (int i = 0; i < NCALLS; i++)
    if (!strcmp(call, call_names[i])) r->call = i;
  r->err = parse_err(what);
  if (r->call < 0 || !r->err) return 0;
  r->after = 0;
  r->times = (r->err == EINTR || r->err == SHORT) ? 1 : -1;
  for (char *o; (o = strtok_r(NULL, ":", &save));) {
    if (!strncmp(o, "after=", 6)) r->after = atol(o + 6);
    else if (!strncmp(o, "times=", 6)) r->times = atol(o + 6);
    else return 0;
  }
  return 1;
}

static void setup(void) {
  if (ready) return;
  ready = 1;
  const char *env = getenv("BURROW_FAULT");
  only_dir = getenv("BURROW_FAULT_DIR");
  only_len = only_dir ? strlen(only_dir) : 0;
  log_path = getenv("BURROW_FAULT_LOG");
  if (!env) return;
  char buf[1024], *save;
  snprintf(buf, sizeof buf, "%s", env);
  for (char *s = strtok_r(buf, ",", &save); s && nrules < MAX_RULES; s = strtok_r(NULL, ",", &save)) {
    char one[256];
    snprintf(one, sizeof one, "%s", s);
    if (parse_rule(one, &rules[nrules])) nrules++;
    else {
      static const char msg[] = "faults.so: bad BURROW_FAULT rule\n";
      syscall(SYS_write, 2, msg, sizeof msg - 1);
      _exit(99);
    }
  }
}

__attribute__((constructor)) static void init(void) { setup(); }

/* Is fd (AT_FDCWD: the working directory) one the faults are for? */
static int watched(int fd) {
  struct stat st;
  if (fd == ANY_FD) return 1;
  if (fd == AT_FDCWD) {
    if (!only_dir) return 1;
  } else {
    if (fd <= 2 || fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) return 0;
    if (!only_dir) return 1;
  }
  char link[64], path[4096];
  ssize_t n;
  if (fd == AT_FDCWD) {
    if (!getcwd(path, sizeof path)) return 0;
    n = (ssize_t)strlen(path);
  } else {
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
  }
  path[n] = '\0';
  return (size_t)n >= only_len && !strncmp(path, only_dir, only_len) &&
         (path[only_len] == '\0' || path[only_len] == '/');
}

static void note(int call, int err) {
  if (!log_path) return;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  char line[64];
  int n = snprintf(line, sizeof line, "%s:%s\n", call_names[call],
                   err == SHORT ? "short" : err == KILL ? "KILL" : err == WAIT ? "WAIT" : err == ENOSPC ? "ENOSPC" : err == EDQUOT ? "EDQUOT"
                                : err == EIO ? "EIO" : err == EPERM ? "EPERM" : err == EAGAIN ? "EAGAIN"
                                : err == EADDRINUSE ? "EADDRINUSE" : "EINTR");
  syscall(SYS_write, fd, line, (size_t)n);
  syscall(SYS_close, fd);
}

__attribute__((destructor)) static void report(void) {
  if (!log_path) return;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  for (int i = 0; i < nrules; i++) {
    char line[64];
    int n = snprintf(line, sizeof line, "seen %s %ld\n", call_names[rules[i].call], (long)rules[i].seen);
    syscall(SYS_write, fd, line, (size_t)n);
  }
  syscall(SYS_close, fd);
}

/* Whether BURROW_FAULT_GATE names a file that exists (WAIT's gate). */
static int gated(void) {
  const char *gate = getenv("BURROW_FAULT_GATE");
  return gate && syscall(SYS_faccessat, AT_FDCWD, gate, F_OK, 0) == 0;
}

/* The fault for this call, 0 for none. */
static int fault(int call, int fd) {
  setup();
  int hit = 0;
  for (int i = 0; i < nrules && !hit; i++) {
    rule *r = &rules[i];
    if ((r->call != call && !(r->call == C_ANY && a_step(call))) || !watched(fd)) continue;
    if (r->err == WAIT && !gated()) continue; /* counted only while the gate is up */
    long k = atomic_fetch_add(&r->seen, 1);
    if (k >= r->after && (r->times < 0 || k < r->after + r->times)) hit = r->err;
  }
  if (hit) note(call, hit);
  if (hit == KILL) raise(SIGKILL); /* a crash here: nothing after it runs */
  if (hit == WAIT) { /* held until the test removes the gate; then the call as it is */
    struct timespec ms = {0, 1000000};
    while (gated()) nanosleep(&ms, NULL);
    hit = 0;
  }
  return hit;
}

/* the libc function this one stands in front of */
#define REAL(name) \
  static __typeof__(&name) real_##name; \
  if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n) {
  REAL(write);
  int f = fault(C_WRITE, fd);
  if (f == SHORT && n > 1) return real_write(fd, buf, n / 2);
  if (f > 0) return errno = f, -1;
  return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  REAL(pwrite);
  int f = fault(C_PWRITE, fd);
  if (f == SHORT && n > 1) return real_pwrite(fd, buf, n / 2, off);
  if (f > 0) return errno = f, -1;
  return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }

ssize_t read(int fd, void *buf, size_t n) {
  REAL(read);
  int f = fault(C_READ, fd);
  if (f == SHORT && n > 1) return real_read(fd, buf, n / 2);
  if (f > 0) return errno = f, -1;
  return real_read(fd, buf, n);
}

int fsync(int fd) {
  REAL(fsync);
  int f = fault(C_FSYNC, fd);
  if (f > 0) return errno = f, -1;
  return real_fsync(fd);
}

int fdatasync(int fd) {
  REAL(fdatasync);
  int f = fault(C_FDATASYNC, fd);
  if (f > 0) return errno = f, -1;
  return real_fdatasync(fd);
}

int renameat(int od, const char *o, int nd, const char *n) {
  REAL(renameat);
  int f = fault(C_RENAMEAT, nd);
  if (f > 0) return errno = f, -1;
  return real_renameat(od, o, nd, n);
}

int renameat2(int od, const char *o, int nd, const char *n, unsigned flags) {
  REAL(renameat2);
  int f = fault(C_RENAMEAT2, nd);
  if (f > 0) return errno = f, -1;
  return real_renameat2(od, o, nd, n, flags);
}

int mkdirat(int dirfd, const char *name, mode_t mode) {
  REAL(mkdirat);
  int f = fault(C_MKDIRAT, dirfd);
  if (f > 0) return errno = f, -1;
  return real_mkdirat(dirfd, name, mode);
}

int unlinkat(int dirfd, const char *name, int flags) {
  REAL(unlinkat);
  int f = fault(C_UNLINKAT, dirfd);
  if (f > 0) return errno = f, -1;
  return real_unlinkat(dirfd, name, flags);
}

int linkat(int od, const char *o, int nd, const char *n, int flags) {
  REAL(linkat);
  int f = fault(C_LINKAT, nd);
  if (f > 0) return errno = f, -1;
  return real_linkat(od, o, nd, n, flags);
}

ssize_t copy_file_range(int in, off_t *ino, int out, off_t *outo, size_t n, unsigned flags) {
  REAL(copy_file_range);
  int f = fault(C_COPY_FILE_RANGE, out);
  if (f > 0) return errno = f, -1;
  return real_copy_file_range(in, ino, out, outo, n, flags);
}

int symlinkat(const char *target, int dirfd, const char *name) {
  REAL(symlinkat);
  int f = fault(C_SYMLINKAT, dirfd);
  if (f > 0) return errno = f, -1;
  return real_symlinkat(target, dirfd, name);
}

int syncfs(int fd) {
  REAL(syncfs);
  int f = fault(C_SYNCFS, fd);
  if (f > 0) return errno = f, -1;
  return real_syncfs(fd);
}

void *dlopen(const char *file, int mode) {
  REAL(dlopen);
  const char *gone = getenv("BURROW_FAULT_DLOPEN");
  if (gone && file && !strcmp(file, gone)) return NULL;
  return real_dlopen(file, mode);
}

/* a thread the caller asked for, not made (an error number, as pthread
 * functions return them) */
int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  REAL(pthread_create);
  int f = fault(C_PTHREAD_CREATE, ANY_FD);
  if (f > 0) return f;
  return real_pthread_create(t, attr, fn, arg);
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
  REAL(bind);
  int f = fault(C_BIND, ANY_FD);
  if (f > 0) return errno = f, -1;
  return real_bind(fd, addr, len);
}

/* the wall clock a test sets (BURROW_FAULT_CLOCK), read with raw system
 * calls: this shim's read() must not see it */
time_t time(time_t *t) {
  REAL(time);
  const char *file = getenv("BURROW_FAULT_CLOCK");
  time_t v = -1;
  if (file) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, file, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char buf[32];
      long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
      syscall(SYS_close, fd);
      if (n > 0) {
        buf[n] = '\0';
        char *end;
        long long s = strtoll(buf, &end, 10);
        if (end != buf && s >= 0) v = (time_t)s;
      }
    }
  }
  if (v < 0) v = real_time(NULL);
  if (t) *t = v;
  return v;
}
