/*
 * grepre.c - grep's pattern, compiled once per call (grepscan.c runs it): the
 * literals every match must contain (prefilter.c), and PCRE2 (JIT when the
 * host allows it) unless those literals are the whole pattern. The regex
 * source starts with a callout (after any option verbs) so a stop is seen
 * at every start position PCRE2 tries.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grepint.h"

static __thread char errbuf[256]; /* detail of a failed compile */
static __thread char why[200];    /* PCRE2's own words for it */

/* ---- the compiled search ---- */

static int is_alnum(int c) {
  return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9');
}


static int compile_error(int code) {
  pcre2_get_error_message(code, (PCRE2_UCHAR *)why, sizeof why);
  snprintf(errbuf, sizeof errbuf, "invalid pattern: %s", why);
  bw_fail_on(BW_INVALID_ARGUMENT, BW_ON_PATTERN, 0, errbuf);
  return bw_fail_reason(BW_INVALID_ARGUMENT, why);
}

/* Length of the option verbs a pattern starts with ((*UCP), (*CRLF),
 * (*LIMIT_MATCH=9)...), which must stay first. */
static size_t leading_verbs(const char *s, size_t n) {
  size_t i = 0;
  while (i + 2 < n && s[i] == '(' && s[i + 1] == '*') {
    size_t j = i + 2;
    while (j < n &&
           ((s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= '0' && s[j] <= '9') ||
            s[j] == '_' || s[j] == '='))
      j++;
    if (j >= n || s[j] != ')') break;
    i = j + 1;
  }
  return i;
}

/* The pattern as PCRE2 source: a literal is escaped, and a callout comes
 * first (after the option verbs) so PCRE2 reports every start position it
 * tries. A callout is never repeatable, so no quantifier can attach to it,
 * and it always returns 0 but to stop: the matches are the pattern's. */
static char *regex_source(const bw_grep_opts *o, size_t *len) {
  static const char co[] = "(?C1)";
  size_t cl = sizeof co - 1;
  char *s = malloc(o->pattern_len * 2 + cl + 1);
  if (!s) return NULL;
  size_t n = 0;
  if (!o->literal) {
    size_t v = leading_verbs(o->pattern, o->pattern_len);
    memcpy(s, o->pattern, v);
    memcpy(s + v, co, cl);
    memcpy(s + v + cl, o->pattern + v, o->pattern_len - v);
    *len = o->pattern_len + cl;
    return s;
  }
  memcpy(s, co, cl);
  n = cl;
  for (size_t i = 0; i < o->pattern_len; i++) {
    unsigned char c = (unsigned char)o->pattern[i];
    if (c < 0x80 && !is_alnum(c)) s[n++] = '\\';
    s[n++] = (char)c;
  }
  *len = n;
  return s;
}

static int compile_regex(matcher *m, const bw_grep_opts *o) {
  size_t len;
  char *src = regex_source(o, &len);
  if (!src) return BW_ENOMEM;
  uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE;
  if (o->ignore_case) opts |= PCRE2_CASELESS;
  int err;
  PCRE2_SIZE off;
  pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
  if (!cc) {
    free(src);
    return BW_ENOMEM;
  }
  pcre2_set_newline(cc, PCRE2_NEWLINE_ANYCRLF); /* $ before \r\n too */
  m->re = pcre2_compile((PCRE2_SPTR)src, len, opts, &err, &off, cc);
  pcre2_compile_context_free(cc);
  free(src);
  if (!m->re) return compile_error(err);
  uint32_t jit = 0;
  pcre2_config(PCRE2_CONFIG_JIT, &jit);
  if (jit) pcre2_jit_compile(m->re, PCRE2_JIT_COMPLETE); /* else: interpreter */
  return BW_OK;
}

int bwg_matcher_init(matcher *m, const bw_grep_opts *o) {
  memset(m, 0, sizeof *m);
  if (memchr(o->pattern, '\0', o->pattern_len))
    return bw_fail_on(BW_INVALID_ARGUMENT, BW_ON_PATTERN, 0, "pattern contains a NUL byte");
  int flags = (o->literal ? BW_LITS_LITERAL : 0) |
              (o->ignore_case ? BW_LITS_CASELESS : 0) |
              (o->multiline ? BW_LITS_MULTILINE : 0);
  bw_lits_init(&m->lits, o->pattern, o->pattern_len, flags);
  return m->lits.pure ? BW_OK : compile_regex(m, o);
}
