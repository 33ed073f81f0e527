/*
 * stage.c - subtree copy, move and remove, staged (stage.h): what lands
 * is exactly what was judged, and a refusal or a cancel leaves source and
 * destination as they were.
 *
 *  copy    the tree is copied into a staged directory beside the
 *          destination: files by reflink where the filesystem has them,
 *          else copy_file_range, else read/write; no fsync per file. The
 *          commit syncs the filesystem once and renames the staged
 *          directory to the destination (RENAME_NOREPLACE).
 *  move    the source is renamed to a staged name in its own directory;
 *          the commit renames it to the destination. Across filesystems
 *          the renamed source is copied into a stage beside the
 *          destination as a copy is, and removed once that is in place.
 *  remove  a directory is renamed to a staged name in its own directory;
 *          the commit unlinks the staged tree.
 *
 * The entries are listed while staging (a copy lists what it made), so
 * the judgement sees the staged tree itself; a move's or a remove's source
 * is held by the tree lock (write.c) from before it is renamed aside to the
 * end, so no change under way lands in it after the list is made, and a
 * commit holds its destination's chain, so it lands where it was judged.
 * Trees are walked by fds opened with O_NOFOLLOW from their parent's fd;
 * mounts are never entered (the walk, listing and copying: stagetree.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stagetree.h"

static const char KIND_LETTER[] = {0, 'c', 'm', 'r', 'e', 'g'};

static void stage_name(char out[BW_STAGE_NAME], int kind) {
  unsigned long long rnd = 0;
  if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd)
    rnd = (unsigned long long)(uintptr_t)out ^ ((unsigned long long)getpid() << 20) ^
          (unsigned long long)bw_now_ms();
  snprintf(out, BW_STAGE_NAME, "%s%c.%ld.%016llx", BW_STAGE_PREFIX,
           KIND_LETTER[kind], (long)getpid(), rnd);
}

void bw_stage_newname(char out[BW_STAGE_NAME], int kind) { stage_name(out, kind); }

void bw_stage_init(bw_stage *s, int overwrite, size_t max_bytes,
                   size_t max_entries, const bw_stop *stop) {
  memset(s, 0, sizeof *s);
  s->home = s->from = s->to = s->lock = s->to_top.fd = -1;
  s->intent = s->intent_to = BW_INTENT_NONE;
  s->overwrite = overwrite;
  s->max_bytes = max_bytes;
  s->max_entries = max_entries ? max_entries : 100000;
  if (stop) s->stop = *stop;
}

const char *bw_stage_path(const bw_stage *s, size_t i) {
  return i < s->n ? s->paths + s->v[i].off : NULL;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

void bw_stage_free(bw_stage *s) {
  if (s->state == BW_STAGE_PENDING) bw_stage_abort(s);
  bw_intent_release(&s->intent); /* not settled: left for recovery */
  bw_intent_release(&s->intent_to);
  close_fd(&s->lock);
  close_fd(&s->to_top.fd);
  close_fd(&s->home);
  close_fd(&s->from);
  close_fd(&s->to);
  free(s->v);
  free(s->paths);
  s->v = NULL;
  s->paths = NULL;
  s->n = s->cap = s->plen = s->pcap = 0;
}

/* Remove the staged tree home/name, whatever is in it (a staged name of
 * ours: no agent reached it). */
static int unlink_stage(int home, const char *name, uint64_t dev, uint64_t mnt) {
  bw_root r = {.dev = (dev_t)dev, .mnt_id = mnt};
  bw_remove_res res;
  struct stat st;
  if (fstatat(home, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? BW_OK : bw_code_from_errno(errno);
  if (!S_ISDIR(st.st_mode))
    return unlinkat(home, name, 0) == 0 || errno == ENOENT ? BW_OK : bw_code_from_errno(errno);
  memset(&res, 0, sizeof res);
  return bw_remove_tree(&r, home, name, NULL, &res);
}

/* syncfs(2) of the filesystem holding dirfd/name (dirfd may be O_PATH). */
static int sync_fs(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = syncfs(fd);
  close(fd);
  return rc;
}

static uint64_t dev_of(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? (uint64_t)st.st_dev : 0;
}

static uint64_t mnt_of(int dirfd, const char *name) {
  struct statx sx;
  int flags = AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH);
  if (statx(dirfd, name, flags, STATX_MNT_ID, &sx) || !(sx.stx_mask & STATX_MNT_ID)) return 0;
  return sx.stx_mnt_id;
}

/* ---- intent records (intent.c) ---- */

/* The root fd the directory of rel is in (a write view's top; a plain
 * root is its own) and that directory's in-root path in at, for the
 * record's pointer; -1 when unknown (the record then waits for its
 * directory's next staged operation). */
int bw_stage_where(const bw_root *r, const char *rel, char at[BW_PATH_MAX + 1]) {
  char sub[BW_PATH_MAX + 1];
  if (bw_parent_path(rel, sub)) return -1;
  if (r->at) return bw_chain_path(r, sub, at) ? -1 : r->top_fd;
  if (r->anchored) return -1;
  memcpy(at, sub, strlen(sub) + 1);
  return r->fd;
}

/* Before a staged operation: what crashed ones left in dir, and in the
 * journal of the root top is. */
static void recover_before(const bw_root *r, int top, int dir) {
  bw_root root = {.fd = top, .dev = r->dev, .ino = r->ino, .mnt_id = r->mnt_id,
                  .backend = r->backend};
  bw_settle(dir, top < 0 ? NULL : &root); /* recover.c, above: through write.c's hook */
}

/* The record of s beside its stage in dir (names: as stage.h lists). */
static int intent_begin(bw_intent *it, int top, const char *at, int dir, char op,
                        const char *n0, const char *n1, const char *n2) {
  const char *names[3] = {n0, n1, n2};
  return bw_intent_begin(it, top, at, dir, op, names, n2 ? 3 : 2);
}

/* ---- the tree lock ---- */

/* Where the destination's directory is, for the commit's chain: set when
 * rd is a write view (a judged destination); else the commit holds none. */
static int guard_to(bw_stage *s, const bw_root *rd, const char *dst) {
  char sub[BW_PATH_MAX + 1];
  if (!rd->at) return BW_OK;
  if (bw_parent_path(dst, sub)) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
  int rc = bw_chain_path(rd, sub, s->to_at);
  if (rc) return rc;
  s->to_top = (bw_root){.fd = fcntl(rd->top_fd, F_DUPFD_CLOEXEC, 0), .dev = rd->dev,
                        .ino = rd->ino, .mnt_id = rd->mnt_id};
  return s->to_top.fd < 0 ? bw_code_from_errno(errno) : BW_OK;
}

/* Is the destination's directory the source directory src or inside it?
 * (Both judged views of one root: their in-root paths say.) */
static int into_itself(const bw_root *rs, const char *src, const bw_stage *s) {
  char path[BW_PATH_MAX + 1], plain[BW_PATH_MAX + 1];
  size_t n = strlen(src);
  while (n > 1 && src[n - 1] == '/') n--;
  if (!rs->at || s->to_top.fd < 0 || rs->dev != s->to_top.dev || rs->ino != s->to_top.ino ||
      n > BW_PATH_MAX)
    return 0;
  memcpy(plain, src, n);
  plain[n] = '\0';
  if (bw_chain_path(rs, plain, path)) return 0;
  size_t pl = strlen(path);
  return !strncmp(s->to_at, path, pl) && (s->to_at[pl] == '\0' || s->to_at[pl] == '/');
}

/* Hold the destination's chain through the commit's renames: the judged
 * path must still reach s->to, and nothing above it may move meanwhile. */
static int hold_to(bw_stage *s, bw_chain *c) {
  memset(c, 0, sizeof *c);
  if (s->to_top.fd < 0) return BW_OK;
  return bw_chain_hold(&s->to_top, s->to_at, 1, s->to, 0, c);
}

/* ---- copy ---- */

/* Make the stage directory in to and copy the tree of the directory src
 * (an fd open for reading) into it. */
static int copy_into_stage(bw_stage *s, int src, const struct stat *sst) {
  stage_name(s->name, BW_STAGE_COPY);
  int rc = intent_begin(&s->intent_to, s->to_top.fd, s->to_at, s->to, 'c', s->name, s->to_name, NULL);
  if (rc) return rc;
  if (mkdirat(s->to, s->name, (sst->st_mode & 0777) | 0700) < 0) return bw_code_from_errno(errno);
  s->home = fcntl(s->to, F_DUPFD_CLOEXEC, 0);
  int dst = s->home < 0 ? -1 : bws_open_dir_at(s->to, s->name);
  rc = dst < 0 ? bw_code_from_errno(errno) : BW_OK;
  s->state = BW_STAGE_PENDING; /* from here an abort removes it */
  s->is_dir = 1;
  if (!s->merge) s->dirs++; /* the top, made (a merge takes the one there) */
  if (!rc) rc = bws_walk_tree(s, src, dst, sst->st_dev, mnt_of(src, ""), 1);
  if (dst >= 0) close(dst);
  return rc;
}

int bw_stage_copy(const bw_root *rs, const char *src, const bw_root *rd,
                  const char *dst, int recursive, bw_stage *s) {
  s->kind = BW_STAGE_COPY;
  if (rd->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  struct stat st;
  int fd, rc = bw_resolve(rs, src, 0, &fd, &st); /* in-root links are followed */
  if (rc) return rc;
  if (!S_ISDIR(st.st_mode) || !recursive) { /* one file: the durable write */
    close(fd);
    bw_copy_opts o = {.overwrite = s->overwrite, .recursive = recursive,
                      .max_bytes = s->max_bytes, .stop = &s->stop};
    bw_copy_res res;
    rc = bw_copy_file(rs, src, rd, dst, &o, &res);
    if (rc) return rc;
    s->files = res.files;
    s->bytes = res.bytes;
    memcpy(s->hash, res.hash, sizeof s->hash);
    s->state = BW_STAGE_DONE;
    return BW_OK;
  }
  int dir = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  close(fd);
  if (dir < 0) return bw_code_from_errno(errno);
  int trailing;
  rc = bw_resolve_parent(rd, dst, &s->to, s->to_name, &trailing);
  if (!rc) rc = guard_to(s, rd, dst);
  struct stat dt;
  if (!rc && fstatat(s->to, s->to_name, &dt, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!s->overwrite) rc = bw_fail(BW_EEXIST, "the destination exists; pass overwrite=true");
    else if (!S_ISDIR(dt.st_mode)) rc = bw_fail(BW_EEXIST, "the destination exists and is not a directory");
    else s->merge = 1;
  } else if (!rc && errno != ENOENT) {
    rc = bw_code_from_errno(errno);
  }
  if (!rc) recover_before(rd, s->to_top.fd, s->to); /* what a crash left here */
  if (!rc) bw_sweep_temps(s->to); /* and the stages of copies cut short by a crash */
  if (!rc) rc = copy_into_stage(s, dir, &st);
  close(dir);
  return rc;
}

/* Merge the staged copy's directory from into the existing dst. With
 * apply, an entry dst lacks is renamed in (one rename), a file replaces a
 * file, a directory both have is merged into; without, only what the
 * merge refuses is looked for: the check before any rename, so a refused
 * merge changes nothing. */
static int merge(int from, int dst, int depth, int apply, const bw_root *top) {
  if (depth > MAX_DEPTH) return bw_fail(BW_INVALID_ARGUMENT, "the tree is too deep");
  char **names = NULL;
  size_t n = 0;
  int rc = bw_read_names(from, BW_NAMES_HIDDEN, &names, &n);
  for (size_t i = 0; !rc && i < n; i++) {
    struct stat st, dt;
    const char *name = names[i];
    if (apply && renameat2(from, name, dst, name, RENAME_NOREPLACE) == 0) continue;
    if (apply && errno != EEXIST) {
      rc = bw_mut_errno(errno);
    } else if (fstatat(dst, name, &dt, AT_SYMLINK_NOFOLLOW) < 0) {
      if (apply || errno != ENOENT) rc = bw_code_from_errno(errno);
    } else if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      rc = bw_code_from_errno(errno);
    } else if (S_ISDIR(st.st_mode) && S_ISDIR(dt.st_mode)) {
      int a = bws_open_dir_at(from, name), b = bws_open_dir_at(dst, name);
      bw_chain c = {0};
      rc = a < 0 || b < 0 ? bw_code_from_errno(errno) : BW_OK;
      if (!rc && apply && top) { /* entries land in b: held as a change's chain is */
        bw_root here = {.fd = dst, .dev = top->dev, .mnt_id = top->mnt_id};
        rc = bw_chain_hold(&here, name, 1, b, 0, &c);
      }
      if (!rc) rc = merge(a, b, depth + 1, apply, top);
      bw_chain_release(&c);
      if (a >= 0) close(a);
      if (b >= 0) close(b);
    } else if (S_ISDIR(st.st_mode)) {
      rc = bw_fail(BW_EEXIST, "a directory of the copy meets a file there");
    } else if (S_ISDIR(dt.st_mode)) {
      rc = bw_fail(BW_EISDIR, "a file of the copy meets a directory there");
    } else if (S_ISLNK(dt.st_mode)) {
      rc = bw_fail(BW_POLICY_DENIED, "a symlink is there; replacing links is refused");
    } else if (apply && renameat(from, name, dst, name) < 0) {
      rc = bw_mut_errno(errno);
    }
  }
  bw_free_names(names, n);
  return rc;
}

static int commit_copy_held(bw_stage *s);

static int commit_copy(bw_stage *s) {
  int rc = sync_fs(s->home, s->name) < 0 ? bw_fail(BW_EIO, "syncing the copy failed; nothing was put in place") : BW_OK;
  if (rc) return rc;
  bw_chain c;
  if ((rc = hold_to(s, &c))) return rc;
  rc = commit_copy_held(s);
  bw_chain_release(&c);
  return rc;
}

static int commit_copy_held(bw_stage *s) {
  int rc = BW_OK;
  if (!s->merge) {
    if (renameat2(s->home, s->name, s->to, s->to_name, RENAME_NOREPLACE) == 0) {
      s->state = BW_STAGE_DONE;
      if (bw_sync_dir(s->to))
        return bw_fail_on(BW_EIO, BW_ON_SYNC, 0, "copied, but the directory fsync failed: the copy may not survive a crash");
      return BW_OK;
    }
    if (errno != EEXIST) return bw_mut_errno(errno);
    struct stat dt; /* made meanwhile */
    if (!s->overwrite) return bw_fail(BW_EEXIST, "the destination exists; pass overwrite=true");
    if (fstatat(s->to, s->to_name, &dt, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(dt.st_mode))
      return bw_fail(BW_EEXIST, "the destination exists and is not a directory");
  }
  int from = bws_open_dir_at(s->home, s->name), dst = bws_open_dir_at(s->to, s->to_name);
  bw_chain c = {0};
  const bw_root *top = s->to_top.fd >= 0 ? &s->to_top : NULL;
  if (from < 0 || dst < 0) rc = bw_code_from_errno(errno);
  if (!rc && top) { /* the destination, held through the merge (to's chain is) */
    bw_root here = {.fd = s->to, .dev = top->dev, .mnt_id = top->mnt_id};
    rc = bw_chain_hold(&here, s->to_name, 1, dst, 0, &c);
  }
  if (!rc) rc = merge(from, dst, 0, 0, top);
  if (!rc && bw_intent_commit(&s->intent_to)) /* a crash from here finishes the merge */
    rc = bw_fail(BW_EIO, "the intent record could not be written; nothing was copied");
  if (!rc) {
    rc = merge(from, dst, 0, 1, top);
    /* entries may have moved: from here what is left is removed, not put back */
    if (rc) rc = bw_fail(rc, "the merge stopped part-way: the destination holds part of the copy");
    else s->state = BW_STAGE_DONE;
    unlink_stage(s->home, s->name, dev_of(s->home), 0);
    if (!rc && syncfs(dst) < 0)
      rc = bw_fail(BW_EIO, "copied, but the sync failed: the copy may not survive a crash");
  }
  bw_chain_release(&c);
  if (from >= 0) close(from);
  if (dst >= 0) close(dst);
  return rc;
}

/* ---- move ---- */

int bw_stage_move(const bw_root *rs, const char *src, const bw_root *rd,
                  const char *dst, bw_stage *s) {
  s->kind = BW_STAGE_MOVE;
  if (rs->readonly || rd->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  int strail, dtrail;
  int rc = bw_parent_of(rs, src, &s->from, s->from_name, &strail,
                        "the root itself, \".\" and \"..\" cannot be moved");
  if (rc) return rc;
  rc = bw_parent_of(rd, dst, &s->to, s->to_name, &dtrail,
                    "the destination cannot be a root, \".\" or \"..\"");
  if (!rc) rc = guard_to(s, rd, dst);
  if (rc) return rc;
  char from_at[BW_PATH_MAX + 1];
  int from_top = bw_stage_where(rs, src, from_at);
  recover_before(rs, from_top, s->from); /* what a crash left in either directory */
  recover_before(rd, s->to_top.fd, s->to);
  struct stat st, dt, fd_st, td_st;
  if (fstatat(s->from, s->from_name, &st, AT_SYMLINK_NOFOLLOW) < 0) return bw_code_from_errno(errno);
  if (!bw_same_mount(rs, s->from, s->from_name, &st))
    return bw_fail(BW_INVALID_ARGUMENT, "it is a mount point");
  if ((strail || dtrail) && !S_ISDIR(st.st_mode))
    return bw_fail(BW_ENOTDIR, "a trailing slash names a directory");
  if (fstatat(s->to, s->to_name, &dt, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!s->overwrite) return bw_fail(BW_EEXIST, NULL);
    if (S_ISLNK(dt.st_mode))
      return bw_fail(BW_POLICY_DENIED, "the destination is a symlink; replacing links is refused");
    if (!S_ISDIR(dt.st_mode) && dt.st_nlink > 1)
      return bw_fail(BW_POLICY_DENIED, "the destination has other hard links; replacing it is refused");
    if (S_ISDIR(dt.st_mode) != S_ISDIR(st.st_mode))
      return bw_fail(S_ISDIR(dt.st_mode) ? BW_EISDIR : BW_ENOTDIR, NULL);
  }
  if (fstat(s->from, &fd_st) < 0 || fstat(s->to, &td_st) < 0) return bw_code_from_errno(errno);
  s->xdev = fd_st.st_dev != td_st.st_dev;
  if (!s->xdev && !S_ISDIR(st.st_mode)) {
    /* nothing inside to judge: renamed straight to the destination at the
     * commit, which checks that no directory was swapped in meanwhile */
    s->direct = 1;
    snprintf(s->name, sizeof s->name, "%s", s->from_name);
    s->home = fcntl(s->from, F_DUPFD_CLOEXEC, 0);
    if (s->home < 0) return bw_code_from_errno(errno);
    s->state = BW_STAGE_PENDING;
    return BW_OK;
  }
  if (S_ISDIR(st.st_mode) && into_itself(rs, src, s)) /* the kernel's EINVAL, said first: */
    return bw_mut_errno(EINVAL);                     /* the commit's chain would miss it */
  /* the source aside, under a name no agent reaches, and no change
   * inside it from before that until the commit */
  char *aside = s->xdev ? s->xname : s->name;
  stage_name(aside, BW_STAGE_MOVE);
  /* what the stage is for, durably, before the source goes aside */
  if ((rc = intent_begin(&s->intent, from_top, from_at, s->from, s->xdev ? 'x' : 'm', aside,
                         s->from_name, s->xdev ? NULL : s->to_name)))
    return rc;
  if (S_ISDIR(st.st_mode) && (rc = bw_lock_tree(s->from, s->from_name, 0, &s->lock))) return rc;
  if ((rc = bw_rename_noreplace(s->from, s->from_name, s->from, aside, &st))) return rc;
  s->state = BW_STAGE_PENDING;
  if (fstatat(s->from, aside, &st, AT_SYMLINK_NOFOLLOW) < 0) return bw_code_from_errno(errno);
  s->is_dir = S_ISDIR(st.st_mode);
  int dir = s->is_dir ? bws_open_dir_at(s->from, aside) : -1;
  if (s->is_dir && dir < 0) return bw_code_from_errno(errno);
  if (!s->xdev) {
    s->home = fcntl(s->from, F_DUPFD_CLOEXEC, 0);
    if (s->home < 0) rc = bw_code_from_errno(errno);
    if (!rc && dir >= 0) rc = bws_walk_tree(s, dir, -1, st.st_dev, mnt_of(dir, ""), 0);
  } else if (dir >= 0) {
    rc = copy_into_stage(s, dir, &st); /* what lands is the copy */
  } else { /* one file across filesystems: copied into the stage as it is */
    stage_name(s->name, BW_STAGE_COPY);
    s->home = fcntl(s->to, F_DUPFD_CLOEXEC, 0);
    tree t = {.s = s, .copy = 1};
    t.src.dev = st.st_dev;
    if (s->home < 0) rc = bw_code_from_errno(errno);
    if (!rc) rc = intent_begin(&s->intent_to, s->to_top.fd, s->to_at, s->to, 'c', s->name,
                               s->to_name, NULL);
    if (!rc && S_ISREG(st.st_mode)) {
      /* visit() copies it under its own name: give the stage that name */
      int in = openat(s->from, aside, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      int out = in < 0 ? -1 : openat(s->home, s->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                     0666 | (st.st_mode & 0111));
      uint64_t copied;
      if (in < 0 || out < 0) rc = bw_code_from_errno(errno);
      else rc = bws_copy_bytes(&t, in, out, &st, &copied);
      if (out >= 0 && close(out) < 0 && !rc) rc = bw_fail(BW_EIO, "writing the copy failed");
      if (in >= 0) close(in);
      free(t.buf);
    } else if (!rc && S_ISLNK(st.st_mode)) {
      char target[BW_PATH_MAX + 1];
      ssize_t n = readlinkat(s->from, aside, target, sizeof target - 1);
      if (n < 0) rc = bw_code_from_errno(errno);
      else {
        target[n] = '\0';
        if (symlinkat(target, s->home, s->name) < 0) rc = bw_code_from_errno(errno);
      }
    } else if (!rc) {
      rc = bw_fail(BW_NOT_REGULAR, "only files, links and directories move across filesystems");
    }
  }
  if (dir >= 0) close(dir);
  return rc;
}

static int commit_move_held(bw_stage *s);

static int commit_move(bw_stage *s) {
  bw_chain c;
  int rc = hold_to(s, &c);
  if (rc) return rc;
  rc = commit_move_held(s);
  bw_chain_release(&c);
  return rc;
}

static int commit_move_held(bw_stage *s) {
  struct stat st, dt;
  int from = s->xdev ? s->home : s->from;
  if (fstatat(from, s->name, &st, AT_SYMLINK_NOFOLLOW) < 0) return bw_code_from_errno(errno);
  if (s->direct && S_ISDIR(st.st_mode)) /* a directory swapped in: not what was judged */
    return bw_fail(BW_EAGAIN, "the source changed during the move; retry");
  int replaced = fstatat(s->to, s->to_name, &dt, AT_SYMLINK_NOFOLLOW) == 0;
  if (replaced && !s->overwrite) return bw_fail(BW_EEXIST, NULL);
  if (replaced && S_ISLNK(dt.st_mode))
    return bw_fail(BW_POLICY_DENIED, "the destination is a symlink; replacing links is refused");
  if (replaced && !S_ISDIR(dt.st_mode) && dt.st_nlink > 1)
    return bw_fail(BW_POLICY_DENIED, "the destination has other hard links; replacing it is refused");
  if (s->xdev && sync_fs(s->home, s->name) < 0)
    return bw_fail(BW_EIO, "syncing the copy failed; nothing was moved");
  int rc;
  if (s->overwrite)
    rc = renameat2(from, s->name, s->to, s->to_name, 0) == 0 ? BW_OK : bw_mut_errno(errno);
  else
    rc = bw_rename_noreplace(from, s->name, s->to, s->to_name, &st);
  if (rc) return rc;
  s->state = BW_STAGE_DONE;
  struct stat now;
  if (s->direct && fstatat(s->to, s->to_name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISDIR(now.st_mode)) { /* swapped in between the two looks: back */
    if (!replaced && renameat2(s->to, s->to_name, s->from, s->from_name, RENAME_NOREPLACE) == 0) {
      s->state = BW_STAGE_UNDONE;
      return bw_fail(BW_EAGAIN, "the source changed during the move; nothing was moved; retry");
    }
  }
  if (bw_sync_dir(s->to) || (!s->xdev && bw_sync_dir(s->from))) {
    /* not durable: put the source back where nothing was replaced */
    if (!replaced && !s->xdev &&
        renameat2(s->to, s->to_name, s->from, s->from_name, RENAME_NOREPLACE) == 0) {
      s->state = BW_STAGE_UNDONE;
      return bw_fail(BW_EIO, "the directory fsync failed; nothing was moved");
    }
    return bw_fail_on(BW_EIO, BW_ON_SYNC, 0, "moved, but the directory fsync failed");
  }
  if (s->xdev) { /* in place and durable: now the source goes */
    if (bw_intent_commit(&s->intent)) /* a crash from here finishes the removal */
      return bw_fail_on(BW_EIO, BW_ON_SYNC, 0, "copied to the destination; the source is still there");
    if ((rc = unlink_stage(s->from, s->xname, dev_of(s->from), 0)) || bw_sync_dir(s->from))
      return bw_fail(BW_EIO, "copied to the destination, but removing the source failed");
  }
  return BW_OK;
}

/* ---- remove ---- */

static int put_back(bw_stage *s, int dir, const char *aside);

int bw_stage_remove(const bw_root *r, const char *rel, int recursive,
                    const char *expected_hash, bw_stage *s) {
  s->kind = BW_STAGE_REMOVE;
  if (r->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  int trailing;
  int rc = bw_parent_of(r, rel, &s->from, s->from_name, &trailing,
                        "the root itself, \".\" and \"..\" cannot be removed");
  if (rc) return rc;
  if (recursive) { /* what a crash left here (a file's removal stages nothing) */
    char at[BW_PATH_MAX + 1];
    recover_before(r, bw_stage_where(r, rel, at), s->from);
  }
  struct stat st;
  if (fstatat(s->from, s->from_name, &st, AT_SYMLINK_NOFOLLOW) < 0) return bw_code_from_errno(errno);
  if (!S_ISDIR(st.st_mode) || !recursive || expected_hash) {
    /* a file, a link or an empty directory: nothing inside to judge */
    bw_remove_res res;
    rc = bw_remove(r, rel, recursive, expected_hash, &s->stop, &res);
    if (rc) return rc;
    s->files = res.files;
    s->dirs = res.dirs;
    s->state = BW_STAGE_DONE;
    return BW_OK;
  }
  if (!bw_same_mount(r, s->from, s->from_name, &st))
    return bw_fail(BW_INVALID_ARGUMENT, "it is a mount point");
  s->root_dev = r->dev;
  s->root_mnt = r->mnt_id;
  stage_name(s->name, BW_STAGE_REMOVE);
  char from_at[BW_PATH_MAX + 1];
  int from_top = bw_stage_where(r, rel, from_at);
  if ((rc = intent_begin(&s->intent, from_top, from_at, s->from, 'r', s->name, s->from_name, NULL)))
    return rc;
  if ((rc = bw_lock_tree(s->from, s->from_name, 0, &s->lock))) return rc;
  if ((rc = bw_rename_noreplace(s->from, s->from_name, s->from, s->name, &st))) return rc;
  s->state = BW_STAGE_PENDING;
  s->is_dir = 1;
  s->home = fcntl(s->from, F_DUPFD_CLOEXEC, 0);
  int dir = bws_open_dir_at(s->from, s->name);
  if (s->home < 0 || dir < 0) rc = bw_code_from_errno(errno);
  else rc = bws_walk_tree(s, dir, -1, st.st_dev, r->mnt_id, 0);
  if (dir >= 0) close(dir);
  return rc;
}

static int commit_remove(bw_stage *s) {
  bw_root r = {.dev = (dev_t)s->root_dev, .mnt_id = s->root_mnt};
  bw_remove_res res;
  memset(&res, 0, sizeof res);
  /* judged: it goes whole, whatever the budget says now; and a crash
   * from here on finishes the removal */
  if (bw_intent_commit(&s->intent)) return bw_fail(BW_EIO, "the intent record could not be written; nothing was removed");
  int rc = bw_remove_tree(&r, s->home, s->name, NULL, &res);
  s->files = res.files;
  s->dirs = res.dirs;
  s->state = BW_STAGE_DONE;
  if (rc) { /* what is left goes back under its name, the error kept */
    bw_err_saved e;
    bw_err_save(&e);
    put_back(s, s->home, s->name);
    return bw_err_restore(rc, &e);
  }
  if (bw_sync_dir(s->home))
    return bw_fail_on(BW_EIO, BW_ON_SYNC, 0, "removed, but the directory fsync failed: the removal may not survive a crash");
  return BW_OK;
}

/* ---- commit, abort ---- */

/* The records: removed once no stage is left (in place, or put back);
 * left to recovery when one is (a removal or a put back that failed
 * part-way). */
static int there(int dir, const char *name) {
  struct stat st;
  return dir >= 0 && name[0] && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void settle_intents(bw_stage *s) {
  int left = s->direct ? 0
             : s->kind == BW_STAGE_COPY ? there(s->home, s->name)
             : s->xdev ? there(s->from, s->xname) || there(s->home, s->name)
                       : there(s->from, s->name);
  if (left) { /* a stage is still there: its record says what it is for */
    bw_intent_release(&s->intent);
    bw_intent_release(&s->intent_to);
  } else {
    bw_intent_end(&s->intent);
    bw_intent_end(&s->intent_to);
  }
}

int bw_stage_commit(bw_stage *s) {
  if (s->state == BW_STAGE_DONE) return BW_OK;
  if (s->state != BW_STAGE_PENDING) return bw_fail(BW_INVALID_ARGUMENT, "nothing is staged");
  int rc;
  switch (s->kind) {
  case BW_STAGE_COPY: rc = commit_copy(s); break;
  case BW_STAGE_MOVE: rc = commit_move(s); break;
  default: rc = commit_remove(s); break;
  }
  if (rc && s->state == BW_STAGE_PENDING) {
    bw_err_saved e;
    bw_err_save(&e);
    bw_stage_abort(s);
    bw_err_restore(rc, &e); /* the commit's reason, not the abort's */
  }
  close_fd(&s->lock); /* in place or back: changes inside may go on */
  settle_intents(s);
  return rc;
}

/* Put the source (dir/aside) back under its own name, else under
 * "NAME.restored.HEX" (the name was taken meanwhile): s->restored. */
static int put_back_as(int dir, const char *aside, const char *from_name,
                       char restored[BW_NAME_MAX + 1]);

static int put_back(bw_stage *s, int dir, const char *aside) {
  return put_back_as(dir, aside, s->from_name, s->restored);
}

static int put_back_as(int dir, const char *aside, const char *from_name,
                       char restored[BW_NAME_MAX + 1]) {
  struct stat st;
  if (fstatat(dir, aside, &st, AT_SYMLINK_NOFOLLOW) < 0) return bw_code_from_errno(errno);
  if (!bw_rename_noreplace(dir, aside, dir, from_name, &st)) return bw_sync_dir(dir);
  unsigned long long rnd = 0;
  if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd) rnd = (unsigned long long)bw_now_ms();
  char other[BW_NAME_MAX + 1];
  int n = snprintf(other, sizeof other, "%.200s.restored.%08llx", from_name, rnd & 0xffffffffULL);
  if (n < 0 || (size_t)n >= sizeof other || bw_rename_noreplace(dir, aside, dir, other, &st))
    return bw_fail(BW_EIO, "its name was taken meanwhile, and it could not be put back");
  memcpy(restored, other, (size_t)n + 1);
  bw_sync_dir(dir);
  return BW_OK;
}

int bw_stage_abort(bw_stage *s) {
  if (!s->state) { /* refused before anything was staged: its record goes */
    bw_intent_end(&s->intent);
    bw_intent_end(&s->intent_to);
  }
  if (s->state != BW_STAGE_PENDING) return BW_OK;
  int rc = BW_OK;
  if (s->kind == BW_STAGE_COPY || (s->kind == BW_STAGE_MOVE && s->xdev)) {
    if (s->home >= 0) rc = unlink_stage(s->home, s->name, dev_of(s->home), 0);
  }
  if (s->kind == BW_STAGE_MOVE && s->direct) {
    /* never moved aside: nothing to put back */
  } else if (s->kind == BW_STAGE_MOVE) {
    int prc = put_back(s, s->from, s->xdev ? s->xname : s->name);
    if (!rc) rc = prc;
  } else if (s->kind == BW_STAGE_REMOVE) {
    rc = put_back(s, s->from, s->name);
  }
  s->state = BW_STAGE_UNDONE;
  close_fd(&s->lock);
  settle_intents(s); /* not all of it back: recovery tries again */
  return rc;
}

/* ---- recovery (recover.c finds the records of dead owners) ---- */

static int plain_name(const char *n) {
  return n[0] && strcmp(n, ".") && strcmp(n, "..") && !strchr(n, '/') && strlen(n) <= BW_NAME_MAX;
}

/* A copy's stage merged forward into to (COMMITTED: the merge had
 * begun): what is left of it renamed in. */
static int merge_forward(int dirfd, const char *stage, const char *to) {
  int from = bws_open_dir_at(dirfd, stage), dst = bws_open_dir_at(dirfd, to);
  int rc = from < 0 || dst < 0 ? bw_code_from_errno(errno) : merge(from, dst, 0, 1, NULL);
  if (!rc && syncfs(dst) < 0) rc = bw_fail(BW_EIO, "the sync failed");
  if (from >= 0) close(from);
  if (dst >= 0) close(dst);
  return rc;
}

int bw_stage_recover(int dirfd, const bw_intent_rec *rec) {
  const char *const *n = rec->names;
  if (rec->n < 2 || !plain_name(n[0]) || !plain_name(n[1]) || !bw_stage_name(n[0]))
    return BW_INVALID_ARGUMENT; /* never anything but a staged name is touched */
  struct stat st;
  if (fstatat(dirfd, n[0], &st, AT_SYMLINK_NOFOLLOW) < 0) /* in place, or never made */
    return errno == ENOENT ? BW_OK : bw_code_from_errno(errno);
  char restored[BW_NAME_MAX + 1];
  int forward = rec->state == BW_INTENT_COMMITTED;
  switch (rec->op) {
  case 'c': /* a copy's stage: a half-made copy goes; a merge under way is finished */
    if (forward && S_ISDIR(st.st_mode)) {
      int rc = merge_forward(dirfd, n[0], n[1]);
      if (rc) return rc;
    }
    return unlink_stage(dirfd, n[0], st.st_dev, 0);
  case 'm': /* a move's source aside: its commit is one rename, so it goes back */
    return put_back_as(dirfd, n[0], n[1], restored);
  case 'r': /* a remove: back until its commit began, then finished */
  case 'x': /* a move's source across filesystems: back until the copy was in place */
    if (forward) {
      int rc = unlink_stage(dirfd, n[0], st.st_dev, 0);
      return rc ? rc : bw_sync_dir(dirfd);
    }
    return put_back_as(dirfd, n[0], n[1], restored);
  default:
    return BW_INVALID_ARGUMENT;
  }
}

/* ---- stale stages ---- */

/* bw_stage_sweep is tree.c's: write.c's temp sweep calls it, and the
 * stager is above write.c. */
