/*
 * match.c - the matching ladder: find old_text in a file's lines at one
 * level (exact bytes, then whole lines with trailing whitespace ignored,
 * with indentation ignored, with Unicode punctuation folded), counting
 * every place so uniqueness is real; and on a miss, say where: a looser
 * level that finds it, else the nearest line and what differs there.
 */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "edit.h"

enum { MIN_SIMILAR = 30 }; /* below this a nearest line is noise */

static const char *const level_names[BW_LEVELS] = {
    "exact", "trailing_whitespace", "indentation", "unicode"};

const char *bw_level_name(int level) {
  return level >= 0 && level < BW_LEVELS ? level_names[level] : "none";
}

/* ---- line normalisation for the loose levels ---- */

static int is_hws(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
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
    for (size_t j = 0; map && j < outn; j++) bw_sb_put(map, &i, sizeof i);
    if (f) bw_sb_putc(b, (char)f);
    else bw_sb_put(b, s + i, l);
    i += l;
  }
  if (map) bw_sb_put(map, &i, sizeof i);
}

/* A line's text as a level compares it (folded text lands in scratch). */
static slice norm_line(const char *s, size_t n, int level, sbuf *scratch) {
  if (level == BW_LEVEL_RSTRIP) return bw_trim(s, n, 0);
  if (level == BW_LEVEL_INDENT) return bw_trim(s, n, 1);
  fold(s, n, scratch, NULL);
  return bw_trim(scratch->p ? scratch->p : "", scratch->len, 1);
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
    bw_sb_put(&p->normbuf, s.p, s.n);
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

/* The text old is searched as in a file of one line-ending style. */
static int pat_query(const view *v, pat *p, const char **q, size_t *ql) {
  if (v->eol == EOL_CRLF && !p->old_crlf) {
    p->old_crlf = bw_eol_copy(p->old, p->olen, "\r\n", &p->old_crlf_len);
    if (!p->old_crlf) return BW_ENOMEM;
  }
  *q = v->eol == EOL_CRLF ? p->old_crlf : p->old;
  *ql = v->eol == EOL_CRLF ? p->old_crlf_len : p->olen;
  return BW_OK;
}

#define IDX_K 16 /* bytes of a pattern's start that pick its bucket */

static uint64_t idx_hash(const unsigned char *s, size_t k) {
  uint64_t h = 0;
  for (size_t i = 0; i < k; i++) h = h * 1099511628211u + s[i] + 1;
  return h;
}

static void occ_drop(pat *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(p[i].occ);
    p[i].occ = NULL;
    p[i].occ_n = p[i].occ_cap = 0;
    p[i].occ_ready = 0;
  }
}

/* What one index has done: places found, bytes compared (a hit's full
 * compare), and the compares it may make before it gives up. */
typedef struct idx_work {
  size_t places, compared, cap;
} idx_work;

/* One pass for the patterns whose bucket key is k bytes long (the whole
 * pattern below IDX_K bytes, its first IDX_K bytes from there on): a
 * rolling hash of the file's k-byte windows, each looked up in a table of
 * the patterns' keys, each hit compared in full. */
static int index_pass(const view *v, pat *p, size_t n, size_t k, const bw_stop *stop,
                      idx_work *w) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *q;
    size_t ql;
    if (pat_query(v, &p[i], &q, &ql)) return BW_ENOMEM;
    if ((ql < IDX_K ? ql : IDX_K) == k) m++;
  }
  if (m == 0 || v->n < k) return BW_OK;
  size_t cap = 1;
  while (cap < 2 * m) cap <<= 1;
  size_t *head = malloc(cap * sizeof *head), *next = malloc(n * sizeof *next);
  uint64_t *key = malloc(n * sizeof *key);
  if (!head || !next || !key) {
    free(head), free(next), free(key);
    return BW_ENOMEM;
  }
  for (size_t b = 0; b < cap; b++) head[b] = (size_t)-1;
  for (size_t i = 0; i < n; i++) {
    const char *q;
    size_t ql;
    pat_query(v, &p[i], &q, &ql);
    if ((ql < IDX_K ? ql : IDX_K) != k) continue;
    key[i] = idx_hash((const unsigned char *)q, k);
    next[i] = head[key[i] & (cap - 1)];
    head[key[i] & (cap - 1)] = i;
  }
  /* the weight of the window's first byte, to roll it out */
  uint64_t top = 1;
  for (size_t i = 1; i < k; i++) top *= 1099511628211u;
  const unsigned char *s = (const unsigned char *)v->s;
  uint64_t h = idx_hash(s, k);
  int rc = BW_OK;
  for (size_t at = 0; at + k <= v->n; at++) {
    if (at > 0) h = (h - (s[at - 1] + 1) * top) * 1099511628211u + s[at + k - 1] + 1;
    if ((at & 0xFFFF) == 0 && (rc = bw_stopped(stop))) break;
    for (size_t i = head[h & (cap - 1)]; i != (size_t)-1; i = next[i]) {
      if (key[i] != h) continue;
      pat *t = &p[i];
      const char *q;
      size_t ql;
      pat_query(v, t, &q, &ql);
      /* many patterns that share their first bytes, in a file full of
       * them, would cost places x patterns x length: past a few times the
       * bytes of the file and the patterns, the index gives up and each
       * edit searches alone (linear each, as before) */
      size_t before = w->compared;
      w->compared += ql;
      if (w->compared > w->cap) {
        rc = BW_TOO_LARGE;
        break;
      }
      if ((before >> 20) != (w->compared >> 20) && (rc = bw_stopped(stop))) break;
      if (at + ql > v->n || memcmp(s + at, q, ql)) continue;
      if (++w->places > BW_INDEX_MAX) {
        rc = BW_TOO_LARGE;
        break;
      }
      if (t->occ_n == t->occ_cap) {
        size_t c = t->occ_cap ? t->occ_cap * 2 : 4;
        size_t *o = realloc(t->occ, c * sizeof *o);
        if (!o) {
          rc = BW_ENOMEM;
          break;
        }
        t->occ = o, t->occ_cap = c;
      }
      t->occ[t->occ_n++] = at;
    }
    if (rc) break;
  }
  free(head), free(next), free(key);
  return rc;
}

int bw_exact_index(const view *v, pat *p, size_t n, size_t min, const bw_stop *stop) {
  if (n == 0 || n < (min ? min : BW_INDEX_MIN) || v->eol == EOL_MIXED) return BW_OK;
  idx_work w = {0, 0, 8 * v->n + (1u << 20)};
  for (size_t i = 0; i < n; i++) w.cap += 8 * p[i].olen;
  int rc = BW_OK;
  for (size_t k = 1; k <= IDX_K && !rc; k++) rc = index_pass(v, p, n, k, stop, &w);
  if (rc == BW_TOO_LARGE) rc = BW_OK; /* too many places or compares: each searches alone */
  else if (!rc)
    for (size_t i = 0; i < n; i++) p[i].occ_ready = 1;
  if (!p[0].occ_ready) occ_drop(p, n);
  return rc;
}

/* Is pos strictly inside a line's indentation (after its start, before
 * its first other character)? */
static int in_lead(const view *v, size_t pos) {
  if (pos >= v->n) return 0;
  size_t l = bw_line_of(v, pos), a = v->ls[l];
  return pos > a && pos < a + bw_lead(v->s + a, bw_line_end(v, l) - a).n;
}

/* Only spaces and tabs: text that is indentation itself (a "    " -> "\t"
 * replace_all), where a place inside the indentation is what is meant. */
static int all_blank(const pat *p) {
  return bw_lead(p->old, p->olen).n == p->olen;
}

/* An exact place that starts or ends inside a line's indentation is not
 * one: "  x\n" found in "    x" would put new_text's later lines at the
 * agent's shallower indentation. The indentation level finds it as whole
 * lines and re-indents. */
static int find_exact(const view *v, pat *p, int disjoint, mlist *ml) {
  const char *q;
  size_t ql;
  if (pat_query(v, p, &q, &ql)) return BW_ENOMEM;
  int blank = all_blank(p);
  size_t from = 0, s, e;
  if (p->occ_ready) { /* its places, found with the other edits' (bw_exact_index) */
    for (size_t j = 0; j < p->occ_n; j++) {
      s = p->occ[j], e = s + ql;
      if (s < from) continue;
      if (!blank && (in_lead(v, s) || in_lead(v, e))) continue;
      if (ml_add(ml, s, e, NO_LINE)) return BW_ENOMEM;
      from = disjoint ? e : s + 1; /* overlapping places make it ambiguous */
    }
    return BW_OK;
  }
  while (exact_next(v, p, from, &s, &e)) {
    if (!blank && (in_lead(v, s) || in_lead(v, e))) {
      from = s + 1;
      continue;
    }
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
    slice f = norm_line(v->s + a, bw_line_end(v, i + j) - a, level, scratch);
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
    size_t end = p->trail_nl ? v->ls[last + 1] : bw_line_end(v, last);
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
    fold(v->s + a, bw_line_end(v, i) - a, &line, &map);
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

int bw_find_level(const view *v, pat *p, int level, int disjoint,
                  mlist *ml) {
  ml->n = 0;
  if (level == BW_LEVEL_EXACT) return find_exact(v, p, disjoint, ml);
  int rc = find_lines(v, p, level, disjoint, ml);
  if (!rc && ml->n == 0 && level == BW_LEVEL_UNICODE)
    rc = find_folded(v, p, disjoint, ml);
  return rc;
}


/* ---- diagnostics ---- */

/* A line of text for a message: no line ending, cut on a UTF-8 boundary. */
void bw_diag_excerpt(char *dst, const char *s, size_t n) {
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
  bw_diag_excerpt(dst, v->s + v->ls[i], bw_line_end(v, i) - v->ls[i]);
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
    slice a = bw_lead(want.p, want.n), b = bw_lead(have.p, have.n);
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
      bw_diag_excerpt(d->want_text, want.p, want.n);
      d->have_text[0] = '\0';
      d->differs = "the end of the file";
      return;
    }
    size_t a = v->ls[first + j];
    slice have = {v->s + a, bw_line_end(v, first + j) - a};
    if (want.n == have.n && !memcmp(want.p, have.p, want.n)) continue;
    d->diverge_line = first + j + 1;
    bw_diag_excerpt(d->want_text, want.p, want.n);
    bw_diag_excerpt(d->have_text, have.p, have.n);
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
      slice f = bw_trim(v->s + a, bw_line_end(v, l) - a, 1);
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
int bw_diagnose(const view *v, pat *p, int tried, bw_edit_diag *d) {
  mlist ml = {0};
  d->near_level = -1;
  for (int lv = tried + 1; lv < BW_LEVELS; lv++) {
    int rc = bw_find_level(v, p, lv, 0, &ml);
    if (rc) {
      free(ml.m);
      return rc;
    }
    if (ml.n == 0) continue;
    size_t line = bw_line_of(v, ml.m[0].start);
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
    slice t = bw_trim(p->lines[j].p, p->lines[j].n, 1);
    if (t.n > longest) longest = t.n, anchor = j;
  }
  slice want = bw_trim(p->lines[anchor].p, p->lines[anchor].n, 1);
  size_t best = nearest_line(v, want, &d->near_percent);
  if (best == NO_LINE || d->near_percent < MIN_SIMILAR) return BW_OK;
  d->near_line = best + 1;
  file_excerpt(d->near_text, v, best);
  diverge(v, p, best >= anchor ? best - anchor : 0, d);
  return BW_OK;
}

void bw_list_lines(const view *v, const mlist *ml, bw_edit_diag *d) {
  d->matches = ml->n;
  d->nlines = 0;
  for (size_t i = 0; i < ml->n && d->nlines < BW_DIAG_LINES; i++) {
    size_t line = bw_line_of(v, ml->m[i].start) + 1;
    if (d->nlines == 0 || d->lines[d->nlines - 1] != line)
      d->lines[d->nlines++] = line;
  }
}
