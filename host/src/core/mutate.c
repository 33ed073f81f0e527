/*
 * mutate.c - the mutations besides replacing a file: mkdir, remove (of
 * trees too), move, copy and append. Each resolves the parent of its
 * target to a directory fd and acts with *at() calls on a validated final
 * name. A tree is removed by tree.c (bw_remove_tree: by fds, never
 * following a link or entering another mount) and copied by the stager
 * (copy.c's bw_copy); a file copy writes through bw_write_file; appends
 * and removes with expected_hash hold the directory's write lock
 * (write.c) like it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edit.h"


/* ---- mkdir ---- */

int bw_mkdir(const bw_root *r, const char *rel, int parents, int *created) {
  *created = 0;
  if (r->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  struct stat st;
  int fd, rc = bw_resolve(r, rel, 0, &fd, &st);
  if (rc == BW_OK) {
    close(fd);
    if (!S_ISDIR(st.st_mode)) return bw_fail(BW_EEXIST, "it exists and is not a directory");
    return parents ? BW_OK : bw_fail(BW_EEXIST, "the directory exists");
  }
  if (rc != BW_ENOENT) return rc;
  if (parents) {
    if ((rc = bw_mkdirs_held(r, rel))) return rc;
    if ((rc = bw_resolve(r, rel, 0, &fd, &st))) return rc; /* a dangling link? */
    close(fd);
    if (!S_ISDIR(st.st_mode)) return bw_fail(BW_EEXIST, "it exists and is not a directory");
    *created = 1;
    return BW_OK;
  }
  char name[BW_NAME_MAX + 1];
  int dirfd, trailing;
  if ((rc = bw_resolve_parent(r, rel, &dirfd, name, &trailing))) return rc;
  /* the tree lock: it lands in the directory the path was judged to reach */
  char sub[BW_PATH_MAX + 1];
  bw_dir_lock lk = BW_DIR_UNLOCKED;
  if (bw_parent_path(rel, sub)) rc = bw_fail(BW_INVALID_ARGUMENT, "name too long");
  if (!rc) rc = bw_lock_write(r, sub, dirfd, 0, &lk);
  if (rc) {
    close(dirfd);
    return rc;
  }
  if (mkdirat(dirfd, name, 0777) < 0) rc = bw_mut_errno(errno);
  else if (!(rc = bw_sync_dir(dirfd))) *created = 1;
  else if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0) /* not durable: not made */
    rc = bw_fail(BW_EIO, "the directory fsync failed; the directory was not made");
  else
    rc = bw_fail_on(BW_EIO, BW_ON_SYNC, 0, "made, but the directory fsync failed: it may not survive a crash");
  bw_unlock_dir(&lk);
  close(dirfd);
  return rc;
}

/* ---- remove ---- */


typedef struct hash_job {
  const bw_buf *b;
  char *out;
} hash_job;

static int hash_run(void *arg) {
  hash_job *j = arg;
  return bw_sha256(j->b->data, j->b->len, j->out);
}

/* Hash of an open regular file's bytes, guarded when they are mapped. */
static int hash_open(int fd, const struct stat *st, char out[BW_HASH_STR],
                     size_t *size) {
  bw_buf b;
  int rc = bw_read_fd(fd, st, (size_t)1 << 40, &b);
  if (rc) return rc;
  hash_job j = {&b, out};
  rc = b.mapped ? bw_guard(hash_run, &j) : hash_run(&j);
  if (size) *size = b.len;
  bw_buf_free(&b);
  return rc;
}

/* Hash of the regular file (dirfd, name) as it is now. */
static int hash_at(int dirfd, const char *name, const struct stat *st,
                   char out[BW_HASH_STR]) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return bw_code_from_errno(errno);
  struct stat now;
  int rc = fstat(fd, &now) < 0 ? bw_code_from_errno(errno) : BW_OK;
  if (!rc && (now.st_ino != st->st_ino || !S_ISREG(now.st_mode)))
    rc = bw_fail(BW_EAGAIN, "the file changed; retry");
  if (!rc) rc = hash_open(fd, &now, out, NULL);
  close(fd);
  return rc;
}

/* Compare and unlink, under the directory's write lock like a
 * compare-and-set write, so no edit lands between the two. */
static int remove_compared(int dirfd, const char *name, const char *expected_hash) {
  struct stat st;
  char now[BW_HASH_STR];
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return bw_code_from_errno(errno);
  if (!S_ISREG(st.st_mode)) return bw_fail(BW_HASH_MISMATCH, NULL);
  int rc = hash_at(dirfd, name, &st, now);
  if (rc) return rc;
  if (strcmp(now, expected_hash)) return bw_fail(BW_HASH_MISMATCH, NULL);
  return unlinkat(dirfd, name, 0) == 0 ? BW_OK : bw_mut_errno(errno);
}

/* Remove a non-directory, compare-and-set when expected_hash is given. */
static int remove_file(int dirfd, const char *name, const struct stat *st,
                       const char *expected_hash) {
  if (expected_hash && !S_ISREG(st->st_mode)) return bw_fail(BW_HASH_MISMATCH, NULL);
  if (expected_hash) {
    bw_dir_lock lk;
    int rc = bw_lock_dir(dirfd, 0, &lk);
    if (!rc) rc = remove_compared(dirfd, name, expected_hash);
    bw_unlock_dir(&lk);
    return rc;
  }
  if (unlinkat(dirfd, name, 0) == 0) return BW_OK;
  if (errno == EISDIR) /* became a directory since the fstatat */
    return bw_fail(BW_EAGAIN, "the path changed during the removal; retry");
  return bw_mut_errno(errno);
}

static int remove_empty_dir(int dirfd, const char *name) {
  if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0) return BW_OK;
  if (errno == ENOTEMPTY)
    return bw_fail(BW_EEXIST, "the directory is not empty; pass recursive=true");
  return bw_mut_errno(errno);
}

int bw_remove(const bw_root *r, const char *rel, int recursive,
              const char *expected_hash, const bw_stop *stop,
              bw_remove_res *res) {
  memset(res, 0, sizeof *res);
  if (r->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  char name[BW_NAME_MAX + 1];
  int dirfd, trailing;
  int rc = bw_parent_of(r, rel, &dirfd, name, &trailing,
                     "the root itself, \".\" and \"..\" cannot be removed");
  if (rc) return rc;
  struct stat st;
  int dir = 0;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    rc = bw_code_from_errno(errno);
  else if (!bw_same_mount(r, dirfd, name, &st))
    rc = bw_fail(BW_INVALID_ARGUMENT, "it is a mount point");
  else if (!(dir = S_ISDIR(st.st_mode)) && trailing)
    rc = bw_fail(BW_ENOTDIR, S_ISLNK(st.st_mode) ? "a symlink, not a directory" : NULL);
  else if (dir && expected_hash)
    rc = bw_fail(BW_INVALID_ARGUMENT, "expected_hash applies to files only");
  else if (dir && !recursive && !(rc = remove_empty_dir(dirfd, name)))
    res->dirs = 1;
  else if (dir && recursive)
    rc = bw_remove_tree(r, dirfd, name, stop, res);
  else if (!dir && !(rc = remove_file(dirfd, name, &st, expected_hash)))
    res->files = 1;
  if (!rc && bw_sync_dir(dirfd)) /* what is gone cannot be put back */
    rc = bw_fail_on(BW_EIO, BW_ON_SYNC, 0, "removed, but the directory fsync failed: the removal may not survive a crash");
  close(dirfd);
  return rc;
}

/* ---- move ---- */


/* The directory fsyncs after the rename failed. Put the source back where
 * nothing was replaced; a replaced destination is gone, so that move stays
 * done, and the detail says so. */
static int move_unsynced(int sdir, const char *sname, int ddir,
                         const char *dname, int replaced) {
  if (!replaced && renameat2(ddir, dname, sdir, sname, RENAME_NOREPLACE) == 0)
    return bw_fail(BW_EIO, "the directory fsync failed; nothing was moved");
  return bw_fail_on(BW_EIO, BW_ON_SYNC, 0, "moved, but the directory fsync failed");
}

int bw_move(const bw_root *rs, const char *src, const bw_root *rd,
            const char *dst, int overwrite) {
  if (rs->readonly || rd->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  char sname[BW_NAME_MAX + 1], dname[BW_NAME_MAX + 1];
  int sdir, ddir, strail, dtrail;
  int rc = bw_parent_of(rs, src, &sdir, sname, &strail,
                     "the root itself, \".\" and \"..\" cannot be moved");
  if (rc) return rc;
  rc = bw_parent_of(rd, dst, &ddir, dname, &dtrail,
                 "the destination cannot be a root, \".\" or \"..\"");
  if (rc) {
    close(sdir);
    return rc;
  }
  struct stat st, dt;
  int replaced = 0; /* the destination existed: overwrite replaces it */
  if (fstatat(sdir, sname, &st, AT_SYMLINK_NOFOLLOW) < 0)
    rc = bw_code_from_errno(errno);
  else if (!bw_same_mount(rs, sdir, sname, &st))
    rc = bw_fail(BW_INVALID_ARGUMENT, "it is a mount point");
  else if ((strail || dtrail) && !S_ISDIR(st.st_mode))
    rc = bw_fail(BW_ENOTDIR, "a trailing slash names a directory");
  else if (overwrite &&
           (replaced = fstatat(ddir, dname, &dt, AT_SYMLINK_NOFOLLOW) == 0) &&
           (S_ISLNK(dt.st_mode) || (!S_ISDIR(dt.st_mode) && dt.st_nlink > 1)))
    rc = bw_fail(BW_POLICY_DENIED, S_ISLNK(dt.st_mode)
                                       ? "the destination is a symlink; replacing links is refused"
                                       : "the destination has other hard links; replacing it is refused");
  else if (overwrite)
    rc = renameat2(sdir, sname, ddir, dname, 0) == 0 ? BW_OK : bw_mut_errno(errno);
  else
    rc = bw_rename_noreplace(sdir, sname, ddir, dname, &st);
  if (!rc && (bw_sync_dir(ddir) || bw_sync_dir(sdir)))
    rc = move_unsynced(sdir, sname, ddir, dname, replaced);
  close(sdir);
  close(ddir);
  return rc;
}

/* ---- copy ---- */

/* Exec bits of src where the new file's mode (umask applied) lets read. */
static void copy_mode(const bw_root *rd, const char *dst, mode_t src) {
  char name[BW_NAME_MAX + 1];
  int dirfd, trailing;
  if (!(src & 0111) || bw_resolve_parent(rd, dst, &dirfd, name, &trailing)) return;
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
    fchmod(fd, (st.st_mode & 07777) | (src & 0111 & ((st.st_mode & 0444) >> 2)));
  if (fd >= 0) close(fd);
  close(dirfd);
}

static int has_trailing_slash(const char *rel) {
  size_t n = strlen(rel);
  return n > 1 && rel[n - 1] == '/';
}

/* One file through the durable write, create-only unless overwrite. A
 * tree is copy.c's (bw_copy: through the stager), which calls this for
 * anything else. */
int bw_copy_file(const bw_root *rs, const char *src, const bw_root *rd,
                 const char *dst, const bw_copy_opts *o, bw_copy_res *res) {
  memset(res, 0, sizeof *res);
  if (rd->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  struct stat st;
  int fd, rc = bw_resolve(rs, src, 0, &fd, &st); /* in-root links are followed */
  if (rc) return rc;
  close(fd);
  if (S_ISDIR(st.st_mode) && o->recursive) /* bw_copy found a file there */
    return bw_fail(BW_EAGAIN, "the source became a directory during the copy; retry");
  if (S_ISDIR(st.st_mode)) return bw_fail(BW_EISDIR, "pass recursive=true to copy a directory");
  if (!S_ISREG(st.st_mode)) return bw_fail(BW_NOT_REGULAR, NULL);
  if (has_trailing_slash(dst)) return bw_fail(BW_ENOTDIR, "a trailing slash names a directory");
  char *data;
  size_t len;
  rc = bw_read_copy(rs, src, o->max_bytes ? o->max_bytes : (size_t)1 << 40, &data, &len);
  if (rc) return rc;
  bw_write_opts wo = {.expected_hash = o->overwrite ? NULL : "absent"};
  bw_write_res wr;
  rc = bw_write_file(rd, dst, data, len, &wo, &wr);
  free(data);
  if (rc == BW_HASH_MISMATCH)
    return bw_fail(BW_EEXIST, "the destination exists; pass overwrite=true");
  if (rc) return rc;
  if (wr.created) copy_mode(rd, dst, st.st_mode);
  res->files = 1;
  res->bytes = len;
  memcpy(res->hash, wr.hash, sizeof wr.hash);
  return BW_OK;
}

/* ---- append ---- */

/* Open (dirfd, name) for appending, creating it when absent; refuses
 * links, hard-linked files and anything but a regular file. */
static int open_append(const bw_root *r, const char *rel, int dirfd,
                       const char *name, size_t add, size_t max, int *out,
                       bw_append_res *res) {
  for (int tries = 0; tries < 8; tries++) {
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno != ENOENT) return bw_code_from_errno(errno);
      if (add > max) return bw_fail(BW_TOO_LARGE, NULL);
      int fd = openat(dirfd, name, O_RDWR | O_APPEND | O_CREAT | O_EXCL |
                                       O_NOFOLLOW | O_CLOEXEC, 0666);
      if (fd < 0 && errno == EEXIST) continue; /* raced with a creator */
      if (fd < 0) return bw_code_from_errno(errno);
      res->created = 1;
      *out = fd;
      return BW_OK;
    }
    if (S_ISLNK(st.st_mode)) {
      int fd, lrc;
      struct stat lst;
      if ((lrc = bw_resolve(r, rel, 0, &fd, &lst)) == BW_OK) close(fd);
      if (lrc == BW_OUTSIDE_ROOT || lrc == BW_ELOOP) return lrc;
      return bw_fail(BW_POLICY_DENIED,
                     "the path is a symlink; writing through links is refused");
    }
    if (S_ISDIR(st.st_mode)) return bw_fail(BW_EISDIR, NULL);
    if (!S_ISREG(st.st_mode)) return bw_fail(BW_NOT_REGULAR, NULL);
    if (st.st_nlink > 1)
      return bw_fail(BW_POLICY_DENIED, "the file has other hard links; writing is refused");
    if ((size_t)st.st_size + add > max) return bw_fail(BW_TOO_LARGE, NULL);
    int fd = openat(dirfd, name, O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ELOOP)) continue;
    if (fd < 0) return bw_code_from_errno(errno);
    struct stat now;
    if (fstat(fd, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev &&
        S_ISREG(now.st_mode) && now.st_nlink == 1) {
      res->old_size = (size_t)now.st_size;
      *out = fd;
      return BW_OK;
    }
    close(fd); /* swapped between the look and the open: look again */
  }
  return bw_fail(BW_EAGAIN, "the file kept changing; retry");
}

static int append_to(const bw_root *r, const char *rel, int dirfd,
                     const char *name, const void *data, size_t len,
                     size_t max, bw_append_res *res) {
  int fd = -1, rc = open_append(r, rel, dirfd, name, len, max, &fd, res);
  if (rc) return rc;
  rc = bw_write_all(fd, data, len);
  if (!rc && fsync(fd) < 0) /* a full disk or quota is said as such */
    rc = errno == ENOSPC || errno == EDQUOT ? bw_code_from_errno(errno)
                                            : bw_fail(BW_EIO, "fsync failed");
  struct stat st;
  if (!rc && (fstat(fd, &st) < 0 || lseek(fd, 0, SEEK_SET) < 0))
    rc = bw_code_from_errno(errno);
  if (!rc) rc = hash_open(fd, &st, res->hash, &res->size);
  if (!rc && res->created) rc = bw_sync_dir(dirfd);
  /* a failed append, whatever step failed, leaves the file as it was */
  if (rc && !res->created && ftruncate(fd, (off_t)res->old_size) == 0) fsync(fd);
  if (rc && res->created) unlinkat(dirfd, name, 0);
  close(fd);
  return rc;
}

int bw_append(const bw_root *r, const char *rel, const void *data, size_t len,
              int create_dirs, size_t max_bytes, bw_append_res *res) {
  memset(res, 0, sizeof *res);
  if (r->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  size_t max = max_bytes ? max_bytes : (size_t)1 << 40;
  char name[BW_NAME_MAX + 1];
  int dirfd, trailing;
  int rc = bw_parent_of(r, rel, &dirfd, name, &trailing, NULL);
  if (rc == BW_INVALID_ARGUMENT) { /* ".", "dir/..": a directory */
    int fd;
    struct stat st;
    if (bw_resolve(r, rel, 0, &fd, &st) != BW_OK) return rc;
    close(fd);
    return bw_fail(BW_EISDIR, NULL);
  }
  if (rc == BW_ENOENT && create_dirs) {
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
  if (trailing) { /* "name/": what is there decides, as for write_file */
    close(dirfd);
    int fd;
    struct stat st;
    rc = bw_resolve(r, rel, 0, &fd, &st);
    if (rc == BW_OK) close(fd);
    return rc == BW_OK || rc == BW_ENOENT ? bw_fail(BW_EISDIR, NULL) : rc;
  }
  /* the write lock: an edit's read-edit-replace must not swallow an
     append made between its read and its rename; and the tree lock's
     chain: it lands where its judged path leads, never in a tree being
     judged */
  bw_dir_lock lk = BW_DIR_UNLOCKED;
  char sub[BW_PATH_MAX + 1];
  rc = bw_parent_path(rel, sub) ? bw_fail(BW_INVALID_ARGUMENT, "name too long")
                                : bw_lock_write(r, sub, dirfd, 0, &lk);
  if (!rc) rc = append_to(r, rel, dirfd, name, data, len, max, res);
  bw_unlock_dir(&lk);
  close(dirfd);
  return rc;
}
