/*
 * prefilter.c - grep's prefilter: the literals every match of a regex must
 * contain, and a scan that finds them fast.
 *
 * A small parser walks the pattern and keeps, for each concatenation, its
 * best run of plain characters, and for an alternation the union of its
 * branches' sets; anything it does not model gives no prefilter at all
 * rather than a wrong one. The scan tests each literal's two rarest bytes
 * 16 positions at a time (SSE2; a plain loop elsewhere) and compares the
 * whole literal only there. Plain C, no PCRE2, no Lua.
 */
#include <stdint.h>
#include <string.h>

#include "search.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BW_AVX2 1
#endif

/* ---- literals a match must contain ---- */

typedef struct lset {
  int n; /* 0: nothing is known to be required */
  size_t len[BW_MAX_LITS];
  unsigned char s[BW_MAX_LITS][BW_MAX_LIT_LEN];
} lset;

/* Groups nested deeper than this give no prefilter: each level is a few
 * KiB of stack, and the pattern is the agent's. */
enum { MAX_NEST = 32 };

typedef struct parser {
  const unsigned char *p, *end;
  int bail;  /* syntax we do not model: no prefilter at all */
  int pure;  /* so far only plain characters */
  int depth; /* groups open */
} parser;

static size_t lset_min(const lset *l) {
  size_t m = (size_t)-1;
  for (int i = 0; i < l->n; i++)
    if (l->len[i] < m) m = l->len[i];
  return l->n ? m : 0;
}

/* Is a better than b as a prefilter? Longer shortest literal, then fewer. */
static int lset_better(const lset *a, const lset *b) {
  if (!b->n) return a->n > 0;
  if (!a->n) return 0;
  size_t ma = lset_min(a), mb = lset_min(b);
  if (ma != mb) return ma > mb;
  return a->n < b->n;
}

static void run_flush(lset *best, const unsigned char *run, size_t rl) {
  if (!rl) return;
  lset c = {.n = 1};
  c.len[0] = rl > BW_MAX_LIT_LEN ? BW_MAX_LIT_LEN : rl;
  memcpy(c.s[0], run, c.len[0]);
  if (lset_better(&c, best)) *best = c;
}

static void parse_alt(parser *ps, lset *out);

/* Skip a [...] class. */
static void skip_class(parser *ps) {
  const unsigned char *p = ps->p + 1;
  if (p < ps->end && *p == '^') p++;
  if (p < ps->end && *p == ']') p++;
  while (p < ps->end && *p != ']') {
    if (*p == '\\') p++;
    else if (*p == '[' && p + 1 < ps->end && p[1] == ':') {
      const unsigned char *q = p + 2;
      while (q + 1 < ps->end && !(q[0] == ':' && q[1] == ']')) q++;
      p = q + 1;
    }
    p++;
  }
  if (p >= ps->end) ps->bail = 1;
  ps->p = p + 1;
}

/* A quantifier at ps->p: its minimum, or -1 if there is none. */
static long quantifier(parser *ps) {
  const unsigned char *p = ps->p;
  if (p >= ps->end) return -1;
  long min = -1;
  if (*p == '*' || *p == '?') min = 0, p++;
  else if (*p == '+') min = 1, p++;
  else if (*p == '{') {
    const unsigned char *q = p + 1;
    long v = 0;
    int digits = 0;
    while (q < ps->end && *q >= '0' && *q <= '9' && v < 100000) v = v * 10 + (*q++ - '0'), digits++;
    if (q < ps->end && *q == ',' && !digits) {
      ps->bail = 1; /* {,n}: its meaning changed across PCRE2 versions */
      return -1;
    }
    if (q < ps->end && *q == ',') {
      q++;
      while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    if (!digits || q >= ps->end || *q != '}') return -1; /* a literal { */
    min = v;
    p = q + 1;
  } else {
    return -1;
  }
  if (p < ps->end && (*p == '?' || *p == '+')) p++; /* lazy, possessive */
  ps->p = p;
  return min;
}

/* The bytes of the UTF-8 character at p (a lead byte and its
 * continuation bytes, at most 4): PCRE2 (UTF mode) quantifies them as one. */
static size_t utf8_char(const unsigned char *p, const unsigned char *end) {
  size_t k = 1;
  if (*p >= 0xC0)
    while (k < 4 && p + k < end && (p[k] & 0xC0) == 0x80) k++;
  return k;
}

/* One atom: a plain character (its nch > 0 bytes in ch), else sub is what
 * it requires. */
static void parse_atom(parser *ps, unsigned char ch[4], size_t *nch,
                       lset *sub) {
  const unsigned char *p = ps->p;
  *nch = 0;
  sub->n = 0;
  if (*p == '(') {
    ps->pure = 0;
    if (ps->depth == MAX_NEST) {
      ps->bail = 1;
      return;
    }
    p++;
    int look = 0;
    if (p < ps->end && *p == '*') ps->bail = 1; /* (*VERB) */
    if (p < ps->end && *p == '?') {
      p++;
      if (p < ps->end && (*p == ':' || *p == '>' || *p == '|')) p++;
      else if (p < ps->end && (*p == '=' || *p == '!')) p++, look = 1;
      else if (p + 1 < ps->end && *p == '<' && (p[1] == '=' || p[1] == '!')) p += 2, look = 1;
      else if (p < ps->end && (*p == '<' || *p == '\'' || *p == 'P')) {
        if (*p == 'P') p++;
        if (p >= ps->end || (*p != '<' && *p != '\'')) ps->bail = 1;
        char close = *p == '<' ? '>' : '\'';
        while (p < ps->end && *p != close) p++;
        p++;
      } else {
        ps->bail = 1; /* flags, comments, conditionals, recursion */
      }
    }
    ps->p = p;
    ps->depth++;
    parse_alt(ps, sub);
    ps->depth--;
    if (ps->p >= ps->end || *ps->p != ')') ps->bail = 1;
    else ps->p++;
    if (look) sub->n = 0; /* zero-width: requires nothing in the match */
    return;
  }
  if (*p == '[') {
    ps->pure = 0;
    skip_class(ps);
    return;
  }
  if (*p == '.' || *p == '^' || *p == '$') {
    ps->pure = 0;
    ps->p = p + 1;
    return;
  }
  if (*p == '\\') {
    if (p + 1 >= ps->end) {
      ps->bail = 1;
      ps->p = p + 1;
      return;
    }
    unsigned char c = p[1];
    ps->p = p + 2;
    static const char ctl[] = "n\nt\tr\rf\fe\033a\007";
    const char *k = c ? strchr(ctl, c) : NULL;
    if (k && ((k - ctl) % 2) == 0) {
      ch[0] = (unsigned char)k[1];
      *nch = 1;
    } else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9'))) {
      *nch = utf8_char(p + 1, ps->end); /* escaped punctuation, or é */
      memcpy(ch, p + 1, *nch);
      ps->p = p + 1 + *nch;
    } else {
      ps->pure = 0;
      /* \0dd is octal, \N a back-reference or octal: the digits after it
         belong to it ("\000D" is NUL then D, never "00D") */
      while (c >= '0' && c <= '9' && ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
        ps->p++;
      if (c == 'Q' || c == 'E' || c == 'x' || c == 'o' || c == 'c' ||
          c == 'N' || c == 'p' || c == 'P' || c == 'g' || c == 'k')
        ps->bail = 1; /* forms with arguments: not modelled */
    }
    return;
  }
  *nch = utf8_char(p, ps->end);
  memcpy(ch, p, *nch);
  ps->p = p + *nch;
}

/* A concatenation up to '|' or ')'. */
static void parse_concat(parser *ps, lset *best) {
  unsigned char run[BW_MAX_LIT_LEN];
  size_t rl = 0;
  best->n = 0;
  while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')' && !ps->bail) {
    unsigned char ch[4];
    size_t nch;
    lset sub;
    parse_atom(ps, ch, &nch, &sub);
    long min = quantifier(ps);
    if (min >= 0) ps->pure = 0;
    if (nch && min < 0) {
      for (size_t i = 0; i < nch; i++) {
        if (rl == BW_MAX_LIT_LEN) {
          run_flush(best, run, rl);
          rl = 0;
        }
        run[rl++] = ch[i];
      }
      continue;
    }
    run_flush(best, run, rl);
    rl = 0;
    if (nch && min >= 1) { /* x+ : x ends this run and starts the next */
      memcpy(run, ch, nch);
      rl = nch;
      continue;
    }
    if (min != 0 && sub.n && lset_better(&sub, best)) *best = sub;
  }
  run_flush(best, run, rl);
}

static void parse_alt(parser *ps, lset *out) {
  parse_concat(ps, out);
  while (ps->p < ps->end && *ps->p == '|' && !ps->bail) {
    ps->pure = 0;
    ps->p++;
    lset b;
    parse_concat(ps, &b);
    if (!out->n || !b.n || out->n + b.n > BW_MAX_LITS) {
      out->n = 0;
      while (ps->p < ps->end && *ps->p == '|') { /* skip the rest */
        ps->p++;
        parse_concat(ps, &b);
      }
      return;
    }
    for (int i = 0; i < b.n; i++) {
      out->len[out->n] = b.len[i];
      memcpy(out->s[out->n++], b.s[i], b.len[i]);
    }
  }
}

static int is_alpha(int c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

/* Caseless: keep the longest piece of each literal that folds in ASCII
 * only (k and s have non-ASCII case variants: the Kelvin sign, long s). */
static void caseless_pieces(lset *l) {
  for (int i = 0; i < l->n; i++) {
    size_t best = 0, bl = 0, start = 0;
    for (size_t j = 0; j <= l->len[i]; j++) {
      int c = j < l->len[i] ? l->s[i][j] : -1;
      if (c >= 0 && c < 0x80 && (c | 0x20) != 'k' && (c | 0x20) != 's') continue;
      if (j - start > bl) bl = j - start, best = start;
      start = j + 1;
    }
    memmove(l->s[i], l->s[i] + best, bl);
    l->len[i] = bl;
  }
}

/* ---- the scan ---- */

/* Rough rank of how common a byte is in source text (higher = commoner). */
static int commonness(unsigned char c, int fold) {
  static const char common[] =
      " etaoinsrlcdu_pmf\n\thg.,;()=*/bxykvw-\"0123456789>{}[]<:&+#!'|\\";
  if (fold && is_alpha(c)) c |= 0x20;
  const char *p = c ? strchr(common, c) : NULL;
  if (p) return 255 - (int)(p - common);
  if (c >= 'A' && c <= 'Z') return 120;
  return 10;
}

static void lit_init(bw_lit *l, const unsigned char *s, size_t len, int fold) {
  l->s = s;
  l->len = len;
  l->fold = fold;
  l->next = (size_t)-1;
  l->from = 0;
  size_t a = 0, b = len > 1 ? 1 : 0;
  for (size_t i = 0; i < len; i++)
    if (commonness(s[i], fold) < commonness(s[a], fold)) a = i;
  b = a == 0 ? (len > 1 ? 1 : 0) : 0;
  for (size_t i = 0; i < len; i++)
    if (i != a && commonness(s[i], fold) < commonness(s[b], fold)) b = i;
  l->i1 = a < b ? a : b;
  l->i2 = a < b ? b : a;
  l->m1 = fold && is_alpha(s[l->i1]) ? 0x20 : 0;
  l->m2 = fold && is_alpha(s[l->i2]) ? 0x20 : 0;
  l->t1 = s[l->i1] | l->m1;
  l->t2 = s[l->i2] | l->m2;
}

static int lit_eq(const bw_lit *l, const unsigned char *h) {
  if (!l->fold) return memcmp(h, l->s, l->len) == 0;
  for (size_t i = 0; i < l->len; i++) {
    unsigned char a = h[i], b = l->s[i];
    if (a != b && !(is_alpha(a) && (a | 0x20) == (b | 0x20))) return 0;
  }
  return 1;
}

#ifdef BW_AVX2
/* The same two-byte test 64 positions at a time with AVX2, chosen at run
 * time (the build stays x86-64 baseline). The first hit, or (size_t)-1
 * with *stop where the caller's narrower loop goes on. */
__attribute__((target("avx2"))) static size_t
lit_find_avx2(const bw_lit *l, const unsigned char *h, size_t n, size_t last,
              size_t i, size_t *stop) {
  const __m256i t1 = _mm256_set1_epi8((char)l->t1), t2 = _mm256_set1_epi8((char)l->t2);
  const __m256i m1 = _mm256_set1_epi8((char)l->m1), m2 = _mm256_set1_epi8((char)l->m2);
  const unsigned char *p1 = h + l->i1, *p2 = h + l->i2;
  while (i + 64 <= last + 1 && i + l->i2 + 64 <= n) {
    __m256i a0 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(p1 + i)), m1);
    __m256i b0 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(p2 + i)), m2);
    __m256i a1 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(p1 + i + 32)), m1);
    __m256i b1 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(p2 + i + 32)), m2);
    __m256i e0 = _mm256_and_si256(_mm256_cmpeq_epi8(a0, t1), _mm256_cmpeq_epi8(b0, t2));
    __m256i e1 = _mm256_and_si256(_mm256_cmpeq_epi8(a1, t1), _mm256_cmpeq_epi8(b1, t2));
    uint64_t m = (uint64_t)(uint32_t)_mm256_movemask_epi8(e0) |
                 (uint64_t)(uint32_t)_mm256_movemask_epi8(e1) << 32;
    while (m) {
      unsigned j = (unsigned)__builtin_ctzll(m);
      if (lit_eq(l, h + i + j)) return i + j;
      m &= m - 1;
    }
    i += 64;
  }
  *stop = i;
  return (size_t)-1;
}

#endif

/* First occurrence of l in h[from, n), or (size_t)-1. */
static size_t lit_find(const bw_lit *l, const unsigned char *h, size_t n,
                       size_t from) {
  if (l->len == 0) return from <= n ? from : (size_t)-1;
  if (n < l->len) return (size_t)-1;
  size_t last = n - l->len, i = from;
#ifdef BW_AVX2
  if (bw_have_avx2()) {
    size_t hit = lit_find_avx2(l, h, n, last, i, &i);
    if (hit != (size_t)-1) return hit;
  }
#endif
#ifdef __SSE2__
  const __m128i t1 = _mm_set1_epi8((char)l->t1), t2 = _mm_set1_epi8((char)l->t2);
  const __m128i m1 = _mm_set1_epi8((char)l->m1), m2 = _mm_set1_epi8((char)l->m2);
  while (i + 16 <= last + 1 && i + l->i2 + 16 <= n) {
    __m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i *)(h + i + l->i1)), m1);
    __m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i *)(h + i + l->i2)), m2);
    unsigned m = (unsigned)_mm_movemask_epi8(
        _mm_and_si128(_mm_cmpeq_epi8(a, t1), _mm_cmpeq_epi8(b, t2)));
    while (m) {
      unsigned j = (unsigned)__builtin_ctz(m);
      if (lit_eq(l, h + i + j)) return i + j;
      m &= m - 1;
    }
    i += 16;
  }
#endif
  for (; i <= last; i++)
    if ((h[i + l->i1] | l->m1) == l->t1 && (h[i + l->i2] | l->m2) == l->t2 &&
        lit_eq(l, h + i))
      return i;
  return (size_t)-1;
}

/* ---- the prefilter of one pattern ---- */

/* Does ASCII case folding alone find every caseless match of s? */
static int ascii_caseless_safe(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80 || (c | 0x20) == 'k' || (c | 0x20) == 's') return 0;
  }
  return 1;
}

/* The required set of a pattern; 1 if the pattern is nothing but it. */
static int required(lset *set, const char *pat, size_t len, int flags) {
  if (flags & BW_LITS_LITERAL) {
    set->n = 1;
    set->len[0] = len > BW_MAX_LIT_LEN ? BW_MAX_LIT_LEN : len;
    memcpy(set->s[0], pat, set->len[0]);
    return len <= BW_MAX_LIT_LEN;
  }
  parser ps = {(const unsigned char *)pat, (const unsigned char *)pat + len, 0, 1, 0};
  parse_alt(&ps, set);
  if (ps.p < ps.end) ps.bail = 1; /* an unbalanced ')' */
  if (ps.bail) set->n = 0;
  return !ps.bail && ps.pure && set->n == 1 && set->len[0] == len;
}

void bw_lits_init(bw_lits *l, const char *pat, size_t len, int flags) {
  int fold = (flags & BW_LITS_CASELESS) != 0;
  lset set = {0};
  int pure = required(&set, pat, len, flags);
  if (fold && pure && !ascii_caseless_safe(pat, len)) pure = 0;
  if (fold && !pure) caseless_pieces(&set);
  if ((flags & BW_LITS_MULTILINE) || memchr(pat, '\n', len)) pure = 0;
  l->n = 0;
  /* a prefilter pays off only with literals of two bytes or more */
  if (set.n && (lset_min(&set) >= 2 || (pure && set.len[0] >= 1))) {
    for (int i = 0; i < set.n; i++) {
      memcpy(l->s[i], set.s[i], set.len[i]);
      lit_init(&l->lit[i], l->s[i], set.len[i], fold);
    }
    l->n = set.n;
  }
  l->pure = pure && l->n; /* the empty literal goes to PCRE2 */
}

void bw_lits_reset(bw_lit *v, const bw_lits *l) {
  for (int i = 0; i < l->n; i++) {
    v[i] = l->lit[i];
    v[i].next = (size_t)-1;
    v[i].from = (size_t)-1; /* nothing cached */
  }
}

size_t bw_lits_next(bw_lit *v, int n, const unsigned char *h, size_t len,
                    size_t from) {
  size_t best = (size_t)-1;
  for (int i = 0; i < n; i++) {
    bw_lit *l = &v[i];
    int valid = l->from != (size_t)-1 && l->from <= from &&
                (l->next == (size_t)-1 || l->next >= from);
    if (!valid) {
      l->next = lit_find(l, h, len, from);
      l->from = from;
    }
    if (l->next < best) best = l->next;
  }
  return best;
}
