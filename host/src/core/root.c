/*
 * root.c - workspace roots held as directory fds, and the lexical mapping
 * of an agent's path onto a root. The mapping never touches the filesystem:
 * it only decides which root a path names and what is left to resolve
 * beneath it (resolve.c does that on fds).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core.h"
#include "stage.h" /* the staged names: their prefix and these two functions' declarations */

/* Lexically normalise an absolute path: collapse "//" and ".", pop "..". */
static char *normalize_abs(const char *in) {
  size_t n = strlen(in);
  char *out = malloc(n + 2);
  size_t o = 0;
  if (!out) return NULL;
  for (const char *p = in; *p;) {
    while (*p == '/') p++;
    const char *s = p;
    while (*p && *p != '/') p++;
    size_t cl = (size_t)(p - s);
    if (cl == 0 || (cl == 1 && s[0] == '.')) continue;
    if (cl == 2 && s[0] == '.' && s[1] == '.') {
      while (o > 0 && out[o - 1] != '/') o--;
      if (o > 0) o--; /* drop the separator too */
      continue;
    }
    out[o++] = '/';
    memcpy(out + o, s, cl);
    o += cl;
  }
  if (o == 0) out[o++] = '/';
  out[o] = '\0';
  return out;
}

/* The configured path made absolute against the working directory. */
static char *absolute(const char *path) {
  if (path[0] == '/') return normalize_abs(path);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return NULL;
  size_t a = strlen(cwd), b = strlen(path);
  char *tmp = malloc(a + b + 2);
  if (!tmp) return NULL;
  memcpy(tmp, cwd, a);
  tmp[a] = '/';
  memcpy(tmp + a + 1, path, b + 1);
  char *out = normalize_abs(tmp);
  free(tmp);
  return out;
}

int bw_root_open(bw_root *r, const char *host_path, const char *mount,
                 int readonly) {
  memset(r, 0, sizeof *r);
  r->fd = -1;
  if (mount && mount[0] != '/')
    return bw_fail(BW_INVALID_ARGUMENT, "a mount must be an absolute path");
  int fd = open(host_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return bw_code_from_errno(errno);
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    close(fd);
    return bw_code_from_errno(e);
  }
  r->fd = fd;
  r->dev = st.st_dev;
  r->ino = st.st_ino;
  r->backend = -1;
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 &&
      (sx.stx_mask & STATX_MNT_ID))
    r->mnt_id = sx.stx_mnt_id;
  r->readonly = readonly;
  r->mount = mount ? normalize_abs(mount) : absolute(host_path);
  if (!r->mount) {
    bw_root_close(r);
    return BW_ENOMEM;
  }
  if (!mount) { /* the canonical spelling is an alias of the host path */
    char *canon = realpath(host_path, NULL);
    if (canon && strcmp(canon, r->mount) != 0) r->alias = canon;
    else free(canon);
  }
  return BW_OK;
}

void bw_root_close(bw_root *r) {
  if (r->fd >= 0) close(r->fd);
  free(r->mount);
  free(r->alias);
  r->fd = -1;
  r->mount = r->alias = NULL;
}

/* Next component of p (skipping separators); returns its start or NULL. */
static const char *next_comp(const char *p, size_t *cl) {
  while (*p == '/') p++;
  if (!*p) return NULL;
  const char *s = p;
  while (*p && *p != '/') p++;
  *cl = (size_t)(p - s);
  return s;
}

/* If abs lies under mount (component-wise), return the rest, else NULL.
 * "." components are skipped inside the mount part only; the rest is kept
 * verbatim so "file/." still means "file must be a directory". */
static const char *under_mount(const char *abs, const char *mount,
                               size_t *matched) {
  const char *p = abs, *m = mount;
  size_t pl, ml;
  *matched = 0;
  for (;;) {
    const char *mc = next_comp(m, &ml);
    if (!mc) break;
    const char *pc;
    do {
      pc = next_comp(p, &pl);
      if (pc) p = pc + pl;
    } while (pc && pl == 1 && pc[0] == '.');
    if (!pc || pl != ml || memcmp(pc, mc, ml) != 0) return NULL;
    m = mc + ml;
    (*matched)++;
  }
  while (*p == '/') p++;
  return p;
}

static int check_syntax(const char *path, size_t len) {
  if (len == 0) return bw_fail(BW_INVALID_ARGUMENT, "the path is empty");
  if (memchr(path, '\0', len))
    return bw_fail(BW_INVALID_ARGUMENT, "the path contains a NUL byte");
  if (len > BW_PATH_MAX) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
  if (path[0] == '~')
    return bw_fail(BW_INVALID_ARGUMENT,
                   "`~` is not expanded: use a path relative to the root");
  if (len >= 3 && isalpha((unsigned char)path[0]) && path[1] == ':' &&
      (path[2] == '\\' || path[2] == '/'))
    return bw_fail(BW_INVALID_ARGUMENT, "Windows drive paths are not supported");
  size_t cl;
  for (const char *c = next_comp(path, &cl); c; c = next_comp(c + cl, &cl))
    if (cl > BW_NAME_MAX) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
  return BW_OK;
}

/* A relative path whose own ".." components climb above where it starts
 * ("a/b/../../../x") is refused before any lookup, whether or not its
 * directories exist. This only ever refuses more than the kernel would. */
static int climbs_out(const char *rel) {
  long depth = 0;
  size_t cl;
  for (const char *c = next_comp(rel, &cl); c; c = next_comp(c + cl, &cl)) {
    if (cl == 2 && c[0] == '.' && c[1] == '.') {
      if (--depth < 0) return 1;
    } else if (!(cl == 1 && c[0] == '.')) {
      depth++;
    }
  }
  return 0;
}

int bw_map_path(const bw_root *roots, int nroots, const char *path,
                size_t len, int *root_index, char *rel) {
  int rc = check_syntax(path, len);
  if (rc) return rc;
  if (path[0] != '/') {
    if (nroots < 1) return BW_OUTSIDE_ROOT;
    *root_index = 0;
    if (climbs_out(path)) return bw_fail(BW_OUTSIDE_ROOT, NULL);
    memcpy(rel, path, len + 1);
    return BW_OK;
  }
  const char *best = NULL;
  size_t best_depth = 0;
  for (int i = 0; i < nroots; i++) {
    const char *spell[2] = {roots[i].mount, roots[i].alias};
    for (int k = 0; k < 2; k++) {
      size_t depth;
      const char *rest = spell[k] ? under_mount(path, spell[k], &depth) : NULL;
      if (rest && (!best || depth > best_depth)) {
        best = rest;
        best_depth = depth;
        *root_index = i;
      }
    }
  }
  if (!best || climbs_out(best)) return bw_fail(BW_OUTSIDE_ROOT, NULL);
  if (!*best) best = ".";
  memcpy(rel, best, strlen(best) + 1);
  return BW_OK;
}

/* ---- names the stager reserves (stage.h) ----
 * Lexical, like the mapping above: the resolver refuses a path through a
 * staged name and every walk and listing leaves one out, below the stager
 * that makes them. */

int bw_stage_name(const char *name) {
  /* in any case: on a case-folding directory ".BURROW-STAGE.m.*" is the stage */
  return !strncasecmp(name, BW_STAGE_PREFIX, sizeof BW_STAGE_PREFIX - 1);
}

int bw_stage_in_path(const char *rel) {
  for (const char *p = rel; *p;) {
    while (*p == '/') p++;
    if (bw_stage_name(p)) return 1;
    while (*p && *p != '/') p++;
  }
  return 0;
}
