/*
 * stagetree.c - the stager's tree (stage.c): a directory's tree walked by
 * fds opened with O_NOFOLLOW from their parent's, never across a mount,
 * each entry listed in the stage (type, size, identity) for the
 * judgement, and, for a copy, made under the staged directory as it is
 * met: files by reflink, else copy_file_range, else read/write, capped at
 * max_file_size; links as links; FIFOs, sockets and devices skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stagetree.h"

enum { PROGRESS_EVERY = 1024, COPY_CHUNK = 1 << 20 };

/* ---- the entry list ---- */

static int add_entry(bw_stage *s, const char *path, size_t plen, char type,
                     const struct stat *st) {
  if (s->n >= s->max_entries)
    return bw_fail(BW_TOO_LARGE, "the tree holds more entries than a subtree operation takes");
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 256;
    bw_stage_entry *v = realloc(s->v, cap * sizeof *v);
    if (!v) return BW_ENOMEM;
    s->v = v;
    s->cap = cap;
  }
  if (s->plen + plen + 1 > s->pcap) {
    size_t cap = s->pcap ? s->pcap * 2 : 16384;
    while (cap < s->plen + plen + 1) cap *= 2;
    char *p = realloc(s->paths, cap);
    if (!p) return BW_ENOMEM;
    s->paths = p;
    s->pcap = cap;
  }
  memcpy(s->paths + s->plen, path, plen);
  s->paths[s->plen + plen] = '\0';
  s->v[s->n++] = (bw_stage_entry){.off = s->plen, .type = type,
                                  .size = type == 'f' ? (uint64_t)st->st_size : 0,
                                  .dev = st->st_dev, .ino = st->st_ino,
                                  .nlink = st->st_nlink};
  s->plen += plen + 1;
  if (s->progress && s->n % PROGRESS_EVERY == 0 && s->progress(s->progress_arg, s->n))
    return bw_fail(BW_EAGAIN, "the call was cancelled");
  return BW_OK;
}

/* path + "/" + name (or name at the top) into buf; its length in *len. */
static int join(char buf[BW_PATH_MAX + 1], size_t at, const char *name,
                size_t *len) {
  size_t nl = strlen(name);
  if (at + (at ? 1 : 0) + nl > BW_PATH_MAX)
    return bw_fail(BW_INVALID_ARGUMENT, "a path in the tree is too long");
  if (at) buf[at++] = '/';
  memcpy(buf + at, name, nl + 1);
  *len = at + nl;
  return BW_OK;
}

/* ---- a tree walked (and copied) by fds ---- */

int bws_open_dir_at(int dirfd, const char *name) {
  return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Copy the bytes of the open regular file in to out: a reflink, else
 * copy_file_range, else read/write. At most max bytes (0: any). */
int bws_copy_bytes(tree *t, int in, int out, const struct stat *st,
                   uint64_t *copied) {
  bw_stage *s = t->s;
  *copied = 0;
  if (s->max_bytes && (uint64_t)st->st_size > s->max_bytes)
    return bw_fail_on(BW_TOO_LARGE, BW_ON_SIZE, 0, "a file is over max_file_size");
  if (!s->clone_off && st->st_size > 0) {
    if (ioctl(out, FICLONE, in) == 0) {
      *copied = (uint64_t)st->st_size;
      return BW_OK;
    }
    if (errno == EOPNOTSUPP || errno == ENOTTY || errno == EXDEV || errno == EINVAL ||
        errno == ENOSYS || errno == EPERM)
      s->clone_off = 1;
  }
  uint64_t limit = s->max_bytes ? s->max_bytes : UINT64_MAX;
  while (!s->cfr_off) {
    ssize_t n = copy_file_range(in, NULL, out, NULL, COPY_CHUNK * 16, 0);
    if (n > 0) {
      *copied += (uint64_t)n;
      if (*copied > limit) return bw_fail_on(BW_TOO_LARGE, BW_ON_SIZE, 0, "a file is over max_file_size");
      continue;
    }
    if (n == 0) return BW_OK;
    if (errno == EINTR) continue;
    if ((errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP ||
         errno == EBADF) && *copied == 0) {
      s->cfr_off = 1;
      break;
    }
    return bw_code_from_errno(errno);
  }
  if (!t->buf && !(t->buf = malloc(COPY_CHUNK))) return BW_ENOMEM;
  for (;;) {
    ssize_t n = read(in, t->buf, COPY_CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return bw_code_from_errno(errno);
    if (n == 0) return BW_OK;
    *copied += (uint64_t)n;
    if (*copied > limit) return bw_fail_on(BW_TOO_LARGE, BW_ON_SIZE, 0, "a file is over max_file_size");
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(out, t->buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return bw_code_from_errno(errno);
      off += w;
    }
  }
}

static int visit_dir(tree *t, int src, int dst, size_t at, int depth);

/* One entry of the directory src (and, copying, its copy in dst). */
static int visit(tree *t, int src, int dst, const char *name, size_t at,
                 int depth) {
  bw_stage *s = t->s;
  int rc = bw_stopped(&s->stop);
  if (rc) return rc;
  size_t len = 0;
  if ((rc = join(t->path, at, name, &len))) return rc;
  struct stat st;
  if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    rc = errno == ENOENT ? BW_OK : bw_code_from_errno(errno);
  else if (S_ISREG(st.st_mode) && !t->copy)
    rc = add_entry(s, t->path, len, 'f', &st);
  else if (S_ISREG(st.st_mode)) {
    int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0) return errno == ENOENT ? BW_OK : bw_code_from_errno(errno);
    if (fstat(in, &st) < 0) rc = bw_code_from_errno(errno);
    else if (!S_ISREG(st.st_mode)) s->skipped++; /* swapped since the fstatat */
    else {
      int out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       0666 | (st.st_mode & 0111));
      uint64_t copied = 0;
      if (out < 0) rc = bw_code_from_errno(errno);
      else {
        rc = bws_copy_bytes(t, in, out, &st, &copied);
        if (close(out) < 0 && !rc) rc = bw_fail(BW_EIO, "writing the copy failed");
      }
      if (!rc) {
        st.st_size = (off_t)copied; /* what landed */
        rc = add_entry(s, t->path, len, 'f', &st);
        s->files++;
        s->bytes += copied;
      }
    }
    close(in);
  } else if (S_ISLNK(st.st_mode)) {
    if (t->copy) {
      char target[BW_PATH_MAX + 1];
      ssize_t n = readlinkat(src, name, target, sizeof target - 1);
      if (n < 0) return errno == ENOENT ? BW_OK : bw_code_from_errno(errno);
      target[n] = '\0';
      if (symlinkat(target, dst, name) < 0) return bw_code_from_errno(errno);
      s->links++;
    }
    rc = add_entry(s, t->path, len, 'l', &st);
  } else if (S_ISDIR(st.st_mode) && bw_same_mount(&t->src, src, name, &st)) {
    int sub = bws_open_dir_at(src, name);
    if (sub < 0) { /* swapped for a link or gone: never followed */
      if (t->copy) s->skipped++;
      return errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? BW_OK : bw_code_from_errno(errno);
    }
    int dsub = -1;
    if (t->copy) {
      if (mkdirat(dst, name, (st.st_mode & 0777) | 0700) < 0 ||
          (dsub = bws_open_dir_at(dst, name)) < 0)
        rc = bw_code_from_errno(errno);
      else
        s->dirs++;
    }
    if (!rc) rc = add_entry(s, t->path, len, 'd', &st);
    if (!rc) rc = visit_dir(t, sub, dsub, len, depth + 1);
    close(sub);
    if (dsub >= 0) close(dsub);
  } else if (t->copy) {
    s->skipped++; /* FIFOs, sockets, devices, mount points: not copied */
  } else {
    /* a move or a remove takes them along: listed, so they are judged */
    rc = add_entry(s, t->path, len, 'o', &st);
  }
  return rc;
}

static int visit_dir(tree *t, int src, int dst, size_t at, int depth) {
  if (depth > MAX_DEPTH) return bw_fail(BW_INVALID_ARGUMENT, "the tree is too deep");
  char **names = NULL;
  size_t n = 0;
  int rc = bw_read_names(src, BW_NAMES_HIDDEN, &names, &n);
  for (size_t i = 0; !rc && i < n; i++) {
    rc = visit(t, src, dst, names[i], at, depth);
    t->path[at] = '\0';
  }
  bw_free_names(names, n);
  return rc;
}

/* Walk the directory dirfd/name: list (copy: into the directory dst) its
 * tree. src_dev/src_mnt: the mount it must not leave. */
int bws_walk_tree(bw_stage *s, int dir, int dst, dev_t dev, uint64_t mnt,
                  int copy) {
  tree t = {.s = s, .copy = copy};
  t.src.dev = dev;
  t.src.mnt_id = mnt;
  t.path[0] = '\0';
  int rc = visit_dir(&t, dir, dst, 0, 0);
  free(t.buf);
  return rc;
}
