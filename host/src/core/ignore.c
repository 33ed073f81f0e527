/*
 * ignore.c - gitignore semantics: the rules of one ignore file, compiled
 * to globs, and their evaluation (the last matching rule wins; "!"
 * re-includes). The walker chains one rule set per directory, deepest
 * first, so a nested file overrides its parents.
 *
 * From gitignore(5): blank lines and "#" lines are skipped; "\#" and "\!"
 * escape; trailing spaces are dropped unless escaped; a trailing "/"
 * matches directories only; a pattern with a "/" at the start or in the
 * middle is anchored to the file's directory, any other matches at every
 * depth; "**" spans directories.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search.h"

enum { IGNORE_MAX = 1 << 20 };

/* How a rule is matched. A pattern without a slash matches the last
 * component at any depth ("**" + "/" + X), so it is matched against the
 * basename alone, and most such patterns (a name, "*.ext", "name*") by a
 * compare: the glob's segment walk over every component of every path,
 * rule after rule, was most of a walk's time in a tree with a long root
 * .gitignore (Linux: ~150 rules, 20k entries). */
enum { R_GLOB, R_NAME, R_SUFFIX, R_PREFIX, R_NAMEGLOB, R_PATH };

typedef struct rule {
  bw_glob *g;  /* R_GLOB: the whole path; R_NAMEGLOB: the basename */
  char *lit;   /* R_NAME, R_SUFFIX, R_PREFIX; R_PATH: the whole path */
  size_t llen;
  int kind, neg, dir_only;
} rule;

/* The compares, indexed: a slot per distinct name (R_NAME), extension
 * (R_SUFFIX of one ".ext") or path (R_PATH) with the last rule of it,
 * and the last that is not dir-only (+1; 0 none). A match looks up the
 * entry's basename, extension and path, then runs only the other rules
 * that come after the best of those, last first: the last matching rule
 * is the one that counts. */
typedef struct slot {
  const char *key; /* a rule's lit */
  size_t klen;
  int kind;
  size_t any, file;
} slot;

struct bw_ignore {
  rule *r;
  size_t n, cap;
  slot *h;       /* open addressing, hcap a power of two; NULL: no index */
  size_t hcap;
  size_t *rest;  /* the other rules' indexes, ascending */
  size_t nrest;
  int has_path;
};

static void rule_free(rule *r) {
  bw_glob_free(r->g);
  free(r->lit);
}

static void index_free(bw_ignore *ig) {
  free(ig->h);
  free(ig->rest);
  ig->h = NULL;
  ig->rest = NULL;
  ig->hcap = ig->nrest = 0;
  ig->has_path = 0;
}

void bw_ignore_free(bw_ignore *ig) {
  if (!ig) return;
  index_free(ig);
  for (size_t i = 0; i < ig->n; i++) rule_free(&ig->r[i]);
  free(ig->r);
  free(ig);
}

static int push_rule(bw_ignore *ig, rule r) {
  if (ig->n == ig->cap) {
    size_t c = ig->cap ? ig->cap * 2 : 16;
    rule *nr = realloc(ig->r, c * sizeof *nr);
    if (!nr) return -1;
    ig->r = nr;
    ig->cap = c;
  }
  ig->r[ig->n++] = r;
  return 0;
}

static int has_meta(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] == '*' || s[i] == '?' || s[i] == '[' || s[i] == '\\') return 1;
  return 0;
}

/* An unanchored pattern s (one component): a compare where it is a name,
 * "*" + name or name + "*", else a glob of the basename; 0 to leave it to
 * the whole-path glob ("**", ".", "..": what the segment rules of
 * globmatch.c treat apart). */
static int name_rule(const char *s, size_t n, rule *r) {
  if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.') ||
      (n == 2 && s[0] == '*' && s[1] == '*'))
    return 0;
  const char *lit = s;
  size_t ll = n;
  if (!has_meta(s, n)) r->kind = R_NAME;
  else if (n > 1 && s[0] == '*' && !has_meta(s + 1, n - 1))
    r->kind = R_SUFFIX, lit = s + 1, ll = n - 1;
  else if (n > 1 && s[n - 1] == '*' && !has_meta(s, n - 1))
    r->kind = R_PREFIX, ll = n - 1;
  else {
    const char *why;
    if (!(r->g = bw_glob_compile(s, n, 0, &why))) return 0;
    r->kind = R_NAMEGLOB;
    return 1;
  }
  if (!(r->lit = strndup(lit, ll))) return 0;
  r->llen = ll;
  return 1;
}

/* An anchored pattern s (leading "/" dropped) with no glob in it, whose
 * components are plain names, is the one path it names: a compare. */
static int path_rule(const char *s, size_t n, rule *r) {
  if (!n || has_meta(s, n)) return 0;
  for (size_t i = 0, st = 0; i <= n; i++) {
    if (i < n && s[i] != '/') continue;
    size_t l = i - st;
    if (!l || (l == 1 && s[st] == '.') || (l == 2 && s[st] == '.' && s[st + 1] == '.'))
      return 0; /* "a//b", "./a", "..": the glob's rules */
    st = i + 1;
  }
  if (!(r->lit = strndup(s, n))) return 0;
  r->llen = n;
  r->kind = R_PATH;
  return 1;
}

/* One line (without its newline) to a rule; 0 if it holds none. */
static int parse_line(const char *s, size_t n, rule *out) {
  if (n && s[n - 1] == '\r') n--;
  if (!n || s[0] == '#') return 0;
  int neg = 0;
  if (s[0] == '!') neg = 1, s++, n--;
  while (n && s[n - 1] == ' ' && !(n >= 2 && s[n - 2] == '\\')) n--;
  int dir_only = 0;
  if (n && s[n - 1] == '/') dir_only = 1, n--;
  if (!n) return 0;
  int anchored = memchr(s, '/', n) != NULL;
  rule nr = {NULL, NULL, 0, R_GLOB, neg, dir_only};
  if (!anchored && name_rule(s, n, &nr)) {
    *out = nr;
    return 1;
  }
  char buf[4100];
  size_t bl = 0;
  if (n + 4 > sizeof buf) return 0;
  if (!anchored) memcpy(buf, "**/", 3), bl = 3;
  else if (s[0] == '/') s++, n--;
  if (anchored && path_rule(s, n, &nr)) {
    *out = nr;
    return 1;
  }
  memcpy(buf + bl, s, n);
  bl += n;
  const char *why;
  bw_glob *g = bw_glob_compile(buf, bl, 0, &why);
  if (!g) return 0; /* a rule git could not use either */
  *out = (rule){g, NULL, 0, R_GLOB, neg, dir_only};
  return 1;
}

static size_t hash_key(int kind, const char *k, size_t n) {
  size_t h = 1469598103934665603ULL ^ (size_t)kind;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
  return h;
}

/* A one-dot suffix (".o") is an extension: looked up, not compared. */
static int is_ext(const rule *r) {
  return r->kind == R_SUFFIX && r->llen > 1 && r->lit[0] == '.' &&
         !memchr(r->lit + 1, '.', r->llen - 1);
}

static slot *find_slot(const bw_ignore *ig, int kind, const char *k, size_t n) {
  size_t m = ig->hcap - 1;
  for (size_t i = hash_key(kind, k, n) & m;; i = (i + 1) & m) {
    slot *s = &ig->h[i];
    if (!s->key || (s->kind == kind && s->klen == n && !memcmp(s->key, k, n)))
      return s;
  }
}

/* Build the index of ig's rules; without memory, none (every rule is
 * then run in turn, as the index would have chosen). */
static void index_build(bw_ignore *ig) {
  index_free(ig);
  size_t hcap = 16;
  while (hcap < ig->n * 2) hcap *= 2;
  ig->h = calloc(hcap, sizeof *ig->h);
  ig->rest = malloc((ig->n ? ig->n : 1) * sizeof *ig->rest);
  if (!ig->h || !ig->rest) {
    index_free(ig);
    return;
  }
  ig->hcap = hcap;
  for (size_t i = 0; i < ig->n; i++) {
    const rule *r = &ig->r[i];
    if (r->kind != R_NAME && r->kind != R_PATH && !is_ext(r)) {
      ig->rest[ig->nrest++] = i;
      continue;
    }
    int kind = r->kind == R_SUFFIX ? R_SUFFIX : r->kind;
    ig->has_path |= kind == R_PATH;
    slot *s = find_slot(ig, kind, r->lit, r->llen);
    s->key = r->lit;
    s->klen = r->llen;
    s->kind = kind;
    s->any = i + 1;
    if (!r->dir_only) s->file = i + 1;
  }
}

static size_t lookup(const bw_ignore *ig, int kind, const char *k, size_t n,
                     int is_dir) {
  const slot *s = find_slot(ig, kind, k, n);
  return s->key ? (is_dir ? s->any : s->file) : 0;
}

bw_ignore *bw_ignore_parse(const char *text, size_t len) {
  bw_ignore *ig = calloc(1, sizeof *ig);
  if (!ig) return NULL;
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    rule r;
    if (parse_line(p, n, &r) && push_rule(ig, r)) rule_free(&r);
    p += n + 1;
  }
  if (ig->n == 0) {
    bw_ignore_free(ig);
    return NULL;
  }
  index_build(ig);
  return ig;
}

bw_ignore *bw_ignore_merge(bw_ignore *high, bw_ignore *more) {
  if (!more) return high;
  if (!high) return more;
  for (size_t i = 0; i < high->n; i++) /* high after more: last match wins */
    if (push_rule(more, high->r[i])) rule_free(&high->r[i]);
  high->n = 0;
  bw_ignore_free(high);
  index_build(more);
  return more;
}

static int rule_match(const rule *r, const char *path, const char *base,
                      size_t bl) {
  switch (r->kind) {
  case R_NAME: return bl == r->llen && !memcmp(base, r->lit, bl);
  case R_SUFFIX: return bl >= r->llen && !memcmp(base + bl - r->llen, r->lit, r->llen);
  case R_PREFIX: return bl >= r->llen && !memcmp(base, r->lit, r->llen);
  case R_NAMEGLOB: return bw_glob_matchn(r->g, base, bl);
  case R_PATH: return !strcmp(path, r->lit);
  default: return bw_glob_match(r->g, path);
  }
}

static int indexed_match(const bw_ignore *ig, const char *path, int is_dir,
                         const char *base, size_t bl) {
  size_t best = lookup(ig, R_NAME, base, bl, is_dir); /* rule index + 1 */
  const char *dot = memrchr(base, '.', bl);
  if (dot) {
    size_t e = lookup(ig, R_SUFFIX, dot, bl - (size_t)(dot - base), is_dir);
    if (e > best) best = e;
  }
  if (ig->has_path) {
    size_t e = lookup(ig, R_PATH, path, strlen(path), is_dir);
    if (e > best) best = e;
  }
  for (size_t j = ig->nrest; j-- > 0 && ig->rest[j] + 1 > best;) {
    const rule *r = &ig->r[ig->rest[j]];
    if (r->dir_only && !is_dir) continue;
    if (rule_match(r, path, base, bl)) {
      best = ig->rest[j] + 1;
      break;
    }
  }
  return best ? (ig->r[best - 1].neg ? -1 : 1) : 0;
}

int bw_ignore_match(const bw_ignore *ig, const char *path, int is_dir) {
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  size_t bl = strlen(base);
  if (ig->h) return indexed_match(ig, path, is_dir, base, bl);
  for (size_t i = ig->n; i-- > 0;) {
    const rule *r = &ig->r[i];
    if (r->dir_only && !is_dir) continue;
    if (rule_match(r, path, base, bl)) return r->neg ? -1 : 1;
  }
  return 0;
}

bw_ignore *bw_ignore_load(int dirfd, const char *name) {
  struct stat st, st2;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return NULL;
  if (!S_ISREG(st.st_mode) || st.st_size > IGNORE_MAX) return NULL;
  int fd = openat(dirfd, name,
                  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return NULL;
  if (fstat(fd, &st2) < 0 || !S_ISREG(st2.st_mode) || st2.st_ino != st.st_ino) {
    close(fd);
    return NULL;
  }
  size_t cap = (size_t)st2.st_size + 1, len = 0; /* growth after fstat is cut */
  if (cap > IGNORE_MAX) cap = IGNORE_MAX;
  char *buf = malloc(cap);
  while (buf && len < cap) {
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  bw_ignore *ig = buf ? bw_ignore_parse(buf, len) : NULL;
  free(buf);
  return ig;
}
