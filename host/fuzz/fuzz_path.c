/*
 * fuzz_path.c - the path front end: bw_map_path (root.c) on the agent's
 * string, then bw_resolve_handle and bw_resolve (resolve.c) on a small
 * tree made once, with links that lead up, out, around and nowhere, and a
 * root nested in another.
 *
 * Input: one flags byte (1: do not follow a final link), then the path.
 * A path starting with "@" has the host directory of the third root (a
 * root without a virtual mount) put in its place, so the corpus does not
 * depend on the temp dir's name. Checked:
 *  - mapping refuses with its codes only, and what it maps is a relative
 *    path that does not climb out;
 *  - a handle's fd is a directory inside its root (by /proc/self/fd), its
 *    in-root path resolves beneath that root without following a single
 *    link to the object the handle holds, and rest is one plain name;
 *  - bw_resolve answers the same on both backends (openat2, fd walk), and
 *    as the handle does;
 *  - no fd is left open.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "fuzz.h"

enum { NROOTS = 3 };

static char base[64];
static char real[NROOTS][4096]; /* each root's directory, canonical */
static bw_root roots[NROOTS];

static void sh(const char *cmd) {
  char full[8192];
  snprintf(full, sizeof full, "cd '%s' && %s", base, cmd);
  if (system(full) != 0) {
    fprintf(stderr, "fuzz_path set-up failed: %s\n", cmd);
    abort();
  }
}

static void cleanup(void) {
  for (int i = 0; i < NROOTS; i++) bw_root_close(&roots[i]);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
}

static void setup(void) {
  snprintf(base, sizeof base, "%s/burrow-fuzz-path.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(base)) abort();
  sh("mkdir -p outside root/a/b root/dir root/nested/deep other/x");
  sh("echo secret > outside/secret && echo c > root/a/b/c.txt && "
     "echo f > root/file.txt && echo n > root/nested/n.txt && "
     "echo o > other/x/o.txt");
  sh("ln -s ../.. root/a/up && ln -s b root/a/in && ln -s /etc root/a/abs && "
     "ln -s loop root/a/loop && ln -s ../outside root/esc && "
     "ln -s nowhere/x root/dangling && ln -s a/b/c.txt root/tofile && "
     "ln -s ../root root/nested/back && ln -s nested/deep root/todeep && "
     "ln -s ../root/file.txt other/cross && ln -s x other/y && "
     "ln -s ./a/./b/../in/.. root/dots && mkfifo root/fifo");
  const char *dirs[NROOTS] = {"root", "root/nested", "other"};
  const char *mounts[NROOTS] = {"/w", "/w/nested", NULL};
  for (int i = 0; i < NROOTS; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", base, dirs[i]);
    if (bw_root_open(&roots[i], p, mounts[i], 0) || !realpath(p, real[i]))
      abort();
  }
  atexit(cleanup);
}

/* The lowest free fd: the same before and after an input, or one leaked
 * (measured per input: libFuzzer's symbolizer keeps pipes of its own). */
static int free_fd(void) {
  int fd = dup(0);
  close(fd);
  return fd;
}

/* Is fd a directory at or below dir (canonical)? */
static int fd_inside(int fd, const char *dir) {
  char link[64], target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n < 0) return 0;
  target[n] = '\0';
  size_t dl = strlen(dir);
  return !strncmp(target, dir, dl) && (target[dl] == '\0' || target[dl] == '/');
}

/* Does a relative path climb above its start, lexically? */
static int climbs(const char *rel) {
  long depth = 0;
  for (const char *p = rel; *p;) {
    while (*p == '/') p++;
    const char *s = p;
    while (*p && *p != '/') p++;
    size_t n = (size_t)(p - s);
    if (n == 2 && s[0] == '.' && s[1] == '.') {
      if (--depth < 0) return 1;
    } else if (n && !(n == 1 && s[0] == '.')) {
      depth++;
    }
  }
  return 0;
}

static int has_dotdot(const char *rel) {
  for (const char *p = rel; *p;) {
    while (*p == '/') p++;
    const char *s = p;
    while (*p && *p != '/') p++;
    if (p - s == 2 && s[0] == '.' && s[1] == '.') return 1;
  }
  return 0;
}

static int open_beneath(int dirfd, const char *rel, int nofollow) {
  struct open_how how = {
      .flags = O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0),
      .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV};
  return (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
}

static void check_handle(int idx, const char *rel, int how) {
  bw_handle h;
  int rc = bw_resolve_handle(roots, NROOTS, idx, rel, how, &h);
  FZ_CHECK(rc == BW_OK ? h.dirfd >= 0 : h.dirfd == -1, "dirfd %d with %s",
           h.dirfd, bw_code_name(rc));
  /* the same path through bw_resolve, on each backend */
  int fds[2] = {-1, -1}, rcs[2];
  struct stat sts[2];
  for (int b = 0; b < 2; b++) {
    bw_root r = roots[idx];
    r.backend = b ? BW_WALK : BW_OPENAT2;
    rcs[b] = bw_resolve(&r, rel, how, &fds[b], &sts[b]);
  }
  /* Let pass (the kernel's, docs/security.md#fuzzing): openat2 answers
   * EAGAIN to ".." while anything on the system renames (128 times over
   * on a long path of them), and now and then ELOOP on a path of 21 to 40
   * links (seemingly those followed before its RCU walk fell back, counted
   * twice). */
  if (rcs[0] == BW_EAGAIN || rcs[1] == BW_EAGAIN || rcs[0] == BW_ELOOP) {
    for (int b = 0; b < 2; b++)
      if (rcs[b] == BW_OK) close(fds[b]);
    if (rc == BW_OK) bw_handle_close(&h);
    return;
  }
  FZ_CHECK(rcs[0] == rcs[1], "%s: openat2 says %s, the walk %s", rel,
           bw_code_name(rcs[0]), bw_code_name(rcs[1]));
  if (rcs[0] == BW_OK)
    FZ_CHECK(sts[0].st_ino == sts[1].st_ino && sts[0].st_dev == sts[1].st_dev,
             "%s: the backends found different objects", rel);
  for (int b = 0; b < 2; b++)
    if (rcs[b] == BW_OK) close(fds[b]);
  if (rc != BW_OK) {
    FZ_CHECK(!(rcs[0] == BW_OK && rcs[1] == BW_OK),
             "%s: resolves, yet the handle says %s", rel, bw_code_name(rc));
    return;
  }
  FZ_CHECK(h.root >= 0 && h.root < NROOTS, "root %d", h.root);
  FZ_CHECK(fd_inside(h.dirfd, real[h.root]), "%s: dirfd outside root %d", rel,
           h.root);
  FZ_CHECK(h.rel[0] && h.rel[0] != '/' && !has_dotdot(h.rel),
           "%s: in-root path '%s'", rel, h.rel);
  FZ_CHECK((h.rest[0] || (h.lexical[0] && !h.exists)) && h.rest[0] != '/' &&
               !has_dotdot(h.rest),
           "%s: rest '%s'", rel, h.rest); /* "gone/..": empty, refused later */
  if (!h.exists) {
    FZ_CHECK(rcs[0] != BW_OK, "%s: resolves, yet the handle says missing", rel);
    bw_handle_close(&h);
    return;
  }
  FZ_CHECK(rcs[0] == BW_OK && sts[0].st_ino == h.st.st_ino,
           "%s: the handle holds another object than bw_resolve (%s)", rel,
           bw_code_name(rcs[0]));
  struct stat at;
  FZ_CHECK(fstatat(h.dirfd, h.rest, &at, AT_SYMLINK_NOFOLLOW) == 0 &&
               at.st_ino == h.st.st_ino && at.st_dev == h.st.st_dev,
           "%s: dirfd + '%s' is not the object", rel, h.rest);
  int fd = open_beneath(roots[h.root].fd, h.rel, how & BW_NOFOLLOW);
  FZ_CHECK(fd >= 0, "%s: in-root path '%s' does not resolve beneath root %d "
           "without links: %s", rel, h.rel, h.root, strerror(errno));
  FZ_CHECK(fstat(fd, &at) == 0 && at.st_ino == h.st.st_ino &&
               at.st_dev == h.st.st_dev,
           "%s: in-root path '%s' names another object", rel, h.rel);
  close(fd);
  bw_handle_close(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) setup(), ready = 1;
  if (size < 1 || size > 6000) return 0;
  int fd0 = free_fd();
  int how = data[0] & 1 ? BW_NOFOLLOW : 0;
  char path[8192];
  size_t len = 0;
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  if (n && in[0] == '@') {
    len = strlen(real[2]);
    memcpy(path, real[2], len);
    in++, n--;
  }
  memcpy(path + len, in, n);
  len += n;
  path[len] = '\0';

  int idx = -1;
  char rel[BW_PATH_MAX + 1];
  int rc = bw_map_path(roots, NROOTS, path, len, &idx, rel);
  FZ_CHECK(rc == BW_OK || rc == BW_INVALID_ARGUMENT || rc == BW_OUTSIDE_ROOT,
           "map: %s", bw_code_name(rc));
  if (rc == BW_OK) {
    FZ_CHECK(idx >= 0 && idx < NROOTS, "root index %d", idx);
    FZ_CHECK(memchr(rel, '\0', sizeof rel) && rel[0] && rel[0] != '/',
             "mapped to '%s'", rel);
    FZ_CHECK(!climbs(rel), "mapped path climbs out: '%s'", rel);
    check_handle(idx, rel, how);
  }
  int fd1 = free_fd();
  FZ_CHECK(fd1 == fd0, "an fd was left open (next free is %d, was %d)", fd1,
           fd0);
  return 0;
}
