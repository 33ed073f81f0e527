/*
 * edit.c - the edit engine: find each old_text in a file's bytes, splice in
 * its new_text, and describe the change as a unified diff built from the
 * spans (no diff algorithm needed). Matching climbs a ladder of levels:
 * exact bytes, then whole lines with trailing whitespace ignored, with
 * indentation ignored (new_text re-indented to the block found), with
 * Unicode punctuation folded. A level that finds several places is an
 * error, never a guess. Line endings stay the file's: an LF old_text
 * matches CRLF lines, and new_text gets the line ending of the span it
 * replaces, so a mixed file is byte-identical outside the edits. The BOM
 * is never matched or moved. A failure says where: the nearest line and
 * what differs, or every matching line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edit.h"

enum { EOL_NONE, EOL_LF, EOL_CRLF, EOL_MIXED };
enum { BINARY_PROBE = 8192, MIN_SIMILAR = 30 };
#define NO_LINE ((size_t)-1) /* a match that is not whole lines */
#define NO_POS ((size_t)-1)  /* no match at this position */

static const char *const level_names[BW_LEVELS] = {
    "exact", "trailing_whitespace", "indentation", "unicode"};

const char *bw_level_name(int level) {
  return level >= 0 && level < BW_LEVELS ? level_names[level] : "none";
}

/* ---- growable buffer ---- */

typedef struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

static int sb_room(sbuf *b, size_t more) {
  if (b->oom) return 0;
  if (b->len + more <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + more) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}

static void sb_put(sbuf *b, const void *s, size_t n) {
  if (n && sb_room(b, n)) {
    memcpy(b->p + b->len, s, n);
    b->len += n;
  }
}

static void sb_putc(sbuf *b, char c) { sb_put(b, &c, 1); }

/* ---- the file as lines ---- */

typedef struct view {
  const char *s; /* the body: the bytes after a BOM */
  size_t n;
  size_t bom;
  int eol;
  size_t *ls; /* line starts; ls[nl] == n */
  size_t nl;
} view;

static int view_init(view *v, const char *data, size_t len) {
  memset(v, 0, sizeof *v);
  bw_text_info in;
  bw_text_scan(data, len, &in);
  v->bom = in.bom ? 3 : 0;
  v->s = data + v->bom;
  v->n = len - v->bom;
  v->eol = in.lf == 0 ? EOL_NONE
           : in.crlf == 0 ? EOL_LF
           : in.crlf == in.lf ? EOL_CRLF
                              : EOL_MIXED;
  v->nl = in.lf + (v->n > 0 && v->s[v->n - 1] != '\n');
  v->ls = malloc((v->nl + 1) * sizeof *v->ls);
  if (!v->ls) return BW_ENOMEM;
  size_t i = 0, pos = 0;
  v->ls[i++] = 0;
  while (pos < v->n) {
    const char *q = memchr(v->s + pos, '\n', v->n - pos);
    if (!q) break;
    pos = (size_t)(q - v->s) + 1;
    if (pos < v->n) v->ls[i++] = pos;
  }
  v->ls[v->nl] = v->n; /* also fixes ls[0] of an empty file */
  return BW_OK;
}

/* End of line i's text: before its "\n" or "\r\n". */
static size_t line_end(const view *v, size_t i) {
  size_t e = v->ls[i + 1];
  if (e > v->ls[i] && v->s[e - 1] == '\n') e--;
  if (e > v->ls[i] && v->s[e - 1] == '\r') e--;
  return e;
}

/* The line holding pos (nl for the end of a file ending in a newline). */
static size_t line_of(const view *v, size_t pos) {
  size_t lo = 0, hi = v->nl;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (v->ls[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* ---- patterns ---- */

typedef struct slice {
  const char *p;
  size_t n;
} slice;

typedef struct pat {
  char *old; /* old_text with LF line endings and no BOM */
  size_t olen;
  char *neu; /* new_text likewise */
  size_t nlen;
  char *old_crlf; /* old in CRLF, for CRLF files */
  size_t old_crlf_len;
  char *neu_crlf;
  size_t neu_crlf_len;
  slice *lines; /* old's lines (its final newline excluded) */
  size_t k;
  int trail_nl;  /* old ends with a newline */
  slice *norm;   /* old's lines at the level in use */
  sbuf normbuf;  /* bytes of folded lines */
  int norm_level;
} pat;

/* A copy of s with the BOM dropped and CRLF turned into LF. */
static char *lf_copy(const char *s, size_t n, size_t *out) {
  if (n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) s += 3, n -= 3;
  char *d = malloc(n + 1);
  if (!d) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i++)
    if (!(s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')) d[o++] = s[i];
  d[o] = '\0';
  *out = o;
  return d;
}

/* LF text with every "\n" written as eol. */
static char *eol_copy(const char *s, size_t n, const char *eol, size_t *out) {
  size_t el = strlen(eol), extra = 0;
  for (size_t i = 0; i < n; i++) extra += s[i] == '\n' ? el - 1 : 0;
  char *d = malloc(n + extra + 1);
  if (!d) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\n') {
      memcpy(d + o, eol, el);
      o += el;
    } else {
      d[o++] = s[i];
    }
  }
  *out = o;
  return d;
}

static void pat_free(pat *p) {
  free(p->old);
  free(p->neu);
  free(p->old_crlf);
  free(p->neu_crlf);
  free(p->lines);
  free(p->norm);
  free(p->normbuf.p);
}

static int pat_init(pat *p, const bw_edit *e) {
  memset(p, 0, sizeof *p);
  p->norm_level = -1;
  p->old = lf_copy(e->old_text, e->old_len, &p->olen);
  p->neu = lf_copy(e->new_text, e->new_len, &p->nlen);
  if (!p->old || !p->neu) return BW_ENOMEM;
  if (p->olen == 0) return bw_fail(BW_INVALID_ARGUMENT, "old_text is empty");
  if (p->olen == p->nlen && !memcmp(p->old, p->neu, p->olen))
    return bw_fail(BW_INVALID_ARGUMENT, "old_text and new_text are the same");
  p->trail_nl = p->old[p->olen - 1] == '\n';
  size_t body = p->olen - (size_t)p->trail_nl, k = 1;
  for (size_t i = 0; i < body; i++) k += p->old[i] == '\n';
  p->lines = malloc(k * sizeof *p->lines);
  p->norm = malloc(k * sizeof *p->norm);
  if (!p->lines || !p->norm) return BW_ENOMEM;
  size_t start = 0, j = 0;
  for (size_t i = 0; i <= body; i++) {
    if (i == body || p->old[i] == '\n') {
      p->lines[j].p = p->old + start;
      p->lines[j++].n = i - start;
      start = i + 1;
    }
  }
  p->k = k;
  return BW_OK;
}

/* ---- line normalisation for the loose levels ---- */

static int is_hws(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static slice trim(const char *s, size_t n, int left) {
  while (n > 0 && is_hws(s[n - 1])) n--;
  while (left && n > 0 && is_hws(*s)) s++, n--;
  return (slice){s, n};
}

/* The ASCII stand-in of a Unicode punctuation or space code point, or 0
 * (the set apply_patch folds). */
static int fold_cp(unsigned cp) {
  if ((cp >= 0x2010 && cp <= 0x2015) || cp == 0x2212) return '-';
  if (cp >= 0x2018 && cp <= 0x201B) return '\'';
  if (cp >= 0x201C && cp <= 0x201F) return '"';
  if (cp == 0xA0 || (cp >= 0x2002 && cp <= 0x200A) || cp == 0x202F ||
      cp == 0x205F || cp == 0x3000)
    return ' ';
  return 0;
}

/* Length of the UTF-8 sequence at s (1 for a stray byte); its code point. */
static size_t utf8_next(const unsigned char *s, size_t n, unsigned *cp) {
  unsigned c = s[0];
  size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
               : (c >> 3) == 30 ? 4 : 1;
  if (len > n) len = 1;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) len = 1;
  if (len == 1) {
    *cp = c;
    return 1;
  }
  *cp = c & (0x7F >> len);
  for (size_t i = 1; i < len; i++) *cp = (*cp << 6) | (s[i] & 0x3F);
  return len;
}

/* Fold s into b; map (if not NULL) gets each output byte's offset in s,
 * and one more entry for the end. */
static void fold(const char *s, size_t n, sbuf *b, sbuf *map) {
  b->len = 0;
  if (map) map->len = 0;
  size_t i = 0;
  while (i < n) {
    unsigned cp;
    size_t l = utf8_next((const unsigned char *)s + i, n - i, &cp);
    int f = l > 1 ? fold_cp(cp) : 0;
    size_t outn = f ? 1 : l;
    for (size_t j = 0; map && j < outn; j++) sb_put(map, &i, sizeof i);
    if (f) sb_putc(b, (char)f);
    else sb_put(b, s + i, l);
    i += l;
  }
  if (map) sb_put(map, &i, sizeof i);
}

/* A line's text as a level compares it (folded text lands in scratch). */
static slice norm_line(const char *s, size_t n, int level, sbuf *scratch) {
  if (level == BW_LEVEL_RSTRIP) return trim(s, n, 0);
  if (level == BW_LEVEL_INDENT) return trim(s, n, 1);
  fold(s, n, scratch, NULL);
  return trim(scratch->p ? scratch->p : "", scratch->len, 1);
}

/* old's lines at a level, computed once per level. */
static int pat_norm(pat *p, int level) {
  if (p->norm_level == level) return BW_OK;
  sbuf tmp = {0};
  p->normbuf.len = 0;
  size_t *off = malloc(p->k * sizeof *off);
  if (!off) return BW_ENOMEM;
  for (size_t j = 0; j < p->k; j++) {
    slice s = norm_line(p->lines[j].p, p->lines[j].n, level, &tmp);
    off[j] = p->normbuf.len;
    sb_put(&p->normbuf, s.p, s.n);
    p->norm[j].n = s.n;
  }
  free(tmp.p);
  if (p->normbuf.oom || tmp.oom) {
    free(off);
    return BW_ENOMEM;
  }
  for (size_t j = 0; j < p->k; j++)
    p->norm[j].p = (p->normbuf.p ? p->normbuf.p : "") + off[j];
  free(off);
  p->norm_level = level;
  return BW_OK;
}

/* ---- finding old_text ---- */

typedef struct match {
  size_t start, end;
  size_t line; /* first file line of a whole-line match, else NO_LINE */
} match;

typedef struct mlist {
  match *m;
  size_t n, cap;
} mlist;

static int ml_add(mlist *ml, size_t start, size_t end, size_t line) {
  if (ml->n == ml->cap) {
    size_t cap = ml->cap ? ml->cap * 2 : 16;
    match *m = realloc(ml->m, cap * sizeof *m);
    if (!m) return BW_ENOMEM;
    ml->m = m;
    ml->cap = cap;
  }
  ml->m[ml->n++] = (match){start, end, line};
  return BW_OK;
}

/* old at s[at...] with "\n" in old matching "\n" or "\r\n": the end, or
 * NO_POS when it does not match there. */
static size_t flex_at(const view *v, size_t at, const char *p, size_t pl) {
  size_t j = at;
  for (size_t i = 0; i < pl; i++) {
    if (p[i] == '\n') {
      if (j < v->n && v->s[j] == '\n') j++;
      else if (j + 1 < v->n && v->s[j] == '\r' && v->s[j + 1] == '\n') j += 2;
      else return NO_POS;
    } else if (j >= v->n || v->s[j] != p[i]) {
      return NO_POS;
    } else {
      j++;
    }
  }
  return j;
}

/* Next exact match at or after from; 0 when there is none. */
static int exact_next(const view *v, pat *p, size_t from, size_t *s,
                      size_t *e) {
  if (from >= v->n) return 0;
  if (v->eol != EOL_MIXED) { /* one line-ending style: a plain search */
    const char *q = v->eol == EOL_CRLF ? p->old_crlf : p->old;
    size_t ql = v->eol == EOL_CRLF ? p->old_crlf_len : p->olen;
    const char *hit = memmem(v->s + from, v->n - from, q, ql);
    if (!hit) return 0;
    *s = (size_t)(hit - v->s);
    *e = *s + ql;
    return 1;
  }
  const char *nl = memchr(p->old, '\n', p->olen);
  size_t seg = nl ? (size_t)(nl - p->old) : p->olen;
  for (size_t at = from; at < v->n;) {
    size_t cand, next;
    if (seg > 0) {
      const char *hit = memmem(v->s + at, v->n - at, p->old, seg);
      if (!hit) return 0;
      cand = (size_t)(hit - v->s);
      next = cand + 1;
    } else { /* old starts with a newline: a CRLF's match starts at its CR */
      const char *q = memchr(v->s + at, '\n', v->n - at);
      if (!q) return 0;
      cand = (size_t)(q - v->s);
      next = cand + 1;
      if (cand > 0 && v->s[cand - 1] == '\r') {
        if (cand - 1 < at) { /* the CR is before from: inside a match seen */
          at = next;
          continue;
        }
        cand--;
      }
    }
    size_t end = flex_at(v, cand, p->old, p->olen);
    if (end != NO_POS) {
      *s = cand;
      *e = end;
      return 1;
    }
    at = next;
  }
  return 0;
}

static int find_exact(const view *v, pat *p, int disjoint, mlist *ml) {
  if (v->eol == EOL_CRLF && !p->old_crlf) {
    p->old_crlf = eol_copy(p->old, p->olen, "\r\n", &p->old_crlf_len);
    if (!p->old_crlf) return BW_ENOMEM;
  }
  size_t from = 0, s, e;
  while (exact_next(v, p, from, &s, &e)) {
    if (ml_add(ml, s, e, NO_LINE)) return BW_ENOMEM;
    from = disjoint ? e : s + 1; /* overlapping places make it ambiguous */
  }
  return BW_OK;
}

/* Do file lines i.. match old's lines at the level? */
static int window_at(const view *v, const pat *p, size_t i, int level,
                     sbuf *scratch) {
  for (size_t j = 0; j < p->k; j++) {
    size_t a = v->ls[i + j];
    slice f = norm_line(v->s + a, line_end(v, i + j) - a, level, scratch);
    if (f.n != p->norm[j].n || memcmp(f.p, p->norm[j].p, f.n)) return 0;
  }
  return 1;
}

static int find_lines(const view *v, pat *p, int level, int disjoint,
                      mlist *ml) {
  if (p->k > v->nl) return BW_OK;
  int rc = pat_norm(p, level);
  if (rc) return rc;
  sbuf scratch = {0};
  for (size_t i = 0; i + p->k <= v->nl && !rc; i++) {
    if (!window_at(v, p, i, level, &scratch)) continue;
    size_t last = i + p->k - 1;
    size_t end = p->trail_nl ? v->ls[last + 1] : line_end(v, last);
    rc = ml_add(ml, v->ls[i], end, i);
    if (disjoint) i = last;
  }
  if (scratch.oom) rc = BW_ENOMEM;
  free(scratch.p);
  return rc;
}

/* A one-line old_text inside lines, Unicode punctuation folded. */
static int find_folded(const view *v, pat *p, int disjoint, mlist *ml) {
  int rc = pat_norm(p, BW_LEVEL_UNICODE);
  if (rc || p->k != 1 || p->norm[0].n == 0) return rc;
  sbuf line = {0}, map = {0};
  slice want = p->norm[0];
  for (size_t i = 0; i < v->nl && !rc; i++) {
    size_t a = v->ls[i];
    fold(v->s + a, line_end(v, i) - a, &line, &map);
    if (line.oom || map.oom) rc = BW_ENOMEM;
    const size_t *m = (const size_t *)map.p;
    for (size_t at = 0; !rc && line.len >= want.n && at <= line.len - want.n;) {
      const char *hit = memmem(line.p + at, line.len - at, want.p, want.n);
      if (!hit) break;
      size_t o = (size_t)(hit - line.p);
      rc = ml_add(ml, a + m[o], a + m[o + want.n], NO_LINE);
      at = disjoint ? o + want.n : o + 1;
    }
  }
  free(line.p);
  free(map.p);
  return rc;
}

static int find_level(const view *v, pat *p, int level, int disjoint,
                      mlist *ml) {
  ml->n = 0;
  if (level == BW_LEVEL_EXACT) return find_exact(v, p, disjoint, ml);
  int rc = find_lines(v, p, level, disjoint, ml);
  if (!rc && ml->n == 0 && level == BW_LEVEL_UNICODE)
    rc = find_folded(v, p, disjoint, ml);
  return rc;
}

/* ---- the replacement text of a match ---- */

/* The line ending new text takes at [start, end): the file's, or in a
 * mixed file the one the span itself uses (else its neighbours'). */
static const char *eol_at(const view *v, size_t start, size_t end) {
  if (v->eol == EOL_CRLF) return "\r\n";
  if (v->eol != EOL_MIXED) return "\n";
  size_t lf = 0, crlf = 0;
  for (size_t i = start; i < end; i++) {
    if (v->s[i] != '\n') continue;
    lf++;
    crlf += i > 0 && v->s[i - 1] == '\r';
  }
  if (lf) return crlf * 2 >= lf ? "\r\n" : "\n";
  const char *q = end < v->n ? memchr(v->s + end, '\n', v->n - end) : NULL;
  if (!q && start > 0) q = memrchr(v->s, '\n', start);
  return q && q > v->s && q[-1] == '\r' ? "\r\n" : "\n";
}

static slice lead(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  return (slice){s, i};
}

static int all_of(slice s, char c) {
  for (size_t i = 0; i < s.n; i++)
    if (s.p[i] != c) return 0;
  return s.n > 0;
}

/* Indentation found for old's lines: pairs (old's indent, the file's). */
typedef struct reindent {
  slice from[64], to[64];
  size_t n;
  char unit_from; /* ' ' -> '\t' (or back) conversion, if seen */
  size_t unit;    /* spaces per tab in that conversion */
} reindent;

static void reindent_learn(reindent *ri, const view *v, const pat *p,
                           size_t first) {
  memset(ri, 0, sizeof *ri);
  for (size_t j = 0; j < p->k; j++) {
    slice pl = p->lines[j];
    if (trim(pl.p, pl.n, 1).n == 0) continue; /* blank lines say nothing */
    size_t a = v->ls[first + j];
    slice pi = lead(pl.p, pl.n), fi = lead(v->s + a, line_end(v, first + j) - a);
    size_t h = 0;
    while (h < ri->n && (ri->from[h].n != pi.n || memcmp(ri->from[h].p, pi.p, pi.n)))
      h++;
    if (h == ri->n && ri->n < 64) {
      ri->from[ri->n] = pi;
      ri->to[ri->n++] = fi;
    }
    if (!ri->unit && all_of(pi, ' ') && all_of(fi, '\t') && pi.n % fi.n == 0)
      ri->unit_from = ' ', ri->unit = pi.n / fi.n;
    if (!ri->unit && all_of(pi, '\t') && all_of(fi, ' ') && fi.n % pi.n == 0)
      ri->unit_from = '\t', ri->unit = fi.n / pi.n;
  }
}

/* Extra indentation beyond a known prefix, in the file's characters. */
static void put_extra(sbuf *b, const reindent *ri, slice extra) {
  if (ri->unit_from == ' ') {
    size_t run = 0;
    for (size_t i = 0; i < extra.n; i++) {
      if (extra.p[i] != ' ') {
        for (; run; run--) sb_putc(b, ' ');
        sb_putc(b, extra.p[i]);
      } else if (++run == ri->unit) {
        sb_putc(b, '\t');
        run = 0;
      }
    }
    for (; run; run--) sb_putc(b, ' ');
  } else if (ri->unit_from == '\t') {
    for (size_t i = 0; i < extra.n; i++) {
      if (extra.p[i] != '\t') sb_putc(b, extra.p[i]);
      else for (size_t u = 0; u < ri->unit; u++) sb_putc(b, ' ');
    }
  } else {
    sb_put(b, extra.p, extra.n);
  }
}

/* new_text re-indented line by line: a line whose indentation starts with
 * one of old's takes the file's instead. */
static void reindent_apply(const reindent *ri, const char *s, size_t n,
                           sbuf *b) {
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '\n') continue;
    slice line = {s + start, i - start}, ind = lead(line.p, line.n);
    size_t best = ri->n;
    for (size_t h = 0; h < ri->n; h++)
      if (ri->from[h].n <= ind.n && !memcmp(ri->from[h].p, ind.p, ri->from[h].n) &&
          (best == ri->n || ri->from[h].n > ri->from[best].n))
        best = h;
    if (best < ri->n && trim(line.p, line.n, 1).n > 0) {
      sb_put(b, ri->to[best].p, ri->to[best].n);
      put_extra(b, ri, (slice){ind.p + ri->from[best].n, ind.n - ri->from[best].n});
      sb_put(b, line.p + ind.n, line.n - ind.n);
    } else {
      sb_put(b, line.p, line.n);
    }
    if (i < n) sb_putc(b, '\n');
    start = i + 1;
  }
}

typedef struct span {
  size_t start, end;
  const char *repl;
  size_t rlen;
  int owned;
  size_t edit;
} span;

typedef struct spans {
  span *s;
  size_t n, cap;
} spans;

static int spans_add(spans *sp, span x) {
  if (sp->n == sp->cap) {
    size_t cap = sp->cap ? sp->cap * 2 : 16;
    span *s = realloc(sp->s, cap * sizeof *s);
    if (!s) return BW_ENOMEM;
    sp->s = s;
    sp->cap = cap;
  }
  sp->s[sp->n++] = x;
  return BW_OK;
}

static void spans_free(spans *sp) {
  for (size_t i = 0; i < sp->n; i++)
    if (sp->s[i].owned) free((char *)sp->s[i].repl);
  free(sp->s);
}

/* The span of one match, with its replacement in the right line ending. */
static int make_span(const view *v, pat *p, const match *m, int level,
                     size_t edit, span *out) {
  *out = (span){m->start, m->end, p->neu, p->nlen, 0, edit};
  const char *eol = eol_at(v, m->start, m->end);
  int crlf = eol[0] == '\r';
  if (level >= BW_LEVEL_INDENT && m->line != NO_LINE) {
    reindent ri;
    sbuf b = {0};
    reindent_learn(&ri, v, p, m->line);
    reindent_apply(&ri, p->neu, p->nlen, &b);
    if (b.oom) return BW_ENOMEM;
    out->repl = b.p ? b.p : strdup("");
    out->rlen = b.len;
    out->owned = 1;
    if (!out->repl) return BW_ENOMEM;
    if (crlf) {
      char *c = eol_copy(out->repl, out->rlen, "\r\n", &out->rlen);
      free((char *)out->repl);
      out->repl = c;
      if (!c) return BW_ENOMEM;
    }
    return BW_OK;
  }
  if (!crlf) return BW_OK;
  if (!p->neu_crlf) {
    p->neu_crlf = eol_copy(p->neu, p->nlen, "\r\n", &p->neu_crlf_len);
    if (!p->neu_crlf) return BW_ENOMEM;
  }
  out->repl = p->neu_crlf;
  out->rlen = p->neu_crlf_len;
  return BW_OK;
}

/* ---- diagnostics ---- */

/* A line of text for a message: no line ending, cut on a UTF-8 boundary. */
static void excerpt(char *dst, const char *s, size_t n) {
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
  if (n >= BW_DIAG_TEXT) {
    n = BW_DIAG_TEXT - 4;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    memcpy(dst, s, n);
    memcpy(dst + n, "...", 4);
    return;
  }
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static void file_excerpt(char *dst, const view *v, size_t i) {
  excerpt(dst, v->s + v->ls[i], line_end(v, i) - v->ls[i]);
}

/* Equal once every space and tab is dropped? */
static int same_but_spaces(slice a, slice b) {
  size_t i = 0, j = 0;
  for (;;) {
    while (i < a.n && is_hws(a.p[i])) i++;
    while (j < b.n && is_hws(b.p[j])) j++;
    if (i == a.n || j == b.n) return i == a.n && j == b.n;
    if (a.p[i++] != b.p[j++]) return 0;
  }
}

static int same_at(slice a, slice b, int level) {
  sbuf x = {0}, y = {0};
  slice na = norm_line(a.p, a.n, level, &x), nb = norm_line(b.p, b.n, level, &y);
  int same = na.n == nb.n && !memcmp(na.p, nb.p, na.n);
  free(x.p);
  free(y.p);
  return same;
}

/* What tells old's line want from the file's line have. */
static const char *what_differs(slice want, slice have) {
  if (same_at(want, have, BW_LEVEL_RSTRIP)) return "trailing whitespace";
  if (same_at(want, have, BW_LEVEL_INDENT)) {
    slice a = lead(want.p, want.n), b = lead(have.p, have.n);
    int at = memchr(a.p, '\t', a.n) != NULL, bt = memchr(b.p, '\t', b.n) != NULL;
    return at != bt ? "tabs vs spaces in the indentation" : "indentation";
  }
  if (same_at(want, have, BW_LEVEL_UNICODE))
    return "quotes, dashes or spaces (Unicode punctuation)";
  if (same_but_spaces(want, have)) return "whitespace inside the line";
  return "the text";
}

/* From file line first, where does old's block stop matching? */
static void diverge(const view *v, const pat *p, size_t first,
                    bw_edit_diag *d) {
  for (size_t j = 0; j < p->k; j++) {
    slice want = p->lines[j];
    if (first + j >= v->nl) {
      d->diverge_line = v->nl + 1;
      excerpt(d->want_text, want.p, want.n);
      d->have_text[0] = '\0';
      d->differs = "the end of the file";
      return;
    }
    size_t a = v->ls[first + j];
    slice have = {v->s + a, line_end(v, first + j) - a};
    if (want.n == have.n && !memcmp(want.p, have.p, want.n)) continue;
    d->diverge_line = first + j + 1;
    excerpt(d->want_text, want.p, want.n);
    excerpt(d->have_text, have.p, have.n);
    d->differs = what_differs(want, have);
    return;
  }
}

enum { BIGRAMS = 4096 };

static unsigned bigram(const char *s) {
  return ((unsigned char)s[0] * 31u + (unsigned char)s[1]) & (BIGRAMS - 1);
}

/* The file line most like old's most telling line (byte bigrams, Dice). */
static size_t nearest_line(const view *v, slice want, int *percent) {
  unsigned short *have = calloc(BIGRAMS, sizeof *have);
  unsigned short *used = calloc(BIGRAMS, sizeof *used);
  unsigned *stamp = calloc(BIGRAMS, sizeof *stamp);
  size_t best = NO_LINE;
  *percent = 0;
  if (have && used && stamp && want.n >= 2) {
    for (size_t i = 0; i + 1 < want.n; i++)
      if (have[bigram(want.p + i)] < 0xFFFF) have[bigram(want.p + i)]++;
    for (size_t l = 0; l < v->nl; l++) {
      size_t a = v->ls[l];
      slice f = trim(v->s + a, line_end(v, l) - a, 1);
      if (f.n < 2) continue;
      size_t common = 0;
      for (size_t i = 0; i + 1 < f.n; i++) {
        unsigned g = bigram(f.p + i);
        if (stamp[g] != l + 1) stamp[g] = (unsigned)l + 1, used[g] = 0;
        if (used[g] < have[g]) used[g]++, common++;
      }
      int pc = (int)(200 * common / (want.n - 1 + f.n - 1));
      if (pc > *percent) *percent = pc, best = l;
    }
  }
  free(have);
  free(used);
  free(stamp);
  return best;
}

/* Why old is not in the file: a looser level that finds it, else the
 * nearest line and the first place the block differs. */
static int diagnose(const view *v, pat *p, int tried, bw_edit_diag *d) {
  mlist ml = {0};
  d->near_level = -1;
  for (int lv = tried + 1; lv < BW_LEVELS; lv++) {
    int rc = find_level(v, p, lv, 0, &ml);
    if (rc) {
      free(ml.m);
      return rc;
    }
    if (ml.n == 0) continue;
    size_t line = line_of(v, ml.m[0].start);
    d->near_level = lv;
    d->near_line = line + 1;
    d->near_percent = 100;
    file_excerpt(d->near_text, v, line);
    diverge(v, p, ml.m[0].line != NO_LINE ? ml.m[0].line : line, d);
    free(ml.m);
    return BW_OK;
  }
  free(ml.m);
  size_t anchor = 0, longest = 0; /* old's most telling line */
  for (size_t j = 0; j < p->k; j++) {
    slice t = trim(p->lines[j].p, p->lines[j].n, 1);
    if (t.n > longest) longest = t.n, anchor = j;
  }
  slice want = trim(p->lines[anchor].p, p->lines[anchor].n, 1);
  size_t best = nearest_line(v, want, &d->near_percent);
  if (best == NO_LINE || d->near_percent < MIN_SIMILAR) return BW_OK;
  d->near_line = best + 1;
  file_excerpt(d->near_text, v, best);
  diverge(v, p, best >= anchor ? best - anchor : 0, d);
  return BW_OK;
}

static void list_lines(const view *v, const mlist *ml, bw_edit_diag *d) {
  d->matches = ml->n;
  d->nlines = 0;
  for (size_t i = 0; i < ml->n && d->nlines < BW_DIAG_LINES; i++) {
    size_t line = line_of(v, ml->m[i].start) + 1;
    if (d->nlines == 0 || d->lines[d->nlines - 1] != line)
      d->lines[d->nlines++] = line;
  }
}

/* ---- matching every edit ---- */

static int match_edit(const view *v, pat *p, bw_edit *e, size_t idx,
                      const bw_edit_opts *o, spans *sp, bw_edit_diag *d) {
  int top = o->loose ? BW_LEVELS - 1 : BW_LEVEL_EXACT;
  mlist ml = {0};
  int rc = BW_OK, lv;
  for (lv = 0; lv <= top; lv++) {
    if ((rc = find_level(v, p, lv, e->replace_all, &ml))) break;
    if (ml.n == 0) continue;
    if (ml.n > 1 && !e->replace_all) {
      d->edit = idx;
      d->level = lv;
      list_lines(v, &ml, d);
      rc = bw_fail(BW_AMBIGUOUS_TEXT, NULL);
    }
    break;
  }
  if (!rc && lv > top) {
    d->edit = idx;
    rc = diagnose(v, p, top, d);
    if (!rc) rc = bw_fail(BW_NOT_FOUND_TEXT, NULL);
  }
  for (size_t i = 0; !rc && i < ml.n; i++) {
    span s;
    if (!(rc = make_span(v, p, &ml.m[i], lv, idx, &s))) rc = spans_add(sp, s);
    else if (s.owned) free((char *)s.repl);
  }
  if (!rc) {
    e->count = ml.n;
    e->level = lv;
    e->line = line_of(v, ml.m[0].start) + 1;
  }
  free(ml.m);
  return rc;
}

static int by_start(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->edit < y->edit ? -1 : x->edit > y->edit;
}

/* ---- splicing and the diff ---- */

static int splice(const view *v, const spans *sp, bw_edit_out *out) {
  size_t total = v->bom + v->n;
  for (size_t i = 0; i < sp->n; i++)
    total += sp->s[i].rlen - (sp->s[i].end - sp->s[i].start);
  char *t = malloc(total + 1);
  if (!t) return BW_ENOMEM;
  memcpy(t, v->s - v->bom, v->bom);
  size_t o = v->bom, pos = 0;
  for (size_t i = 0; i < sp->n; i++) {
    const span *s = &sp->s[i];
    memcpy(t + o, v->s + pos, s->start - pos);
    o += s->start - pos;
    memcpy(t + o, s->repl, s->rlen);
    o += s->rlen;
    pos = s->end;
  }
  memcpy(t + o, v->s + pos, v->n - pos);
  out->text = t;
  out->len = total;
  return BW_OK;
}

/* Changed lines [a, e) (e == a: nothing removed) and the spans in them. */
typedef struct region {
  size_t a, e;
  size_t s0, s1;
} region;

/* The new bytes of a region. */
static void region_new(const view *v, const spans *sp, const region *r,
                       sbuf *b) {
  size_t pos = v->ls[r->a];
  b->len = 0;
  for (size_t i = r->s0; i < r->s1; i++) {
    sb_put(b, v->s + pos, sp->s[i].start - pos);
    sb_put(b, sp->s[i].repl, sp->s[i].rlen);
    pos = sp->s[i].end;
  }
  if (v->ls[r->e] > pos) sb_put(b, v->s + pos, v->ls[r->e] - pos);
}

/* Take span i into the region: the lines it touches become changed. */
static void region_take(const view *v, region *r, const span *s) {
  size_t e = s->end > s->start ? line_of(v, s->end - 1) + 1
             : s->start > v->ls[r->a] ? line_of(v, s->start) + 1 /* mid-line */
                                      : r->e;
  if (e > v->nl) e = v->nl;
  if (e > r->e) r->e = e;
}

/* Grow a region until its new text ends on a line boundary (a span that
 * ate a newline joins the next line) and holds every span it touches. */
static int region_close(const view *v, const spans *sp, region *r, sbuf *tmp) {
  for (;;) {
    while (r->s1 < sp->n && (r->s1 == r->s0 || sp->s[r->s1].start < v->ls[r->e]))
      region_take(v, r, &sp->s[r->s1++]);
    region_new(v, sp, r, tmp);
    if (tmp->oom) return BW_ENOMEM;
    int open = tmp->len > 0 && tmp->p[tmp->len - 1] != '\n';
    if (!open || r->e >= v->nl) return BW_OK;
    r->e++;
  }
}

typedef struct differ {
  const view *v;
  const bw_edit_opts *o;
  bw_edit_out *out;
  sbuf diff, hunk, tmp;
  size_t oldc, newc;
  long delta; /* new lines minus old lines in the hunks before */
} differ;

static int file_ends_open(const view *v) {
  return v->n > 0 && v->s[v->n - 1] != '\n';
}

static void put_line(differ *df, char mark, const char *s, size_t n,
                     int open) {
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
  sb_putc(&df->hunk, mark);
  sb_put(&df->hunk, s, n);
  sb_putc(&df->hunk, '\n');
  if (open) sb_put(&df->hunk, "\\ No newline at end of file\n", 28);
}

static void put_old(differ *df, char mark, size_t i) {
  const view *v = df->v;
  put_line(df, mark, v->s + v->ls[i], v->ls[i + 1] - v->ls[i],
           i + 1 == v->nl && file_ends_open(v));
  df->oldc++;
  if (mark == ' ') df->newc++;
  else df->out->removed++;
}

static void put_context(differ *df, size_t from, size_t to) {
  for (size_t l = from; l < to && l < df->v->nl; l++) put_old(df, ' ', l);
}

static void put_new(differ *df, slice t, int at_eof) {
  size_t start = 0;
  for (size_t i = 0; i <= t.n; i++) {
    if (i < t.n && t.p[i] != '\n') continue;
    if (i == t.n && start == t.n) break;
    put_line(df, '+', t.p + start, i - start, i == t.n && at_eof);
    df->newc++;
    df->out->added++;
    start = i + 1;
  }
}

/* Lines a region leaves as they were, at either end, become context. */
static slice region_trim(const view *v, region *r, const sbuf *t) {
  slice n = {t->p, t->len};
  while (r->a < r->e) {
    size_t l = v->ls[r->a + 1] - v->ls[r->a];
    if (l > n.n || memcmp(n.p, v->s + v->ls[r->a], l)) break;
    if (l < n.n && n.p[l - 1] != '\n') break; /* only whole lines */
    n.p += l, n.n -= l, r->a++;
  }
  while (r->e > r->a) {
    size_t l = v->ls[r->e] - v->ls[r->e - 1];
    if (l > n.n || memcmp(n.p + n.n - l, v->s + v->ls[r->e - 1], l)) break;
    if (n.n > l && n.p[n.n - l - 1] != '\n') break; /* only whole lines */
    n.n -= l, r->e--;
  }
  return n;
}

/* Header and lines of a hunk that starts at line first (0-based). */
static void hunk_flush(differ *df, size_t first) {
  char head[96];
  long ns = (long)first + df->delta + (df->newc ? 1 : 0);
  int hl = snprintf(head, sizeof head, "@@ -%zu,%zu +%ld,%zu @@\n",
                    first + (df->oldc ? 1 : 0), df->oldc, ns, df->newc);
  df->delta += (long)df->newc - (long)df->oldc;
  if (df->out->diff_truncated) return;
  size_t room = df->o->max_diff > df->diff.len ? df->o->max_diff - df->diff.len : 0;
  if ((size_t)hl + df->hunk.len <= room) {
    sb_put(&df->diff, head, (size_t)hl);
    sb_put(&df->diff, df->hunk.p, df->hunk.len);
    return;
  }
  df->out->diff_truncated = 1;
  if ((size_t)hl >= room) return;
  size_t keep = room - (size_t)hl; /* the hunk's lines that fit, whole */
  while (keep > 0 && df->hunk.p[keep - 1] != '\n') keep--;
  if (keep == 0) return;
  sb_put(&df->diff, head, (size_t)hl);
  sb_put(&df->diff, df->hunk.p, keep);
}

static int make_diff(const view *v, const spans *sp, const bw_edit_opts *o,
                     bw_edit_out *out) {
  differ df = {.v = v, .o = o, .out = out};
  size_t ctx = o->context, i = 0, first = 0, prev_e = 0;
  int in_hunk = 0, rc = BW_OK;
  while (i < sp->n && !rc) {
    region r = {.a = line_of(v, sp->s[i].start), .s0 = i, .s1 = i};
    if (r.a == v->nl && r.a > 0 && file_ends_open(v)) r.a--; /* at EOF */
    r.e = r.a;
    if ((rc = region_close(v, sp, &r, &df.tmp))) break;
    i = r.s1;
    slice added = region_trim(v, &r, &df.tmp);
    if (r.a == r.e && added.n == 0) continue; /* changed nothing after all */
    if (!out->first_line) out->first_line = r.a + 1;
    size_t from = r.a > ctx ? r.a - ctx : 0;
    if (in_hunk && r.a - prev_e > 2 * ctx) { /* too far apart: close the hunk */
      put_context(&df, prev_e, prev_e + ctx);
      hunk_flush(&df, first);
      in_hunk = 0;
    }
    if (!in_hunk) {
      df.hunk.len = 0;
      df.oldc = df.newc = 0;
      first = from;
      put_context(&df, from, r.a);
    } else {
      put_context(&df, prev_e, r.a);
    }
    for (size_t l = r.a; l < r.e; l++) put_old(&df, '-', l);
    put_new(&df, added, r.e >= v->nl);
    in_hunk = 1;
    prev_e = r.e;
  }
  if (in_hunk && !rc) {
    put_context(&df, prev_e, prev_e + ctx);
    hunk_flush(&df, first);
  }
  sb_putc(&df.diff, '\0'); /* a C string too, for callers that want one */
  df.diff.len--;
  if (df.diff.oom || df.hunk.oom || df.tmp.oom) rc = BW_ENOMEM;
  free(df.hunk.p);
  free(df.tmp.p);
  out->diff = df.diff.p;
  out->diff_len = df.diff.len;
  return rc;
}

static int finish(const view *v, spans *sp, const bw_edit_opts *o,
                  bw_edit_out *out) {
  int rc = splice(v, sp, out);
  if (!rc) rc = make_diff(v, sp, o, out);
  return rc;
}

void bw_edit_out_free(bw_edit_out *out) {
  free(out->text);
  free(out->diff);
  out->text = out->diff = NULL;
}

int bw_edit_apply(const char *data, size_t len, bw_edit *e, size_t n,
                  const bw_edit_opts *o, bw_edit_out *out) {
  memset(out, 0, sizeof *out);
  if (n == 0) return bw_fail(BW_INVALID_ARGUMENT, "no edits given");
  view v;
  spans sp = {0};
  pat *p = calloc(n, sizeof *p);
  int rc = p ? view_init(&v, data, len) : BW_ENOMEM;
  if (!p) v.ls = NULL;
  out->total_lines = p ? v.nl : 0;
  for (size_t i = 0; !rc && i < n; i++) {
    if ((rc = pat_init(&p[i], &e[i]))) out->diag.edit = i;
    else rc = match_edit(&v, &p[i], &e[i], i, o, &sp, &out->diag);
  }
  if (!rc && sp.n > 1) qsort(sp.s, sp.n, sizeof *sp.s, by_start);
  for (size_t i = 1; !rc && i < sp.n; i++) {
    if (sp.s[i].start >= sp.s[i - 1].end) continue;
    size_t a = sp.s[i - 1].edit, b = sp.s[i].edit;
    out->diag.edit = a < b ? a : b;
    out->diag.other = a < b ? b : a;
    out->diag.near_line = line_of(&v, sp.s[i].start) + 1;
    rc = bw_fail(BW_OVERLAPPING_EDITS, NULL);
  }
  if (!rc) rc = finish(&v, &sp, o, out);
  for (size_t i = 0; p && i < n; i++) pat_free(&p[i]);
  free(p);
  spans_free(&sp);
  free(v.ls);
  if (rc) bw_edit_out_free(out);
  return rc;
}

int bw_insert_apply(const char *data, size_t len, size_t line, const char *text,
                    size_t tlen, const bw_edit_opts *o, bw_edit_out *out) {
  memset(out, 0, sizeof *out);
  view v;
  int rc = view_init(&v, data, len);
  if (rc) return rc;
  out->total_lines = v.nl;
  size_t nlen;
  char *lf = lf_copy(text, tlen, &nlen);
  sbuf b = {0};
  if (!lf) rc = BW_ENOMEM;
  else if (line < 1 || line > v.nl + 1)
    rc = bw_fail(BW_INVALID_ARGUMENT, "line is out of range");
  else if (nlen == 0)
    rc = bw_fail(BW_INVALID_ARGUMENT, "content is empty");
  if (!rc) {
    size_t pos = line <= v.nl ? v.ls[line - 1] : v.n;
    const char *eol = eol_at(&v, pos, pos);
    if (pos == v.n && file_ends_open(&v)) sb_put(&b, "\n", 1); /* end the last line */
    sb_put(&b, lf, nlen);
    if (lf[nlen - 1] != '\n' && !(pos == v.n && file_ends_open(&v)))
      sb_putc(&b, '\n'); /* lines are lines; a file without a final newline stays so */
    size_t rlen = 0;
    char *repl = b.oom ? NULL : eol_copy(b.p, b.len, eol, &rlen);
    spans sp = {0};
    if (!repl) rc = BW_ENOMEM;
    else rc = spans_add(&sp, (span){pos, pos, repl, rlen, 1, 0});
    if (rc) free(repl);
    if (!rc) rc = finish(&v, &sp, o, out);
    spans_free(&sp);
  }
  free(b.p);
  free(lf);
  free(v.ls);
  if (rc) bw_edit_out_free(out);
  return rc;
}

/* ---- on a file beneath a root ---- */

typedef struct copy_job {
  const bw_buf *b;
  char *dst;
} copy_job;

static int copy_run(void *arg) {
  copy_job *j = arg;
  memcpy(j->dst, j->b->data, j->b->len);
  return BW_OK;
}

int bw_read_copy(const bw_root *r, const char *rel, size_t max, char **data,
                 size_t *len) {
  bw_buf b;
  struct stat st;
  int rc = bw_read_file(r, rel, max, &b, &st);
  if (rc) return rc;
  copy_job j = {&b, malloc(b.len + 1)};
  if (!j.dst) rc = BW_ENOMEM;
  else rc = b.mapped ? bw_guard(copy_run, &j) : copy_run(&j);
  *len = b.len;
  bw_buf_free(&b);
  if (rc) {
    free(j.dst);
    return rc;
  }
  *data = j.dst;
  return BW_OK;
}

typedef int (*apply_fn)(const char *data, size_t len, const void *arg,
                        const bw_edit_opts *o, bw_edit_out *out);

typedef struct edit_args {
  bw_edit *e;
  size_t n;
} edit_args;

static int apply_edits(const char *data, size_t len, const void *arg,
                       const bw_edit_opts *o, bw_edit_out *out) {
  const edit_args *a = arg;
  return bw_edit_apply(data, len, a->e, a->n, o, out);
}

typedef struct insert_args {
  size_t line;
  const char *text;
  size_t tlen;
} insert_args;

static int apply_insert(const char *data, size_t len, const void *arg,
                        const bw_edit_opts *o, bw_edit_out *out) {
  const insert_args *a = arg;
  return bw_insert_apply(data, len, a->line, a->text, a->tlen, o, out);
}

static int file_op(const bw_root *r, const char *rel, const bw_edit_file_opts *o,
                   bw_edit_file_res *res, apply_fn fn, const void *arg) {
  memset(res, 0, sizeof *res);
  if (r->readonly && !o->dry_run) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  char *data;
  size_t len;
  int rc = bw_read_copy(r, rel, o->max_bytes ? o->max_bytes : (size_t)1 << 40, &data, &len);
  if (rc) return rc;
  res->old_size = len;
  if (memchr(data, '\0', len < BINARY_PROBE ? len : BINARY_PROBE))
    rc = bw_fail(BW_BINARY, NULL);
  if (!rc) rc = bw_sha256(data, len, res->old_hash);
  if (!rc && o->expected_hash && strcmp(o->expected_hash, res->old_hash)) {
    strcpy(res->current_hash, res->old_hash);
    rc = bw_fail(BW_HASH_MISMATCH, NULL);
  }
  if (!rc) rc = fn(data, len, arg, &o->e, &res->out);
  if (!rc && o->dry_run) rc = bw_sha256(res->out.text, res->out.len, res->hash);
  if (!rc && !o->dry_run) { /* compare-and-set against what we read */
    bw_write_opts wo = {.expected_hash = res->old_hash, .max_compare = o->max_bytes};
    bw_write_res wr;
    rc = bw_write_file(r, rel, res->out.text, res->out.len, &wo, &wr);
    if (rc == BW_HASH_MISMATCH) strcpy(res->current_hash, wr.current_hash);
    if (!rc) memcpy(res->hash, wr.hash, sizeof res->hash);
  }
  if (!rc && o->keep_original && len <= o->keep_original) {
    res->original = data; /* handed over */
    res->original_len = len;
    data = NULL;
  }
  free(data);
  if (rc) bw_edit_file_res_free(res);
  return rc;
}

int bw_edit_file(const bw_root *r, const char *rel, bw_edit *e, size_t n,
                 const bw_edit_file_opts *o, bw_edit_file_res *res) {
  edit_args a = {e, n};
  return file_op(r, rel, o, res, apply_edits, &a);
}

int bw_insert_file(const bw_root *r, const char *rel, size_t line,
                   const char *text, size_t tlen, const bw_edit_file_opts *o,
                   bw_edit_file_res *res) {
  insert_args a = {line, text, tlen};
  return file_op(r, rel, o, res, apply_insert, &a);
}

void bw_edit_file_res_free(bw_edit_file_res *res) {
  bw_edit_out_free(&res->out);
  free(res->original);
  res->original = NULL;
}
