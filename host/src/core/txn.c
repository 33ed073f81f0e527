/*
 * txn.c - a change of several files as one (txn.h).
 *
 * The caller has judged every file and computed every new content. Here:
 * each target's directory is resolved (missing parents of a new file made
 * first, when asked); every directory involved is held at once with its
 * chain (write.c's lock set), so no burrow writer and no subtree move gets
 * between the checks and the renames; the cancel flag is asked; every
 * target is checked again (a regular file with one link, or absent) and
 * its hash compared with the one judged; each new content is written to a
 * staged name beside its target (".burrow-stage.e.<pid>.<hex>": the
 * resolver refuses such names and walks skip them, so no agent reaches
 * one) and synced. Only then the commit: one rename each (an exchange
 * with the old file where there is one, so the old file waits under the
 * staged name; a removal renames the file aside). A rename that fails
 * puts the ones done back, newest first; a failed directory fsync puts
 * all back. Then the staged names, which now hold the old contents, are
 * unlinked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "txn.h"

/* The shallowest missing directory of parent ("a/b/"), into out. */
static void first_missing(const bw_root *r, const char *parent, char *out) {
  char p[BW_PATH_MAX + 1];
  out[0] = '\0';
  for (size_t i = 0; parent[i]; i++) {
    if (parent[i] != '/' || i == 0) continue;
    memcpy(p, parent, i);
    p[i] = '\0';
    int fd;
    struct stat st;
    int rc = bw_resolve(r, p, 0, &fd, &st);
    if (rc == BW_OK) close(fd);
    if (rc == BW_ENOENT) {
      memcpy(out, p, i + 1);
      return;
    }
  }
}

/* Take away the directories a new file's parent needed (empty ones only:
 * rmdir refuses the rest), deepest first, up to f->made. */
static void unmake(bw_txn_file *f) {
  char path[BW_PATH_MAX + 1], name[BW_NAME_MAX + 1];
  if (!f->made[0] || bw_parent_path(f->rel, path)) return;
  for (;;) {
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/') path[--n] = '\0';
    if (n == 0) return;
    int fd, trailing;
    if (bw_resolve_parent(f->r, path, &fd, name, &trailing)) return;
    unlinkat(fd, name, AT_REMOVEDIR);
    close(fd);
    if (!strcmp(path, f->made)) return;
    while (n > 0 && path[n - 1] != '/') path[--n] = '\0';
  }
}

/* The directory f lands in, open as f->dirfd, and its final name. */
static int open_parent(bw_txn_file *f) {
  if (f->r->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  if (!f->expected) return bw_fail(BW_INVALID_ARGUMENT, "a change of files needs each file's hash");
  int trailing = 0;
  int rc = bw_resolve_parent(f->r, f->rel, &f->dirfd, f->name, &trailing);
  if (rc == BW_ENOENT && f->data && f->create_dirs) {
    char parent[BW_PATH_MAX + 1];
    if (bw_parent_path(f->rel, parent)) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
    first_missing(f->r, parent, f->made);
    rc = bw_mkdirs_held(f->r, parent); /* made durable one by one */
    if (rc) f->made[0] = '\0';         /* it took its own away */
    else rc = bw_resolve_parent(f->r, f->rel, &f->dirfd, f->name, &trailing);
  }
  if (rc) f->dirfd = -1;
  if (!rc && trailing) rc = bw_fail(BW_EISDIR, NULL);
  return rc;
}

/* Two entries naming one place (a path given twice, or spelled two ways). */
static int same_place(const bw_txn_file *a, const bw_txn_file *b) {
  struct stat x, y;
  return !strcmp(a->name, b->name) && fstat(a->dirfd, &x) == 0 &&
         fstat(b->dirfd, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The new content written and synced under a staged name beside it. */
static int stage_one(bw_txn_file *f) {
  int fd = -1;
  for (int i = 0; i < 8 && fd < 0; i++) {
    bw_stage_newname(f->stage, BW_STAGE_FILES);
    fd = openat(f->dirfd, f->stage, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) {
      f->stage[0] = '\0';
      return bw_code_from_errno(errno);
    }
  }
  if (fd < 0) {
    f->stage[0] = '\0';
    return bw_fail(BW_EIO, "could not create a staged file");
  }
  f->staged = 1;
  int rc = bw_write_all(fd, f->data, f->len);
  if (!rc) rc = bw_write_meta(fd, &f->st, f->exists);
  if (!rc && fsync(fd) < 0) {
    int e = errno;
    rc = e == ENOSPC || e == EDQUOT ? bw_code_from_errno(e) : bw_fail(BW_EIO, "fsync failed; nothing was changed");
  }
  close(fd);
  return rc;
}

static const struct stat A_FILE = {.st_mode = S_IFREG};

/* One file put in place (or, a removal, renamed aside). */
static int swap_in(bw_txn_file *f) {
  int rc = BW_OK;
  if (!f->data) {
    rc = bw_rename_noreplace(f->dirfd, f->name, f->dirfd, f->stage, &A_FILE);
  } else if (!f->exists) {
    rc = bw_rename_noreplace(f->dirfd, f->stage, f->dirfd, f->name, &A_FILE);
  } else if (renameat2(f->dirfd, f->stage, f->dirfd, f->name, RENAME_EXCHANGE) == 0) {
    struct stat old;
    f->swapped = 1; /* the old file waits under the staged name */
    if (fstatat(f->dirfd, f->stage, &old, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(old.st_mode)) {
      /* not the file checked (a program outside burrow swapped it): back */
      renameat2(f->dirfd, f->stage, f->dirfd, f->name, RENAME_EXCHANGE);
      f->swapped = 0;
      rc = bw_fail(BW_EAGAIN, "the file changed during the change; retry");
    }
  } else if (errno != EINVAL) {
    rc = bw_mut_errno(errno);
  } else { /* no exchange here: keep the old file by a second name */
    bw_stage_newname(f->keep, BW_STAGE_FILES);
    if (linkat(f->dirfd, f->name, f->dirfd, f->keep, 0) < 0) {
      f->keep[0] = '\0';
      rc = bw_mut_errno(errno);
    } else if (renameat(f->dirfd, f->stage, f->dirfd, f->name) < 0) {
      rc = bw_mut_errno(errno);
    }
  }
  f->done = rc == BW_OK;
  return rc;
}

/* One file as it was: 0, or -1 when it could not be put back. Plain
 * renames where they serve (the lock is held: nothing else lands here
 * meanwhile), so a filesystem refusing exchanges now does not keep the
 * old file out. */
static int put_back(bw_txn_file *f) {
  int ok;
  if (!f->done) return 0;
  if (!f->data) { /* the removed file back under its name */
    ok = bw_rename_noreplace(f->dirfd, f->stage, f->dirfd, f->name, &A_FILE) == BW_OK ||
         (linkat(f->dirfd, f->stage, f->dirfd, f->name, 0) == 0 && unlinkat(f->dirfd, f->stage, 0) == 0);
  } else if (f->exists) { /* the old file over the new one */
    ok = renameat(f->dirfd, f->swapped ? f->stage : f->keep, f->dirfd, f->name) == 0;
  } else { /* the new file taken away */
    ok = renameat(f->dirfd, f->name, f->dirfd, f->stage) == 0 || unlinkat(f->dirfd, f->name, 0) == 0;
  }
  f->done = f->swapped = 0;
  return ok ? 0 : -1;
}

static int put_all_back(bw_txn_file *f, size_t k) {
  int lost = 0;
  for (size_t i = k; i-- > 0;) lost += put_back(&f[i]) < 0;
  return lost;
}

/* The commit: every file is staged and checked, every lock held. From
 * here on, one rename each.
 *
 * INTENT RECORD: this is where a crash can leave some files renamed and
 * others not. Write the intent record (stage.c) here, before the first
 * swap_in: for each f, (f->dirfd's in-root path, f->name, f->stage,
 * f->keep, whether it exists / is removed, f->expected and the new hash),
 * fsynced; mark it done (or drop it) after the loop below succeeds and the
 * directories are synced, and after put_all_back when it fails. At start,
 * a record found says: roll forward (every f->stage still holding a new
 * content goes in) or back (every target whose hash is the new one gets
 * its f->stage / f->keep back), so a crash leaves all or none. */
static int put_in_place(bw_txn_file *f, size_t n, size_t *failed) {
  for (size_t i = 0; i < n; i++) {
    int rc = swap_in(&f[i]);
    if (rc) {
      bw_err_saved e;
      bw_err_save(&e);
      int lost = put_all_back(f, i);
      *failed = i;
      if (lost) return bw_fail(BW_EIO, "a rename failed and some of the files already changed could not be put back");
      bw_err_restore(rc, &e);
      return rc;
    }
  }
  return BW_OK;
}

/* Every directory the change touched, synced; on failure all put back. */
static int sync_all(bw_txn_file *f, size_t n, const bw_lock_set *ls) {
  for (size_t i = 0; i < n; i++) {
    int fd = bw_lock_many_fd(ls, f[i].dirfd);
    if (fd >= 0 && fsync(fd) == 0) continue;
    int lost = put_all_back(f, n);
    for (size_t j = 0; j < n; j++) {
      int d = bw_lock_many_fd(ls, f[j].dirfd);
      if (d >= 0) fsync(d);
    }
    return bw_fail(BW_EIO, lost ? "the directory fsync failed and some files could not be put back"
                                : "the directory fsync failed; nothing was changed");
  }
  return BW_OK;
}

/* Under the locks: the checks, the stage, the commit. */
static int commit_held(bw_txn_file *f, size_t n, const bw_txn_opts *o,
                       const bw_lock_set *ls, size_t *failed) {
  int rc = bw_stopped(o->stop); /* a cancel before the commit changes nothing */
  if (rc) return rc;
  size_t max = o->max_compare ? o->max_compare : (size_t)1 << 40;
  for (size_t i = 0; i < n; i++) {
    *failed = i;
    rc = bw_write_check(f[i].dirfd, f[i].name, f[i].expected, max, &f[i].st, &f[i].exists, f[i].current);
    if (!rc && !f[i].data && !f[i].exists) rc = bw_fail(BW_ENOENT, NULL);
    if (!rc && f[i].data) rc = bw_sha256(f[i].data, f[i].len, f[i].hash);
    if (!rc && f[i].data) rc = stage_one(&f[i]);
    else if (!rc) bw_stage_newname(f[i].stage, BW_STAGE_FILES);
    if (rc) return rc;
  }
  *failed = n;
  if ((rc = bw_stopped(o->stop))) return rc;
  if ((rc = put_in_place(f, n, failed))) return rc;
  return sync_all(f, n, ls);
}

int bw_txn_commit(bw_txn_file *f, size_t n, const bw_txn_opts *o,
                  size_t *failed) {
  *failed = n;
  for (size_t i = 0; i < n; i++) {
    f[i].dirfd = -1;
    f[i].stage[0] = f[i].keep[0] = f[i].made[0] = '\0';
    f[i].exists = f[i].staged = f[i].done = f[i].swapped = f[i].created = 0;
    f[i].hash[0] = f[i].current[0] = '\0';
  }
  int rc = bw_stopped(o->stop);
  for (size_t i = 0; !rc && i < n; i++) {
    *failed = i;
    rc = open_parent(&f[i]);
    for (size_t j = 0; !rc && j < i; j++)
      if (same_place(&f[j], &f[i])) rc = bw_fail(BW_INVALID_ARGUMENT, "the same file is named twice in one change");
  }
  const bw_root **rs = rc ? NULL : malloc((n ? n : 1) * sizeof *rs);
  int *dirs = rc ? NULL : malloc((n ? n : 1) * sizeof *dirs);
  const char **rels = rc ? NULL : malloc((n ? n : 1) * sizeof *rels);
  if (!rc && (!rs || !dirs || !rels)) rc = BW_ENOMEM;
  bw_lock_set ls = {0};
  for (size_t i = 0; !rc && i < n; i++) {
    rs[i] = f[i].r;
    rels[i] = f[i].rel;
    dirs[i] = f[i].dirfd;
  }
  if (!rc && (rc = bw_lock_many(rs, rels, dirs, n, o->lock_wait_ms, &ls))) *failed = n;
  if (!rc) rc = commit_held(f, n, o, &ls, failed);
  bw_err_saved e;
  bw_err_save(&e);
  for (size_t i = 0; i < n; i++) { /* the old contents, or the unused new ones */
    if (f[i].dirfd >= 0 && f[i].stage[0]) unlinkat(f[i].dirfd, f[i].stage, 0);
    if (f[i].dirfd >= 0 && f[i].keep[0]) unlinkat(f[i].dirfd, f[i].keep, 0);
  }
  bw_unlock_many(&ls);
  for (size_t i = n; rc && i-- > 0;) unmake(&f[i]); /* a later file's folders may sit in an earlier one's */
  for (size_t i = 0; i < n; i++) {
    if (f[i].dirfd >= 0) close(f[i].dirfd);
    f[i].dirfd = -1;
    f[i].created = !rc && f[i].data && !f[i].exists;
    if (!rc && !f[i].data) strcpy(f[i].hash, "absent");
  }
  free(rs);
  free(rels);
  free(dirs);
  return bw_err_restore(rc, &e);
}
