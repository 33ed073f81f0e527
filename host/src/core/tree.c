/*
 * tree.c - what the mutations (mutate.c), the stager (stage.c) and the
 * atomic write (write.c) share about names and trees: a mutation's errno
 * as a code, the same-mount test, a directory's fsync, the parent and
 * final name of a mutation's object, rename without replacing, a tree's
 * removal by fds, and the sweep of copy stages of dead processes. Below
 * all three, so none of them calls up (host/test/arrows.lua checks for
 * cycles inside a layer). Trees are walked by fds opened with
 * O_NOFOLLOW|O_DIRECTORY from their parent's fd, so a directory swapped
 * for a symlink mid-walk is never followed (the Rust remove_dir_all race,
 * CVE-2022-21658), and a walk never enters another mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage.h"

enum { MAX_DEPTH = 4096 };

/* errno of a mutation to a code: the kernel's EINVAL, EBUSY and EXDEV
 * mean more here than bw_code_from_errno can say. */
int bw_mut_errno(int e) {
  switch (e) {
  case EINVAL:
    return bw_fail(BW_INVALID_ARGUMENT, "cannot move a directory into itself");
  case EBUSY:
    return bw_fail(BW_INVALID_ARGUMENT, "it is a mount point or in use");
  case EXDEV:
    return bw_fail(BW_INVALID_ARGUMENT,
                   "cannot move across filesystems; copy, then remove");
  case ENOTEMPTY:
    return bw_fail(BW_EEXIST, "the directory is not empty");
  default:
    return bw_code_from_errno(e);
  }
}

/* Is st on the root's own mount (not a mount point inside it)? */
int bw_same_mount(const bw_root *r, int dirfd, const char *name,
                  const struct stat *st) {
  if (st->st_dev != r->dev) return 0;
  struct statx sx;
  int flags = AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH);
  if (!r->mnt_id || statx(dirfd, name, flags, STATX_MNT_ID, &sx)) return 1;
  return !(sx.stx_mask & STATX_MNT_ID) || sx.stx_mnt_id == r->mnt_id;
}

int bw_sync_dir(int dirfd) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return bw_code_from_errno(errno);
  int rc = fsync(fd) < 0 ? bw_fail(BW_EIO, "the directory fsync failed") : BW_OK;
  close(fd);
  return rc;
}

/* A path naming the root, "." or ".." cannot be the object of a
 * mutation; what resolving it says decides the answer. */
int bw_parent_of(const bw_root *r, const char *rel, int *dirfd,
                 char name[BW_NAME_MAX + 1], int *trailing, const char *why) {
  int rc = bw_resolve_parent(r, rel, dirfd, name, trailing);
  if (rc != BW_INVALID_ARGUMENT || !why) return rc;
  int fd;
  struct stat st;
  int rrc = bw_resolve(r, rel, 0, &fd, &st);
  if (rrc == BW_OK) close(fd);
  if (rrc == BW_OK || rrc == BW_ENOENT) return bw_fail(BW_INVALID_ARGUMENT, why);
  return rrc; /* "file/.." is ENOTDIR, "esc/.." OUTSIDE_ROOT */
}

/* ---- a tree's removal ---- */

typedef struct remover {
  const bw_root *r;
  bw_remove_res *res;
  size_t mounts;       /* mount points met and left in place */
  const bw_stop *stop; /* cancel and deadline, asked at every entry */
} remover;

static int remove_tree(remover *rm, int parent, const char *name, int depth);

/* Remove one entry of the directory open at fd, as it is now. */
static int remove_entry(remover *rm, int fd, const char *name, int depth) {
  int rc = bw_stopped(rm->stop);
  if (rc) return rc;
  for (int tries = 0; tries < 4; tries++) {
    struct stat st;
    if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      return errno == ENOENT ? BW_OK : bw_code_from_errno(errno);
    if (!bw_same_mount(rm->r, fd, name, &st)) {
      rm->mounts++;
      return BW_OK;
    }
    if (S_ISDIR(st.st_mode)) return remove_tree(rm, fd, name, depth + 1);
    if (unlinkat(fd, name, 0) == 0) {
      rm->res->files++;
      return BW_OK;
    }
    if (errno == ENOENT) return BW_OK;
    if (errno != EISDIR) return bw_code_from_errno(errno);
    /* it became a directory since the fstatat: look again */
  }
  return bw_fail(BW_EAGAIN, "the tree kept changing during the removal");
}

/* Empty the directory (parent, name) through an fd of its own, then
 * remove it. A name that is no longer a directory is unlinked as it is. */
static int remove_tree(remover *rm, int parent, const char *name, int depth) {
  if (depth > MAX_DEPTH) return bw_fail(BW_INVALID_ARGUMENT, "the tree is too deep");
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) { /* swapped for a link */
    if (unlinkat(parent, name, 0) == 0) rm->res->files++;
    else if (errno != ENOENT)
      return bw_fail(BW_EAGAIN, "the tree kept changing during the removal");
    return BW_OK;
  }
  if (fd < 0) return errno == ENOENT ? BW_OK : bw_code_from_errno(errno);
  struct stat st;
  if (fstat(fd, &st) < 0 || !bw_same_mount(rm->r, fd, "", &st)) {
    close(fd);
    rm->mounts++;
    return BW_OK;
  }
  char **names = NULL;
  size_t n = 0;
  int rc = bw_read_names(fd, BW_NAMES_HIDDEN, &names, &n);
  for (size_t i = 0; !rc && i < n; i++) rc = remove_entry(rm, fd, names[i], depth);
  bw_free_names(names, n);
  close(fd);
  if (rc) return rc;
  if (unlinkat(parent, name, AT_REMOVEDIR) == 0) {
    rm->res->dirs++;
    return BW_OK;
  }
  if (errno == ENOENT) return BW_OK;
  if (errno == ENOTEMPTY && rm->mounts)
    return bw_fail(BW_INVALID_ARGUMENT,
                   "the tree holds a mount point; it was left in place");
  if (errno == ENOTEMPTY || errno == ENOTDIR) /* swapped since it was emptied */
    return bw_fail(BW_EAGAIN, "the tree changed during the removal; retry");
  return bw_code_from_errno(errno);
}

int bw_remove_tree(const bw_root *r, int parent, const char *name,
                   const bw_stop *stop, bw_remove_res *res) {
  remover rm = {.r = r, .res = res, .stop = stop};
  return remove_tree(&rm, parent, name, 0);
}

/* ---- rename ---- */

int bw_rename_noreplace(int sdir, const char *sname, int ddir,
                        const char *dname, const struct stat *st) {
  if (renameat2(sdir, sname, ddir, dname, RENAME_NOREPLACE) == 0) return BW_OK;
  if (errno != EINVAL || S_ISDIR(st->st_mode)) return bw_mut_errno(errno);
  /* a filesystem without RENAME_NOREPLACE: link, then unlink (files) */
  if (linkat(sdir, sname, ddir, dname, 0) < 0) return bw_mut_errno(errno);
  if (unlinkat(sdir, sname, 0) < 0) {
    int e = errno;
    unlinkat(ddir, dname, 0); /* not moved: not at both names either */
    return bw_code_from_errno(e);
  }
  return BW_OK;
}

/* ---- stale stages ---- */

void bw_stage_sweep(int dirfd, const char *name) {
  /* only a copy's stage is safe to drop: it holds nothing but the copy
   * (bw_sweep_temps settles the records there first: a merge a record
   * says to finish is finished, not dropped). A change of files' staged
   * names (txn.c, 'e') are never swept here: each is listed in an intent
   * record in its root's folder from before it is made, and that record
   * drops it or puts it in place (a sweep here could drop a new content
   * a committed record still has to put in place) */
  size_t pl = sizeof BW_STAGE_PREFIX - 1;
  if (!bw_stage_name(name) || name[pl] != 'c' || name[pl + 1] != '.') return;
  char *end;
  long pid = strtol(name + pl + 2, &end, 10);
  if (*end != '.' || pid <= 0 || pid == (long)getpid()) return;
  if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) return; /* alive */
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return;
  if (!S_ISDIR(st.st_mode)) return;
  bw_root r = {.dev = st.st_dev};
  bw_remove_res res;
  memset(&res, 0, sizeof res);
  bw_remove_tree(&r, dirfd, name, NULL, &res);
}
