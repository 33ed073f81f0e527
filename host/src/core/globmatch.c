/*
 * globmatch.c - the glob matcher shared by the glob search, grep's include
 * and exclude, gitignore rules and policy rules. It depends on nothing
 * else of the core (the search that uses it is glob.c).
 *
 * A pattern is split into '/'-separated segments after {a,b} expansion.
 * Within a segment, *, ? and [...] are matched by the two-pointer method
 * (linear, no backtracking blow-up); across segments, "**" is matched by
 * running the segments as a small NFA, so a path is matched in
 * O(segments x path components) whatever the pattern, and the same NFA
 * tells whether a directory can still hold a match (pruning).
 */
#include <stdlib.h>
#include <string.h>

#include "search.h"

/* MAX_EXPANDED bounds the {a,b} expansion, and with it the cost of a match:
 * at most MAX_EXPANDED pattern bytes per path byte. */
enum { MAX_ALTS = 256, MAX_SEGS = 128, MAX_PAT = 4096, MAX_EXPANDED = 65536 };
enum { SEG_LIT, SEG_GLOB, SEG_STAR2 };

typedef struct seg {
  char *p;
  size_t len;
  int kind;
} seg;

typedef struct alt {
  seg *s;
  int n;
  int plus; /* the last segment is "**" and needs at least one segment */
} alt;

struct bw_glob {
  alt *a;
  int n;
  int fold;
};

static int fold(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* ---- one segment ---- */

/* Length of the class starting at p[0] == '[', or 0 if it is not closed. */
static size_t class_len(const char *p, size_t n) {
  size_t i = 1;
  if (i < n && (p[i] == '!' || p[i] == '^')) i++;
  if (i < n && p[i] == ']') i++; /* a leading ] is literal */
  for (; i < n; i++) {
    if (p[i] == '\\' && i + 1 < n) i++;
    else if (p[i] == ']') return i + 1;
  }
  return 0;
}

static int class_has(const char *p, size_t n, int c, int cf) {
  size_t i = 1;
  int neg = 0, hit = 0;
  if (p[i] == '!' || p[i] == '^') neg = 1, i++;
  for (int first = 1; i < n - 1; first = 0) {
    if (p[i] == ']' && !first) break;
    int lo = (unsigned char)p[i];
    if (p[i] == '\\' && i + 1 < n - 1) lo = (unsigned char)p[++i];
    i++;
    int hi = lo;
    if (i + 1 < n - 1 && p[i] == '-' && p[i + 1] != ']') {
      hi = (unsigned char)p[i + 1];
      if (p[i + 1] == '\\' && i + 2 < n - 1) hi = (unsigned char)p[i + 2], i++;
      i += 2;
    }
    if (c >= lo && c <= hi) hit = 1;
    if (cf && fold(c) != c && fold(c) >= lo && fold(c) <= hi) hit = 1;
    if (cf && c >= 'a' && c <= 'z' && c - 32 >= lo && c - 32 <= hi) hit = 1;
  }
  return hit != neg;
}

/* Does the pattern token at p[*pi] match the subject at s[*si]? Advances. */
static int one(const char *p, size_t pl, size_t *pi, const char *s,
               size_t sl, size_t *si, int cf) {
  int c = (unsigned char)s[*si];
  char pc = p[*pi];
  if (pc == '?') {
    size_t k = 1; /* one UTF-8 character */
    while (*si + k < sl && ((unsigned char)s[*si + k] & 0xC0) == 0x80) k++;
    *pi += 1;
    *si += k;
    return 1;
  }
  if (pc == '[') {
    size_t cl = class_len(p + *pi, pl - *pi);
    if (cl) {
      if (!class_has(p + *pi, cl, c, cf)) return 0;
      *pi += cl;
      *si += 1;
      return 1;
    }
  }
  size_t adv = 1;
  if (pc == '\\' && *pi + 1 < pl) pc = p[*pi + 1], adv = 2;
  if (cf ? fold((unsigned char)pc) != fold(c) : (unsigned char)pc != c)
    return 0;
  *pi += adv;
  *si += 1;
  return 1;
}

static int seg_match(const seg *g, const char *s, size_t sl, int cf) {
  if (g->kind == SEG_LIT && !cf)
    return g->len == sl && memcmp(g->p, s, sl) == 0;
  const char *p = g->p;
  size_t pl = g->len, pi = 0, si = 0, star_p = (size_t)-1, star_s = 0;
  while (si < sl) {
    if (pi < pl && p[pi] == '*') {
      star_p = ++pi;
      star_s = si;
      continue;
    }
    if (pi < pl && one(p, pl, &pi, s, sl, &si, cf)) continue;
    if (star_p == (size_t)-1) return 0;
    pi = star_p; /* let the last * take one more byte */
    si = ++star_s;
  }
  while (pi < pl && p[pi] == '*') pi++;
  return pi == pl;
}

/* ---- compiling ---- */

static int is_meta(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] == '*' || p[i] == '?' || p[i] == '[' || p[i] == '\\') return 1;
  return 0;
}

/* Add one segment to a; with a->s NULL only count it (bw_glob_check),
 * so the check and the compile say the same of every pattern. last: the
 * kind of the segment added before, -1 for none. */
static int add_seg(alt *a, int *last, const char *p, size_t n, const char **why) {
  if (n == 0 || (n == 1 && p[0] == '.')) return 0; /* "a//b", "./a" */
  if (n == 2 && p[0] == '.' && p[1] == '.') {
    *why = "'..' is not allowed in a pattern";
    return -1;
  }
  int kind = (n == 2 && p[0] == '*' && p[1] == '*') ? SEG_STAR2
             : is_meta(p, n)                        ? SEG_GLOB
                                                    : SEG_LIT;
  if (kind == SEG_STAR2 && *last == SEG_STAR2)
    return 0; /* "**" twice is "**" */
  if (a->n == MAX_SEGS) {
    *why = "pattern has too many segments";
    return -1;
  }
  if (a->s) {
    seg *g = &a->s[a->n];
    if (!(g->p = malloc(n + 1))) {
      *why = "out of memory";
      return -1;
    }
    memcpy(g->p, p, n);
    g->p[n] = '\0';
    g->len = n;
    g->kind = kind;
  }
  *last = kind;
  a->n++;
  return 0;
}

/* count: only check the segments (a->s stays NULL). */
static int compile_alt(alt *a, const char *p, size_t n, int flags, int count,
                       const char **why) {
  /* room for as many segments as it can have, not MAX_SEGS: a policy's
   * rules compile dozens of globs at every start (docs/benchmarks.md,
   * Start-up); add_seg stops at MAX_SEGS either way */
  size_t segs = 1;
  for (size_t i = 0; !count && i < n && segs < MAX_SEGS; i++) segs += p[i] == '/';
  if (!count && !(a->s = calloc(segs, sizeof *a->s))) {
    *why = "out of memory";
    return -1;
  }
  size_t start = 0;
  int last = -1;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && p[i] == '\\' && i + 1 < n && p[i + 1] != '/') {
      i++;
      continue;
    }
    if (i < n && p[i] != '/') continue;
    if (add_seg(a, &last, p + start, i - start, why)) return -1;
    start = i + 1;
  }
  if (a->n == 0) {
    *why = "empty pattern";
    return -1;
  }
  a->plus = !(flags & BW_GLOB_DIR_ITSELF) && last == SEG_STAR2;
  return 0;
}

typedef struct expand {
  char **v;
  size_t *len;
  size_t *stack; /* find_brace's, one entry a byte of the pattern */
  size_t total;  /* bytes of the alternatives so far */
  int n;
  const char *why;
} expand;

/* Find the leftmost '{' whose matching '}' exists with a comma directly
 * inside. One pass with a stack of the open braces (st: an entry a byte,
 * position << 1 | comma seen), so an unclosed "{{{{..." costs O(n), not
 * O(n^2) as scanning from each '{' in turn would. */
static int find_brace(const char *p, size_t n, size_t *st, size_t *open,
                      size_t *close) {
  size_t depth = 0, best = (size_t)-1;
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '\\') {
      i++;
      continue;
    }
    if (p[i] == '{') st[depth++] = i << 1;
    else if (p[i] == ',' && depth) st[depth - 1] |= 1;
    else if (p[i] == '}' && depth) {
      size_t o = st[--depth];
      if ((o & 1) && (o >> 1) < best) best = o >> 1, *close = i;
    }
  }
  if (best == (size_t)-1) return 0;
  *open = best;
  return 1;
}

static int expand_braces(expand *e, const char *p, size_t n, int depth) {
  size_t o = 0, c = 0;
  if (depth > 16 || !find_brace(p, n, e->stack, &o, &c)) {
    if (e->n == MAX_ALTS) {
      e->why = "too many {a,b} alternatives";
      return -1;
    }
    if ((e->total += n) > MAX_EXPANDED) {
      e->why = "pattern expands to more than 64 KiB of {a,b} alternatives";
      return -1;
    }
    if (!(e->v[e->n] = malloc(n + 1))) return -1;
    memcpy(e->v[e->n], p, n);
    e->v[e->n][n] = '\0';
    e->len[e->n++] = n;
    return 0;
  }
  size_t s = o + 1, lvl = 0;
  for (size_t j = o + 1; j <= c; j++) {
    if (p[j] == '\\') {
      j++;
      continue;
    }
    if (p[j] == '{') lvl++;
    else if (p[j] == '}' && lvl) lvl--;
    else if ((p[j] == ',' && lvl == 0) || j == c) {
      size_t nl = o + (j - s) + (n - c - 1);
      char *t = malloc(nl + 1);
      if (!t) return -1;
      memcpy(t, p, o);
      memcpy(t + o, p + s, j - s);
      memcpy(t + o + (j - s), p + c + 1, n - c - 1);
      int rc = expand_braces(e, t, nl, depth + 1);
      free(t);
      if (rc) return rc;
      s = j + 1;
    }
  }
  return 0;
}

void bw_glob_free(bw_glob *g) {
  if (!g) return;
  for (int i = 0; i < g->n; i++) {
    for (int j = 0; j < g->a[i].n; j++) free(g->a[i].s[j].p);
    free(g->a[i].s);
  }
  free(g->a);
  free(g);
}

bw_glob *bw_glob_compile(const char *pat, size_t len, int flags,
                         const char **why) {
  *why = "out of memory";
  if (len > MAX_PAT) {
    *why = "pattern too long";
    return NULL;
  }
  if (memchr(pat, '\0', len)) {
    *why = "pattern contains a NUL byte";
    return NULL;
  }
  /* only the first e.n of v and len are used; the brace stack holds at
   * most one entry a byte */
  expand e = {malloc(MAX_ALTS * sizeof(char *)), malloc(MAX_ALTS * sizeof(size_t)),
              malloc((len + 1) * sizeof(size_t)), 0, 0, NULL};
  bw_glob *g = calloc(1, sizeof *g);
  int rc = -1;
  if (e.v && e.len && e.stack && g) {
    if (flags & BW_GLOB_BRACES) rc = expand_braces(&e, pat, len, 0);
    else rc = expand_braces(&e, pat, len, 99); /* no expansion: one alt */
    if (rc && e.why) *why = e.why;
  }
  if (!rc && !(g->a = calloc((size_t)e.n, sizeof *g->a))) rc = -1;
  for (int i = 0; !rc && i < e.n; i++) {
    rc = compile_alt(&g->a[i], e.v[i], e.len[i], flags, 0, why);
    g->n = i + 1;
  }
  for (int i = 0; e.v && i < e.n; i++) free(e.v[i]);
  free(e.v);
  free(e.len);
  free(e.stack);
  if (rc) {
    bw_glob_free(g);
    return NULL;
  }
  g->fold = !!(flags & BW_GLOB_CASEFOLD);
  return g;
}

/* What bw_glob_compile says of the pattern, without building it: a
 * pattern without {a,b} alternatives is checked in place (no allocation);
 * one with them is compiled and freed. rules.c checks its literal
 * patterns so, which it compares as strings and never runs (a policy's
 * rules are checked at every start; docs/benchmarks.md, Start-up). */
int bw_glob_check(const char *pat, size_t len, int flags, const char **why) {
  if ((flags & BW_GLOB_BRACES) && memchr(pat, '{', len)) {
    bw_glob *g = bw_glob_compile(pat, len, flags, why);
    bw_glob_free(g);
    return g ? 0 : -1;
  }
  if (len > MAX_PAT) {
    *why = "pattern too long";
    return -1;
  }
  if (memchr(pat, '\0', len)) {
    *why = "pattern contains a NUL byte";
    return -1;
  }
  alt a = {NULL, 0, 0};
  return compile_alt(&a, pat, len, flags, 1, why);
}

/* ---- matching ---- */

/* Epsilon moves: a "**" (other than a final one) may match no segment. */
static void closure(const alt *a, unsigned char *st) {
  for (int i = 0; i < a->n; i++)
    if (st[i] && a->s[i].kind == SEG_STAR2 && !(a->plus && i == a->n - 1))
      st[i + 1] = 1;
}

/* Run the NFA over path[0, len); returns the state set in st (n+1 entries). */
static int run(const alt *a, const char *path, size_t len, int cf,
               unsigned char *st) {
  unsigned char nx[MAX_SEGS + 1];
  memset(st, 0, (size_t)a->n + 1);
  st[0] = 1;
  closure(a, st);
  const char *p = path, *end = path + len;
  while (p < end) {
    const char *e = memchr(p, '/', (size_t)(end - p));
    size_t l = e ? (size_t)(e - p) : (size_t)(end - p);
    memset(nx, 0, (size_t)a->n + 1);
    int any = 0;
    for (int i = 0; i < a->n; i++) {
      if (!st[i]) continue;
      if (a->s[i].kind == SEG_STAR2) {
        nx[i] = nx[i + 1] = 1;
        any = 1;
      } else if (seg_match(&a->s[i], p, l, cf)) {
        nx[i + 1] = 1;
        any = 1;
      }
    }
    if (!any) return 0;
    closure(a, nx);
    memcpy(st, nx, (size_t)a->n + 1);
    if (!e) break;
    p = e + 1;
  }
  return 1;
}

int bw_glob_matchn(const bw_glob *g, const char *path, size_t len) {
  unsigned char st[MAX_SEGS + 1];
  /* Without the NFA: one segment against a one-component path, and
   * "**" + "/" + X (X one segment) against the last component, which is
   * all the NFA would test of it ("a/" and "" are left to the NFA). */
  const char *slash = len ? memrchr(path, '/', len) : NULL;
  int one = len && !slash, last = len && path[len - 1] != '/';
  const char *base = slash ? slash + 1 : path;
  size_t bl = len - (size_t)(base - path);
  for (int i = 0; i < g->n; i++) {
    const alt *a = &g->a[i];
    if (one && a->n == 1 && a->s[0].kind != SEG_STAR2) {
      if (seg_match(&a->s[0], path, len, g->fold)) return 1;
    } else if (last && a->n == 2 && a->s[0].kind == SEG_STAR2 && a->s[1].kind != SEG_STAR2) {
      if (seg_match(&a->s[1], base, bl, g->fold)) return 1;
    } else if (run(a, path, len, g->fold, st) && st[a->n]) return 1;
  }
  return 0;
}

int bw_glob_match(const bw_glob *g, const char *path) {
  return bw_glob_matchn(g, path, strlen(path));
}

int bw_glob_viable(const bw_glob *g, const char *dir) {
  unsigned char st[MAX_SEGS + 1];
  if (!*dir) return 1;
  for (int i = 0; i < g->n; i++) {
    if (!run(&g->a[i], dir, strlen(dir), g->fold, st)) continue;
    for (int k = 0; k < g->a[i].n; k++)
      if (st[k]) return 1;
  }
  return 0;
}

int bw_glob_is_basename(const bw_glob *g) {
  for (int i = 0; i < g->n; i++)
    if (g->a[i].n != 1 || g->a[i].s[0].kind == SEG_STAR2) return 0;
  return 1;
}

size_t bw_glob_prefix(const bw_glob *g, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  if (g->fold || g->n == 0) return 0;
  for (int k = 0;; k++) { /* leading literal segments shared by every alt */
    const seg *s0 = k < g->a[0].n - 1 ? &g->a[0].s[k] : NULL;
    if (!s0 || s0->kind != SEG_LIT) return len;
    for (int i = 1; i < g->n; i++) {
      const alt *a = &g->a[i];
      if (k >= a->n - 1 || a->s[k].kind != SEG_LIT || a->s[k].len != s0->len ||
          memcmp(a->s[k].p, s0->p, s0->len))
        return len;
    }
    if (len + s0->len + 2 > size) return len;
    if (len) out[len++] = '/';
    memcpy(out + len, s0->p, s0->len);
    len += s0->len;
    out[len] = '\0';
  }
}

int bw_glob_names_hidden(const bw_glob *g) {
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->a[i].n; k++)
      if (g->a[i].s[k].p[0] == '.') return 1;
  return 0;
}
