/*
 * fuzz_ignore.c - gitignore rules (ignore.c): the parser on any text and
 * the matcher on the paths a walk gives it.
 *
 * Input: NUL-separated parts: an ignore file, a second one (lower
 * precedence, as info/exclude below .gitignore), then paths. Checked:
 *  - a file means what its lines mean one by one: the last line whose
 *    rule matches decides (a line parsed alone says whether it matches);
 *  - merged, the higher file decides wherever one of its rules matches;
 *  - a rule ending in "/" never matches a file;
 *  - a one-line rule without "/" matches at every depth: "x/" + path as
 *    path;
 *  - answers are 1, -1 or 0.
 */
#include "fuzz.h"
#include "search.h"


static int match(const bw_ignore *ig, const char *path, int is_dir) {
  int m = ig ? bw_ignore_match(ig, path, is_dir) : 0;
  FZ_CHECK(m == 1 || m == -1 || m == 0, "match returned %d", m);
  return m;
}

/* The last line of text whose rule matches path, parsed on its own. */
static int by_lines(const char *text, size_t len, const char *path, int is_dir) {
  int m = 0;
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    bw_ignore *one = bw_ignore_parse(p, n);
    int r = match(one, path, is_dir);
    if (r) m = r;
    bw_ignore_free(one);
    p += n + 1;
  }
  return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 14) return 0;
  fz_part part[12];
  int np = fz_split(data, size, part, 12);
  if (np < 3) return 0;
  fz_part hi = part[0], lo = part[1];
  bw_ignore *h = bw_ignore_parse(hi.p, hi.n);
  bw_ignore *l = bw_ignore_parse(lo.p, lo.n);
  bw_ignore *merged = bw_ignore_merge(bw_ignore_parse(hi.p, hi.n),
                                      bw_ignore_parse(lo.p, lo.n));
  /* a single rule line: no newline, no "/" but a last one, not "!" */
  const char *nl = memchr(hi.p, '\n', hi.n), *sl = memchr(hi.p, '/', hi.n);
  int one_line = !nl && hi.n && hi.p[0] != '!' && (!sl || sl == hi.p + hi.n - 1);
  int dir_rules = 1; /* every rule of hi ends in "/" (gitignore(5)'s trimming) */
  for (const char *p = hi.p, *end = hi.p + hi.n; p < end;) {
    const char *e = memchr(p, '\n', (size_t)(end - p));
    const char *next = e ? e + 1 : end;
    size_t n = (size_t)((e ? e : end) - p);
    if (n && p[n - 1] == '\r') n--;
    if (n && p[0] != '#') {
      const char *s = p[0] == '!' ? p + 1 : p;
      size_t k = n - (size_t)(s - p);
      while (k && s[k - 1] == ' ' && !(k >= 2 && s[k - 2] == '\\')) k--;
      if (k && s[k - 1] != '/') dir_rules = 0;
    }
    p = next;
  }
  for (int i = 2; i < np; i++) {
    if (!fz_walk_path(part[i].p, part[i].n)) continue;
    char *path = fz_str(part[i]);
    for (int d = 0; d < 2; d++) {
      int mh = match(h, path, d), ml = match(l, path, d);
      FZ_CHECK(mh == by_lines(hi.p, hi.n, path, d),
               "'%s' (dir %d): the file says %d, its lines %d", path, d, mh,
               by_lines(hi.p, hi.n, path, d));
      FZ_CHECK(match(merged, path, d) == (mh ? mh : ml),
               "'%s' (dir %d): merged says %d, high %d, low %d", path, d,
               match(merged, path, d), mh, ml);
      if (dir_rules && !d) FZ_CHECK(mh == 0, "'%s': a directory rule matched a file", path);
      if (one_line) {
        char deeper[8200];
        snprintf(deeper, sizeof deeper, "x/%s", path);
        FZ_CHECK(match(h, deeper, d) == mh, "'%s' %d, '%s' %d: not at every depth",
                 path, mh, deeper, match(h, deeper, d));
      }
    }
    free(path);
  }
  bw_ignore_free(h);
  bw_ignore_free(l);
  bw_ignore_free(merged);
  return 0;
}
