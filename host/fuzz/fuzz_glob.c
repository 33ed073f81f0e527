/*
 * fuzz_glob.c - the glob matcher (glob.c) against a plain backtracking
 * matcher written from the documented semantics, and the answers the glob
 * search builds on.
 *
 * Input: one flags byte (1: {a,b} braces, 2: ASCII case folding), then
 * NUL-separated parts: the pattern, then paths. Checked:
 *  - without braces, compiling fails exactly on an empty pattern, a ".."
 *    segment or too many segments, and bw_glob_match agrees with the
 *    reference (segments split at '/' unless escaped, "." and empty ones
 *    dropped, "**" spanning zero or more names and, last, at least one;
 *    '*' any bytes of a name, '?' one UTF-8 character, [...] one byte,
 *    '\' escaping);
 *  - bw_glob_matchn on the same bytes says the same;
 *  - with folding, swapping the case of a path changes nothing;
 *  - the walk may prune: every directory above a matching path is viable,
 *    and a matching path lies below the literal prefix.
 */
#include "fuzz.h"
#include "search.h"

enum { MAX_SEGS = 128, MAX_PAT = 4096 };

/* ---- the reference ---- */

typedef struct rseg {
  const char *p;
  size_t n;
  int star2;
} rseg;

typedef struct rpat {
  rseg s[MAX_SEGS + 1];
  int n, plus, bad;
} rpat;

static void rparse(rpat *r, const char *p, size_t n) {
  memset(r, 0, sizeof *r);
  size_t start = 0;
  for (size_t i = 0; i <= n && !r->bad; i++) {
    if (i < n && p[i] == '\\' && i + 1 < n && p[i + 1] != '/') {
      i++; /* an escaped byte never ends a segment */
      continue;
    }
    if (i < n && p[i] != '/') continue;
    const char *s = p + start;
    size_t l = i - start;
    start = i + 1;
    if (l == 0 || (l == 1 && s[0] == '.')) continue;
    if (l == 2 && s[0] == '.' && s[1] == '.') {
      r->bad = 1;
      break;
    }
    int star2 = l == 2 && s[0] == '*' && s[1] == '*';
    if (star2 && r->n && r->s[r->n - 1].star2) continue;
    if (r->n == MAX_SEGS) {
      r->bad = 1;
      break;
    }
    r->s[r->n++] = (rseg){s, l, star2};
  }
  if (!r->n) r->bad = 1;
  if (!r->bad) r->plus = r->s[r->n - 1].star2;
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
static int other_case(int c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c >= 'a' && c <= 'z' ? c - 32 : c;
}

/* A bracket expression at p[0] == '[': its length, 0 if unclosed. */
static size_t rclass_len(const char *p, size_t n) {
  size_t i = 1;
  if (i < n && (p[i] == '!' || p[i] == '^')) i++;
  if (i < n && p[i] == ']') i++;
  for (; i < n; i++) {
    if (p[i] == '\\' && i + 1 < n) i++;
    else if (p[i] == ']') return i + 1;
  }
  return 0;
}

/* Does byte c fall in the set of the expression p[0, n)? Items are bytes,
 * '\'-escaped bytes, or ranges lo-hi ('-' before the closing ']' is a
 * byte); folding tries c's other case too. */
static int rclass_has(const char *p, size_t n, int c, int cf) {
  size_t i = 1, end = n - 1; /* p[end] is the closing ']' */
  int neg = 0, hit = 0;
  if (p[i] == '!' || p[i] == '^') neg = 1, i++;
  size_t first = i;
  while (i < end) {
    if (p[i] == ']' && i != first) break;
    int lo = (unsigned char)p[i];
    if (p[i] == '\\' && i + 1 < end) lo = (unsigned char)p[++i];
    i++;
    int hi = lo;
    if (i + 1 < end && p[i] == '-' && p[i + 1] != ']') {
      i++;
      if (p[i] == '\\' && i + 1 < end) i++;
      hi = (unsigned char)p[i];
      i++;
    }
    if ((c >= lo && c <= hi) || (cf && other_case(c) >= lo && other_case(c) <= hi))
      hit = 1;
  }
  return hit != neg;
}

static int rseg_match(const char *p, size_t pl, const char *s, size_t sl,
                      int cf, signed char *memo, size_t pi, size_t si) {
  signed char *m = &memo[pi * (sl + 1) + si];
  if (*m >= 0) return *m;
  int r;
  if (pi == pl) r = si == sl;
  else if (p[pi] == '*')
    r = rseg_match(p, pl, s, sl, cf, memo, pi + 1, si) ||
        (si < sl && rseg_match(p, pl, s, sl, cf, memo, pi, si + 1));
  else if (si == sl) r = 0;
  else if (p[pi] == '?') {
    size_t k = 1;
    while (si + k < sl && ((unsigned char)s[si + k] & 0xC0) == 0x80) k++;
    r = rseg_match(p, pl, s, sl, cf, memo, pi + 1, si + k);
  } else {
    size_t cl = p[pi] == '[' ? rclass_len(p + pi, pl - pi) : 0;
    int c = (unsigned char)s[si];
    if (cl) {
      r = rclass_has(p + pi, cl, c, cf) &&
          rseg_match(p, pl, s, sl, cf, memo, pi + cl, si + 1);
    } else {
      size_t adv = p[pi] == '\\' && pi + 1 < pl ? 2 : 1;
      int pc = (unsigned char)p[pi + adv - 1];
      r = (cf ? lower(pc) == lower(c) : pc == c) &&
          rseg_match(p, pl, s, sl, cf, memo, pi + adv, si + 1);
    }
  }
  return *m = (signed char)r;
}

static int rseg_ok(const rseg *g, const char *s, size_t sl, int cf) {
  signed char *memo = malloc((g->n + 1) * (sl + 1));
  if (!memo) abort();
  memset(memo, -1, (g->n + 1) * (sl + 1));
  int r = rseg_match(g->p, g->n, s, sl, cf, memo, 0, 0);
  free(memo);
  return r;
}

typedef struct comps {
  const char *p[4096];
  size_t n[4096];
  int k;
} comps;

/* The names of a path as glob.c walks them: split at '/', a final "/"
 * adds no name, a leading one an empty name. */
static void rsplit(comps *c, const char *s, size_t n) {
  c->k = 0;
  const char *p = s, *end = s + n;
  while (p < end && c->k < 4096) {
    const char *e = memchr(p, '/', (size_t)(end - p));
    size_t l = e ? (size_t)(e - p) : (size_t)(end - p);
    c->p[c->k] = p;
    c->n[c->k++] = l;
    if (!e) break;
    p = e + 1;
  }
}

static int rmatch(const rpat *r, const comps *c, int cf, signed char *memo,
                  int i, int k) {
  signed char *m = &memo[i * (c->k + 1) + k];
  if (*m >= 0) return *m;
  int res;
  if (i == r->n) res = k == c->k;
  else if (r->s[i].star2 && i == r->n - 1) res = k < c->k; /* one name or more */
  else if (r->s[i].star2)
    res = rmatch(r, c, cf, memo, i + 1, k) ||
          (k < c->k && rmatch(r, c, cf, memo, i, k + 1));
  else
    res = k < c->k && rseg_ok(&r->s[i], c->p[k], c->n[k], cf) &&
          rmatch(r, c, cf, memo, i + 1, k + 1);
  return *m = (signed char)res;
}

static int reference(const rpat *r, const char *path, size_t len, int cf) {
  static comps c;
  rsplit(&c, path, len);
  signed char *memo = malloc((size_t)(r->n + 1) * (size_t)(c.k + 1));
  if (!memo) abort();
  memset(memo, -1, (size_t)(r->n + 1) * (size_t)(c.k + 1));
  int m = rmatch(r, &c, cf, memo, 0, 0);
  free(memo);
  return m;
}

/* ---- checks ---- */


static void check_path(const bw_glob *g, const rpat *r, int flags,
                       fz_part path) {
  if (memchr(path.p, '\0', path.n)) return; /* a C string cannot say it */
  char *s = fz_str(path);
  int cf = (flags & BW_GLOB_CASEFOLD) != 0;
  int m = bw_glob_match(g, s);
  FZ_CHECK(m == 0 || m == 1, "match returned %d", m);
  FZ_CHECK(bw_glob_matchn(g, path.p, path.n) == m, "matchn differs on '%s'", s);
  if (r) FZ_CHECK(reference(r, s, path.n, cf) == m,
                  "'%s': glob.c says %d, the reference %d", s, m, !m);
  if (cf) {
    char *t = fz_str(path);
    for (size_t i = 0; i < path.n; i++) t[i] = (char)other_case((unsigned char)t[i]);
    FZ_CHECK(bw_glob_match(g, t) == m, "folding: '%s' and '%s' differ", s, t);
    free(t);
  }
  if (m && fz_walk_path(s, path.n)) {
    char dir[8192];
    for (size_t i = 0; i < path.n; i++) {
      if (s[i] != '/') continue;
      memcpy(dir, s, i);
      dir[i] = '\0';
      FZ_CHECK(bw_glob_viable(g, dir), "'%s' matches, yet '%s' is pruned", s, dir);
    }
    char pre[4200];
    size_t pl = bw_glob_prefix(g, pre, sizeof pre);
    FZ_CHECK(pl == strlen(pre), "prefix length");
    FZ_CHECK(!pl || (!strncmp(s, pre, pl) && s[pl] == '/'),
             "'%s' matches but is not below the prefix '%s'", s, pre);
  }
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 8192) return 0;
  int flags = data[0] & (BW_GLOB_BRACES | BW_GLOB_CASEFOLD);
  fz_part part[10];
  int np = fz_split(data + 1, size - 1, part, 10);
  const char *why = NULL;
  bw_glob *g = bw_glob_compile(part[0].p, part[0].n, flags, &why);
  /* braces expand first: the reference has no braces */
  int refable = (!(flags & BW_GLOB_BRACES) || !memchr(part[0].p, '{', part[0].n)) &&
                !memchr(part[0].p, '\0', part[0].n);
  static rpat r;
  if (refable) rparse(&r, part[0].p, part[0].n);
  if (!g) {
    FZ_CHECK(why && *why, "no reason");
    if (refable && part[0].n <= MAX_PAT)
      FZ_CHECK(r.bad, "compile refused a pattern the reference takes: %s", why);
    return 0;
  }
  if (refable) FZ_CHECK(!r.bad, "compiled a pattern the reference refuses");
  for (int i = 1; i < np; i++) check_path(g, refable ? &r : NULL, flags, part[i]);
  bw_glob_free(g);
  return 0;
}
