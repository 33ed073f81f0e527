/*
 * fileio.c - reading regular files into memory. Small files are read()
 * into a buffer; large ones are mapped. Sizes from fstat are a hint, never
 * trusted: /proc files report 0 and files grow while read, so every read is
 * capped. A mapped file that shrinks under us raises SIGBUS on access;
 * bw_guard turns that into EIO for the code that touches the mapping.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core.h"

static int read_all(int fd, size_t hint, size_t max_bytes, bw_buf *b) {
  size_t cap = hint + 1 > 4096 ? hint + 1 : 4096, len = 0;
  if (cap > max_bytes + 1) cap = max_bytes + 1;
  char *data = malloc(cap);
  if (!data) return BW_ENOMEM;
  for (;;) {
    if (len == cap) {
      if (cap > max_bytes) break; /* one byte past the cap: too large */
      size_t ncap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
      char *n = realloc(data, ncap);
      if (!n) {
        free(data);
        return BW_ENOMEM;
      }
      data = n;
      cap = ncap;
    }
    ssize_t got = read(fd, data + len, cap - len);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int e = errno;
      free(data);
      return bw_code_from_errno(e);
    }
    if (got == 0) break;
    len += (size_t)got;
    /* the size fstat gave: the read that would only see the end is saved
       (0 is what /proc and the like report: read those to the end) */
    if (len == hint && hint > 0) break;
  }
  if (len > max_bytes) {
    free(data);
    return bw_fail(BW_TOO_LARGE, NULL);
  }
  b->data = data;
  b->len = len;
  b->mapped = 0;
  return BW_OK;
}

static int read_fd(int fd, const struct stat *st, size_t max_bytes, bw_buf *b,
                   int populate) {
  memset(b, 0, sizeof *b);
  size_t size = (size_t)st->st_size;
  if (size > max_bytes) return bw_fail(BW_TOO_LARGE, NULL);
  if (size < BW_MMAP_MIN) return read_all(fd, size, max_bytes, b);
  /* populate: one pass over the page tables beats a fault per 64 KiB */
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0),
                 fd, 0);
  if (p == MAP_FAILED) return read_all(fd, size, max_bytes, b);
  if (populate) madvise(p, size, MADV_SEQUENTIAL);
  b->data = p;
  b->len = size;
  b->mapped = 1;
  return BW_OK;
}

int bw_read_fd(int fd, const struct stat *st, size_t max_bytes, bw_buf *b) {
  return read_fd(fd, st, max_bytes, b, 1);
}

int bw_read_file(const bw_root *r, const char *rel, size_t max_bytes,
                 bw_buf *b, struct stat *st) {
  int fd, rc = bw_open_read(r, rel, &fd, st);
  if (rc) return rc;
  rc = read_fd(fd, st, max_bytes, b, 1);
  close(fd);
  return rc;
}

int bw_map_file(const bw_root *r, const char *rel, size_t max_bytes,
                bw_buf *b, struct stat *st) {
  int fd, rc = bw_open_read(r, rel, &fd, st);
  if (rc) return rc;
  rc = read_fd(fd, st, max_bytes, b, 0);
  close(fd);
  return rc;
}

void bw_buf_prefault(const bw_buf *b, size_t off, size_t n) {
#ifdef MADV_POPULATE_READ
  if (!b->mapped || off >= b->len) return;
  if (n > b->len - off) n = b->len - off;
  uintptr_t a = ((uintptr_t)b->data + off) & ~(uintptr_t)4095;
  uintptr_t z = (uintptr_t)b->data + off + n;
  if (z - a >= ((size_t)1 << 20)) /* a file cut short meanwhile: EFAULT, not SIGBUS */
    (void)madvise((void *)a, z - a, MADV_POPULATE_READ);
#else
  (void)b, (void)off, (void)n;
#endif
}

void bw_buf_free(bw_buf *b) {
  if (!b->data) return;
  if (b->mapped) munmap(b->data, b->len);
  else free(b->data);
  b->data = NULL;
  b->len = 0;
}

void bw_huge_advise(void *p, size_t n) {
  const uintptr_t huge = (uintptr_t)2 << 20;
  if (n < BW_HUGE_MIN) return;
  uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
  uintptr_t e = ((uintptr_t)p + n) & ~(huge - 1);
  if (e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
}

/* ---- SIGBUS guard ---- */

static __thread sigjmp_buf *guard_env;
static struct sigaction old_bus;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
  if (guard_env) siglongjmp(*guard_env, 1);
  /* not a guarded access: behave as whoever was installed before us */
  if (old_bus.sa_flags & SA_SIGINFO) {
    old_bus.sa_sigaction(sig, si, uc);
  } else if (old_bus.sa_handler != SIG_DFL && old_bus.sa_handler != SIG_IGN) {
    old_bus.sa_handler(sig);
  } else {
    signal(SIGBUS, SIG_DFL);
    raise(SIGBUS);
  }
}

static void guard_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &old_bus);
}

int bw_guard(int (*fn)(void *arg), void *arg) {
  pthread_once(&guard_once, guard_install);
  sigjmp_buf env, *prev = guard_env;
  if (sigsetjmp(env, 1)) {
    guard_env = prev;
    return bw_fail(BW_EIO, "the file shrank while it was being read");
  }
  guard_env = &env;
  int rc = fn(arg);
  guard_env = prev;
  return rc;
}

int bw_writev_all(int fd, struct iovec *iov, int cnt) {
  while (cnt > 0) {
    ssize_t w = writev(fd, iov, cnt > IOV_MAX ? IOV_MAX : cnt);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    while (cnt > 0 && (size_t)w >= iov->iov_len) {
      w -= (ssize_t)iov->iov_len;
      iov++;
      cnt--;
    }
    if (cnt > 0) {
      iov->iov_base = (char *)iov->iov_base + w;
      iov->iov_len -= (size_t)w;
    }
  }
  return 0;
}
