/*
 * counter.c - counters several processes share, for the quotas policy's
 * store: one file of fixed records {key, window, value}, read and changed
 * under an exclusive flock, so a check and its addition are one step for
 * every process that uses the file. The page cache makes it consistent
 * on one machine; across machines it needs a file system whose flock
 * works there (docs/policies.md). Records are not fsync'd: a crash of the
 * machine may lose the last counts, never corrupt a record.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "counter.h"

typedef struct record {
  char key[BW_COUNTER_KEY];
  int64_t window;
  int64_t value;
  char pad[16];
} record; /* 128 bytes */

struct bw_counters {
  int fd;
};

int bw_counters_open(const char *path, bw_counters **out) {
  int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) return bw_code_from_errno(errno);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return bw_fail(BW_NOT_REGULAR, "the counter store must be a regular file");
  }
  bw_counters *c = malloc(sizeof *c);
  if (!c) {
    close(fd);
    return BW_ENOMEM;
  }
  c->fd = fd;
  *out = c;
  return BW_OK;
}

void bw_counters_close(bw_counters *c) {
  if (!c) return;
  close(c->fd);
  free(c);
}

/* The lock, waited for at most about 2 s: a holder that never lets go
 * (another program on the file) makes the call fail, never hang. */
static int lock(int fd) {
  for (int i = 0; i < 2000; i++) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return BW_OK;
    if (errno != EWOULDBLOCK && errno != EINTR) return bw_code_from_errno(errno);
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return bw_fail(BW_EAGAIN, "the counter store stayed locked");
}

/* Find key's record (or the first free slot) reading record by record. */
static int find(int fd, const char *key, record *r, off_t *at) {
  off_t free_at = -1;
  for (int i = 0; i < BW_COUNTER_RECORDS; i++) {
    off_t off = (off_t)i * (off_t)sizeof *r;
    ssize_t n = pread(fd, r, sizeof *r, off);
    if (n < 0) return bw_code_from_errno(errno);
    if (n < (ssize_t)sizeof *r) { /* the end: a new record goes here */
      if (free_at < 0) free_at = off;
      break;
    }
    if (!r->key[0]) {
      if (free_at < 0) free_at = off;
      continue;
    }
    if (!strncmp(r->key, key, sizeof r->key)) {
      *at = off;
      return BW_OK;
    }
  }
  if (free_at < 0) return bw_fail(BW_TOO_LARGE, "the counter store is full");
  memset(r, 0, sizeof *r);
  strcpy(r->key, key);
  *at = free_at;
  return BW_OK;
}

int bw_counter_add(bw_counters *c, const char *key, int64_t window,
                   int64_t delta, int64_t limit, int64_t *value, int *added) {
  size_t kl = strlen(key);
  if (kl == 0 || kl >= BW_COUNTER_KEY)
    return bw_fail(BW_INVALID_ARGUMENT, "counter key: 1 to 95 bytes");
  int rc = lock(c->fd);
  if (rc) return rc;
  record r;
  off_t at = 0;
  rc = find(c->fd, key, &r, &at);
  if (rc == BW_OK) {
    if (r.window != window) {
      r.window = window;
      r.value = 0;
    }
    *added = !(limit >= 0 && r.value + delta > limit);
    if (*added) r.value += delta;
    if (r.value < 0) r.value = 0;
    *value = r.value;
    if (pwrite(c->fd, &r, sizeof r, at) != (ssize_t)sizeof r)
      rc = bw_fail(BW_EIO, "cannot write the counter store");
  }
  int err = errno;
  flock(c->fd, LOCK_UN);
  errno = err;
  return rc;
}

/* A record whose window is its expiry (a "once:" mark, a state store's
 * "ttl\x1f" counter) that has expired: its slot may be taken. A quota
 * counter's window is a minute number, never an expiry: never taken. */
static int stale(const record *r, int64_t now) {
  return (!strncmp(r->key, "once:", 5) || !strncmp(r->key, "ttl\x1f", 4)) && r->window < now;
}

/* A key marked once, until it expires: its record's window is the expiry
 * (unix seconds). A full store takes the slot of a stale record (above);
 * quota counters are never taken. */
int bw_counter_once(bw_counters *c, const char *key, int64_t expires, int64_t now,
                    int *first) {
  size_t kl = strlen(key);
  if (kl == 0 || kl >= BW_COUNTER_KEY || strncmp(key, "once:", 5))
    return bw_fail(BW_INVALID_ARGUMENT, "once key: \"once:\" and 1 to 90 bytes");
  int rc = lock(c->fd);
  if (rc) return rc;
  record r;
  off_t at = -1, free_at = -1, stale_at = -1;
  *first = 0;
  for (int i = 0; i < BW_COUNTER_RECORDS && rc == BW_OK; i++) {
    off_t off = (off_t)i * (off_t)sizeof r;
    ssize_t n = pread(c->fd, &r, sizeof r, off);
    if (n < 0) rc = bw_code_from_errno(errno);
    else if (n < (ssize_t)sizeof r) {
      if (free_at < 0) free_at = off;
      break;
    } else if (!r.key[0]) {
      if (free_at < 0) free_at = off;
    } else if (!strncmp(r.key, key, sizeof r.key)) {
      at = off;
      break;
    } else if (stale_at < 0 && stale(&r, now)) {
      stale_at = off;
    }
  }
  if (rc == BW_OK && at >= 0 && r.window >= now) {
    *first = 0; /* marked, not expired: a replay */
  } else if (rc == BW_OK) {
    if (at < 0) at = free_at >= 0 ? free_at : stale_at;
    if (at < 0) rc = bw_fail(BW_TOO_LARGE, "the store is full");
    else {
      memset(&r, 0, sizeof r);
      memcpy(r.key, key, kl);
      r.window = expires;
      r.value = 1;
      if (pwrite(c->fd, &r, sizeof r, at) != (ssize_t)sizeof r)
        rc = bw_fail(BW_EIO, "cannot write the store");
      else *first = 1;
    }
  }
  int err = errno;
  flock(c->fd, LOCK_UN);
  errno = err;
  return rc;
}

/* Find key's record under the lock: *at its offset, r its contents, or
 * (*at = -1) where a new one would go (*slot: a free or stale slot, -1 when
 * the file is full). */
static int seek(int fd, const char *key, int64_t now, record *r, off_t *at, off_t *slot) {
  off_t free_at = -1, stale_at = -1;
  *at = -1;
  for (int i = 0; i < BW_COUNTER_RECORDS; i++) {
    off_t off = (off_t)i * (off_t)sizeof *r;
    ssize_t n = pread(fd, r, sizeof *r, off);
    if (n < 0) return bw_code_from_errno(errno);
    if (n < (ssize_t)sizeof *r) {
      if (free_at < 0) free_at = off;
      break;
    }
    if (!r->key[0]) {
      if (free_at < 0) free_at = off;
    } else if (!strncmp(r->key, key, sizeof r->key)) {
      *at = off;
      return BW_OK;
    } else if (stale_at < 0 && stale(r, now)) {
      stale_at = off;
    }
  }
  *slot = free_at >= 0 ? free_at : stale_at;
  return BW_OK;
}

static int unlock(int fd, int rc) {
  int err = errno;
  flock(fd, LOCK_UN);
  errno = err;
  return rc;
}

int bw_counter_add_until(bw_counters *c, const char *key, int64_t now, int64_t expires,
                         int64_t delta, int64_t limit, int64_t *value, int *added) {
  size_t kl = strlen(key);
  if (kl == 0 || kl >= BW_COUNTER_KEY)
    return bw_fail(BW_INVALID_ARGUMENT, "counter key: 1 to 95 bytes");
  int rc = lock(c->fd);
  if (rc) return rc;
  record r;
  off_t at, slot = -1;
  rc = seek(c->fd, key, now, &r, &at, &slot);
  if (rc) return unlock(c->fd, rc);
  if (at < 0 || r.window < now) { /* none, or expired: a new window */
    memset(&r, 0, sizeof r);
    memcpy(r.key, key, kl);
    r.window = expires;
  }
  *added = !(limit >= 0 && r.value + delta > limit);
  *value = r.value;
  if (!*added) return unlock(c->fd, BW_OK);
  int64_t sum;
  if (__builtin_add_overflow(r.value, delta, &sum))
    return unlock(c->fd, bw_fail(BW_TOO_LARGE, "the counter would overflow"));
  r.value = sum < 0 ? 0 : sum;
  *value = r.value;
  if (at < 0) at = slot;
  if (at < 0) return unlock(c->fd, bw_fail(BW_TOO_LARGE, "the counter store is full"));
  if (pwrite(c->fd, &r, sizeof r, at) != (ssize_t)sizeof r)
    rc = bw_fail(BW_EIO, "cannot write the counter store");
  return unlock(c->fd, rc);
}

int bw_counter_del(bw_counters *c, const char *key, int *deleted) {
  size_t kl = strlen(key);
  if (kl == 0 || kl >= BW_COUNTER_KEY)
    return bw_fail(BW_INVALID_ARGUMENT, "counter key: 1 to 95 bytes");
  int rc = lock(c->fd);
  if (rc) return rc;
  record r;
  off_t at, slot;
  *deleted = 0;
  rc = seek(c->fd, key, 0, &r, &at, &slot);
  if (rc == BW_OK && at >= 0) {
    memset(&r, 0, sizeof r);
    if (pwrite(c->fd, &r, sizeof r, at) != (ssize_t)sizeof r)
      rc = bw_fail(BW_EIO, "cannot write the counter store");
    else *deleted = 1;
  }
  return unlock(c->fd, rc);
}

int bw_counter_count(bw_counters *c, int (*match)(const char *key, int64_t window, void *ud),
                     void *ud, size_t *n) {
  int rc = lock(c->fd);
  if (rc) return rc;
  record r;
  *n = 0;
  for (int i = 0; i < BW_COUNTER_RECORDS; i++) {
    ssize_t got = pread(c->fd, &r, sizeof r, (off_t)i * (off_t)sizeof r);
    if (got < 0) return unlock(c->fd, bw_code_from_errno(errno));
    if (got < (ssize_t)sizeof r) break;
    r.key[sizeof r.key - 1] = 0;
    if (r.key[0] && match(r.key, r.window, ud)) ++*n;
  }
  return unlock(c->fd, BW_OK);
}
