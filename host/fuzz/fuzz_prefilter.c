/*
 * fuzz_prefilter.c - grep's prefilter (prefilter.c) against PCRE2: the
 * literals it says every match contains must be there wherever the regex
 * matches, or grep misses lines.
 *
 * Input: one flags byte (1: literal, 2: ignore case, 4: multiline), then
 * the pattern, a NUL, and the subject. The pattern is compiled as grep.c
 * compiles it (UTF, MATCH_INVALID_UTF, MULTILINE, newline ANYCRLF, a
 * literal escaped); one PCRE2 refuses is skipped. Checked, as grep.c
 * searches:
 *  - line by line: every line the regex matches (alone) holds a literal hit
 *    that starts on it (bw_lits_next from the line's start, below its end);
 *    a pure prefilter, which grep trusts with no regex, hits exactly the
 *    lines the regex matches;
 *  - multiline: a subject the regex matches anywhere holds a hit;
 *  - bw_lits_next finds the first hit, whatever it cached before.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "fuzz.h"
#include "search.h"

enum { F_LITERAL = 1, F_CASELESS = 2, F_MULTILINE = 4 };

static int is_alnum(unsigned char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static pcre2_code *compile(const char *pat, size_t len, int flags) {
  char *src = malloc(2 * len + 1);
  size_t n = 0;
  if (!src) abort();
  for (size_t i = 0; i < len; i++) { /* grep.c's regex_source */
    unsigned char c = (unsigned char)pat[i];
    if ((flags & F_LITERAL) && c < 0x80 && !is_alnum(c)) src[n++] = '\\';
    src[n++] = (char)c;
  }
  uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE;
  if (flags & F_CASELESS) opts |= PCRE2_CASELESS;
  pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
  pcre2_set_newline(cc, PCRE2_NEWLINE_ANYCRLF);
  int err;
  PCRE2_SIZE off;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)src, n, opts, &err, &off, cc);
  pcre2_compile_context_free(cc);
  free(src);
  return re;
}

/* 1 match, 0 none, -1 PCRE2 gave up (limits): no verdict. */
static int matches(pcre2_code *re, pcre2_match_data *md,
                   pcre2_match_context *mc, const char *s, size_t n) {
  int rc = pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, mc);
  if (rc >= 0) return 1;
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  return -1;
}

/* The first hit of v in h[from, len) by brute force. */
static size_t brute(const bw_lits *l, const unsigned char *h, size_t len,
                    size_t from, int fold) {
  for (size_t i = from; i < len; i++)
    for (int k = 0; k < l->n; k++) {
      const bw_lit *t = &l->lit[k];
      if (t->len > len - i) continue;
      size_t j = 0;
      for (; j < t->len; j++) {
        unsigned char a = h[i + j], b = t->s[j];
        if (a == b) continue;
        int alpha = ((a | 0x20) >= 'a' && (a | 0x20) <= 'z');
        if (!(fold && alpha && (a | 0x20) == (b | 0x20))) break;
      }
      if (j == t->len) return i;
    }
  return (size_t)-1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 1 << 14) return 0;
  int flags = data[0] & 7;
  fz_part part[2];
  if (fz_split(data + 1, size - 1, part, 2) < 2) return 0;
  fz_part pat = part[0], subj = part[1];
  bw_lits lits;
  int lf = (flags & F_LITERAL ? BW_LITS_LITERAL : 0) |
           (flags & F_CASELESS ? BW_LITS_CASELESS : 0) |
           (flags & F_MULTILINE ? BW_LITS_MULTILINE : 0);
  bw_lits_init(&lits, pat.p, pat.n, lf);
  FZ_CHECK(lits.n >= 0 && lits.n <= BW_MAX_LITS, "%d literals", lits.n);
  FZ_CHECK(!lits.pure || lits.n == 1, "pure with %d literals", lits.n);
  pcre2_code *re = compile(pat.p, pat.n, flags);
  if (!re) return 0;
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
  pcre2_match_context *mc = pcre2_match_context_create(NULL);
  pcre2_set_match_limit(mc, 200000);
  pcre2_set_depth_limit(mc, 2000);
  const unsigned char *h = (const unsigned char *)subj.p;
  bw_lit v[BW_MAX_LITS];
  bw_lits_reset(v, &lits);
  int fold = (flags & F_CASELESS) != 0;

  if (flags & F_MULTILINE) {
    int m = matches(re, md, mc, subj.p, subj.n);
    if (m == 1 && lits.n)
      FZ_CHECK(bw_lits_next(v, lits.n, h, subj.n, 0) != (size_t)-1,
               "the regex matches, no literal is in the subject");
  } else {
    for (size_t ls = 0; ls <= subj.n;) {
      const char *nl = memchr(subj.p + ls, '\n', subj.n - ls);
      size_t le = nl ? (size_t)(nl - subj.p) : subj.n;
      int m = matches(re, md, mc, subj.p + ls, le - ls);
      if (lits.n) {
        size_t hit = bw_lits_next(v, lits.n, h, subj.n, ls);
        FZ_CHECK(hit == brute(&lits, h, subj.n, ls, fold),
                 "bw_lits_next from %zu says %zu", ls, hit);
        int on_line = hit != (size_t)-1 && hit <= le;
        if (m == 1)
          FZ_CHECK(on_line, "line at %zu matches, no literal starts on it", ls);
        if (lits.pure && m >= 0)
          FZ_CHECK(on_line == m, "pure literal: hit %d, regex %d on line at %zu",
                   on_line, m, ls);
      }
      if (!nl) break;
      ls = le + 1;
    }
  }
  pcre2_match_context_free(mc);
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  return 0;
}
