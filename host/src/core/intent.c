/*
 * intent.c - intent records: what a staged change is for, written
 * durably beside its stage before its first irreversible step, so that a
 * crash is rolled back or forward at the next start or at the next staged
 * operation in that directory (stage.h has the rules and the API).
 *
 * A record is ".burrow-stage.i.PID.HEX": "BWI1", the state byte, the op
 * letter, a newline, then its names, each ended by a NUL. Its owner holds
 * an flock on it while the operation runs. The root's journal
 * (ROOT/.burrow-stage.j/) holds a pointer of the same name per record,
 * locked the same way: "DEV INO\n" and the in-root path of the record's
 * directory. Each is written under a temp name (".burrow-stage.t.PID.HEX",
 * swept once that pid is gone), locked, and renamed to its name once
 * complete and synced. Recovery, which reads them, is recover.c's (above
 * the stager, which writes them through this file).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "intent.h"


static void random_name(char *out, size_t size, const char *prefix) {
  unsigned long long rnd = 0;
  if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd)
    rnd = (unsigned long long)(uintptr_t)out ^ ((unsigned long long)getpid() << 20) ^
          (unsigned long long)bw_now_ms();
  snprintf(out, size, "%s%ld.%016llx", prefix, (long)getpid(), rnd);
}

/* Write all of buf to a new file dir/tmp (locked when lock) and rename
 * it to dir/name: the name never shows a partial file. *keep: the open
 * file (when keep), else closed. Not synced: durable() does that. */
static int write_named(int dir, const char *name, const char *buf, size_t len, int lock,
                       int *keep) {
  char tmp[BW_STAGE_NAME + 8];
  random_name(tmp, sizeof tmp, TEMP);
  int fd = openat(dir, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return bw_code_from_errno(errno);
  int rc = lock && flock(fd, LOCK_EX | LOCK_NB) < 0 ? bw_code_from_errno(errno) : BW_OK;
  if (!rc) rc = bw_write_all(fd, buf, len);
  if (!rc && renameat(dir, tmp, dir, name) < 0) rc = bw_code_from_errno(errno);
  if (rc) {
    unlinkat(dir, tmp, 0);
    close(fd);
    return rc;
  }
  if (keep) *keep = fd;
  else close(fd);
  return BW_OK;
}

/* The root's journal directory, made if missing (*made: it was). */
static int open_journal(int top, int *made) {
  *made = 0;
  for (int tries = 0; tries < 4; tries++) {
    int fd = openat(top, JOURNAL, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) return fd;
    if (errno != ENOENT) return -1;
    if (mkdirat(top, JOURNAL, 0700) == 0) *made = 1;
    else if (errno != EEXIST) return -1;
  }
  return -1;
}

/* The pointer to the record in the root's journal. */
static int write_pointer(bw_intent *it, int top, const char *in_root, int dirfd) {
  struct stat st;
  if (fstat(dirfd, &st) < 0) return bw_code_from_errno(errno);
  char *buf = malloc(POINTER_MAX);
  if (!buf) return BW_ENOMEM;
  int n = snprintf(buf, POINTER_MAX, "%llu %llu\n%s", (unsigned long long)st.st_dev,
                   (unsigned long long)st.st_ino, in_root[0] ? in_root : ".");
  int rc = BW_OK;
  for (int tries = 0; tries < 4; tries++) { /* the journal may be removed under us when empty */
    it->jdir = open_journal(top, &it->jmade);
    rc = it->jdir < 0 ? bw_code_from_errno(errno) : BW_OK;
    if (!rc) rc = write_named(it->jdir, it->name, buf, (size_t)n, 1, &it->jfd);
    if (rc != BW_ENOENT) break;
    close(it->jdir);
    it->jdir = -1;
  }
  free(buf);
  return rc;
}

/* The pointer (its data, the journal, the root when the journal is new)
 * and the record (its data, its directory) synced. */
static int sync_data(int fd) {
  if (fdatasync(fd) == 0) return BW_OK;
  int rc = bw_code_from_errno(errno); /* a full disk says so */
  return rc == BW_EIO ? rc : bw_fail(BW_EIO, "the intent record's fsync failed");
}

static int durable(bw_intent *it) {
  int rc = it->jfd >= 0 ? sync_data(it->jfd) : BW_OK;
  if (!rc && it->jfd >= 0) rc = bw_sync_dir(it->jdir);
  if (!rc && it->jmade) {
    int top = openat(it->jdir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    rc = top < 0 ? bw_code_from_errno(errno) : bw_sync_dir(top);
    if (top >= 0) close(top);
  }
  if (!rc) rc = sync_data(it->fd);
  if (!rc) rc = bw_sync_dir(it->dir);
  if (!rc) it->synced = 1;
  return rc;
}

int bw_intent_begin(bw_intent *it, int top, const char *in_root, int dirfd, char op,
                    const char *const *names, size_t n) {
  *it = BW_INTENT_NONE;
  size_t len = HEAD_LEN;
  for (size_t i = 0; i < n; i++) len += strlen(names[i]) + 1;
  if (len > RECORD_MAX || n > NAMES_MAX)
    return bw_fail(BW_TOO_LARGE, "an intent record holds 128 names and 64 KiB at most; split the change");
  char *buf = malloc(len);
  if (!buf) return BW_ENOMEM;
  memcpy(buf, "BWI1", MAGIC_LEN);
  buf[STATE_AT] = BW_INTENT_STAGING;
  buf[5] = op;
  buf[6] = '\n';
  size_t at = HEAD_LEN;
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(names[i]) + 1;
    memcpy(buf + at, names[i], l);
    at += l;
  }
  random_name(it->name, sizeof it->name, RECORD);
  it->dir = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  int rc = it->dir < 0 ? bw_code_from_errno(errno) : BW_OK;
  /* the pointer first, so a start finds every record (a pointer whose
   * record is not there is dropped once its owner's pid is gone), then
   * the record, locked */
  /* (a record in the root's own folder needs none: a start reads it) */
  if (!rc && top >= 0 && in_root[0] && strcmp(in_root, ".") && strcmp(in_root, "./"))
    rc = write_pointer(it, top, in_root, dirfd);
  if (!rc) rc = write_named(it->dir, it->name, buf, len, 1, &it->fd);
  /* synced now when the next step cannot be undone by dropping what it
   * made (a source renamed aside); else at the commit */
  if (!rc && (op == 'm' || op == 'r' || op == 'x')) rc = durable(it);
  free(buf);
  if (rc) {
    bw_err_saved e;
    bw_err_save(&e);
    bw_intent_end(it);
    return bw_err_restore(rc, &e);
  }
  return BW_OK;
}

int bw_intent_commit(bw_intent *it) {
  if (it->fd < 0) return BW_OK;
  char c = BW_INTENT_COMMITTED;
  ssize_t w;
  while ((w = pwrite(it->fd, &c, 1, STATE_AT)) < 0 && errno == EINTR) {}
  if (w != 1) { /* a full disk says so */
    int rc = w < 0 ? bw_code_from_errno(errno) : BW_EIO;
    return rc == BW_EIO && w >= 0 ? bw_fail(BW_EIO, "the intent record could not be updated") : rc;
  }
  return it->synced ? sync_data(it->fd) : durable(it);
}

void bw_intent_release(bw_intent *it) {
  if (it->fd >= 0) close(it->fd); /* the locks go with them */
  if (it->jfd >= 0) close(it->jfd);
  if (it->dir >= 0) close(it->dir);
  if (it->jdir >= 0) close(it->jdir);
  *it = BW_INTENT_NONE;
}

void bw_intent_end(bw_intent *it) {
  if (it->dir >= 0 && it->fd >= 0) unlinkat(it->dir, it->name, 0);
  if (it->jdir >= 0) {
    unlinkat(it->jdir, it->name, 0);
    /* an empty journal goes (another operation's pointer keeps it) */
    int top = openat(it->jdir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (top >= 0) {
      unlinkat(top, JOURNAL, AT_REMOVEDIR);
      close(top);
    }
  }
  bw_intent_release(it);
}

void bw_intent_tidy(const bw_root *r) {
  unlinkat(r->fd, JOURNAL, AT_REMOVEDIR); /* refused while a pointer is in it */
}
