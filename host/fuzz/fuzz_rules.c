/*
 * fuzz_rules.c - policies' declared path rules (rules.c): the fast kinds
 * (NAME, SUFFIX, TAIL, INSIDE, EXACT, UNDER, BASE) and their byte and hash
 * filters must answer exactly as glob.c's matcher does on the whole
 * pattern, for every operation, first rule winning.
 *
 * Input: NUL-separated parts. The first holds one byte per rule (at most
 * 6): bits 0-1 the number of patterns minus one, bits 2-3 the number of
 * excepts, bit 4 case folding, bits 5-7 the operations (read, list,
 * write; delete when none). The rules take their patterns and excepts
 * from the parts that follow, in order; the parts left over are paths,
 * checked in the form walks give them ("a/b", "." for the root).
 */
#include "fuzz.h"
#include "search.h"

enum { MAX_RULES = 6, MAX_PARTS = 48 };

typedef struct ref_rule {
  bw_glob *pat[4], *exc[3];
  int np, ne, ops, id;
} ref_rule;

static const int OPS[] = {BW_OP_READ, BW_OP_LIST, BW_OP_WRITE, BW_OP_DELETE};

static int any_match(bw_glob *const *g, int n, const char *path, size_t len) {
  for (int i = 0; i < n; i++)
    if (bw_glob_matchn(g[i], path, len)) return 1;
  return 0;
}

static int ref_match(const ref_rule *r, int nr, const char *path, size_t len,
                     int op) {
  while (len > 1 && path[len - 1] == '/') len--;
  for (int i = 0; i < nr; i++)
    if ((r[i].ops & op) && any_match(r[i].pat, r[i].np, path, len) &&
        !any_match(r[i].exc, r[i].ne, path, len))
      return r[i].id;
  return -1;
}

/* In-root paths as rules see them: names, none empty, "." or "..", and
 * maybe a trailing "/"; or "." alone. */
static int walk_path(const char *s, size_t n) {
  if (n == 1 && s[0] == '.') return 1;
  while (n > 1 && s[n - 1] == '/') n--;
  return fz_walk_path(s, n);
}

static void free_ref(ref_rule *r) {
  for (int i = 0; i < r->np; i++) bw_glob_free(r->pat[i]);
  for (int i = 0; i < r->ne; i++) bw_glob_free(r->exc[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 8192) return 0;
  fz_part part[MAX_PARTS];
  int np = fz_split(data, size, part, MAX_PARTS);
  int next = 1, nr = 0;
  bw_rules *rs = bw_rules_new();
  ref_rule ref[MAX_RULES];
  char *keep[MAX_PARTS];
  int nkeep = 0;
  for (size_t k = 0; k < part[0].n && k < MAX_RULES; k++) {
    int b = (unsigned char)part[0].p[k];
    int npat = (b & 3) + 1, nexc = b >> 2 & 3, fold = b >> 4 & 1;
    int ops = b >> 5 & 7;
    if (!ops) ops = BW_OP_DELETE;
    if (next + npat + nexc > np) break;
    const char *pats[4], *excs[3];
    ref_rule r = {.np = 0, .ne = 0, .ops = ops, .id = (int)k};
    int ok = 1, flags = BW_GLOB_BRACES | (fold ? BW_GLOB_CASEFOLD : 0);
    for (int i = 0; i < npat + nexc; i++) {
      char *s = keep[nkeep++] = fz_str(part[next + i]);
      const char *why;
      bw_glob *g = bw_glob_compile(s, strlen(s), flags, &why);
      if (!g) ok = 0;
      if (i < npat) pats[i] = s, r.pat[r.np++] = g;
      else excs[i - npat] = s, r.exc[r.ne++] = g;
    }
    next += npat + nexc;
    const char *why = NULL;
    int rc = bw_rules_add(rs, pats, npat, excs, nexc, ops, fold, (int)k, &why);
    FZ_CHECK((rc == BW_OK) == ok, "rules_add says %s (%s), glob.c says %s",
             bw_code_name(rc), why ? why : "", ok ? "fine" : "bad");
    if (ok) ref[nr++] = r;
    else free_ref(&r);
  }
  FZ_CHECK(bw_rules_count(rs) == nr, "count %d, added %d", bw_rules_count(rs), nr);
  for (int i = next; i < np; i++) {
    if (!walk_path(part[i].p, part[i].n)) continue;
    for (int o = 0; o < 4; o++) {
      int got = bw_rules_match(rs, part[i].p, part[i].n, OPS[o]);
      int want = ref_match(ref, nr, part[i].p, part[i].n, OPS[o]);
      FZ_CHECK(got == want, "'%.*s' op %d: rules.c says rule %d, glob.c %d",
               (int)part[i].n, part[i].p, OPS[o], got, want);
    }
  }
  for (int i = 0; i < nr; i++) free_ref(&ref[i]);
  for (int i = 0; i < nkeep; i++) free(keep[i]);
  bw_rules_free(rs);
  return 0;
}
