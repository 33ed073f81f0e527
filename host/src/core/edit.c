/*
 * edit.c - the edit engine: parse each edit into LF patterns, match it
 * (the ladder is match.c's), check that every match is unique and that no
 * two edits overlap, and splice each new_text in; the diff of the spans is
 * diff.c's. Line endings stay the file's: an LF old_text matches CRLF
 * lines, and new_text gets the line ending of the span it replaces
 * (re-indented to the block found at the indentation levels), so a mixed
 * file is byte-identical outside the edits. The BOM is never matched or
 * moved. Also insert, and read-edit-compare-and-set on a file.
 */
#include <stdlib.h>
#include <string.h>

#include "charset.h"
#include "edit.h"

enum { BINARY_PROBE = 8192 };

/* ---- the file as lines ---- */


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

/* ---- patterns ---- */

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


static void pat_free(pat *p) {
  free(p->occ);
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
  if (p->olen == p->nlen && !memcmp(p->old, p->neu, p->olen))
    return bw_fail(BW_INVALID_ARGUMENT, "old_text and new_text are the same");
  return BW_OK;
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

/* Indentation found for old's lines: pairs (old's indent, the file's),
 * and the one change that turns every old indent into the file's, if
 * there is one: a prefix added (file = x + old) or removed (old = x +
 * file), after a spaces <-> tabs conversion when the file uses the other. */
enum { RI_PAIRS = 64, RI_ADD = 1, RI_REMOVE = -1, RI_NONE = 2 };
typedef struct reindent {
  slice from[RI_PAIRS], to[RI_PAIRS];
  size_t line[RI_PAIRS];      /* old's line (0-based) of each pair */
  unsigned char clash[RI_PAIRS]; /* the same old indent, another file indent */
  size_t n;
  char unit_from; /* ' ' -> '\t' (or back) conversion, if seen */
  size_t unit;    /* spaces per tab in that conversion */
  int mode;       /* RI_ADD, RI_REMOVE, or RI_NONE: no single change */
  sbuf x;         /* the prefix added or removed */
  size_t conflict; /* RI_NONE: old's line where the change differs */
} reindent;

static int all_of(slice s, char c) {
  for (size_t i = 0; i < s.n; i++)
    if (s.p[i] != c) return 0;
  return s.n > 0;
}

/* Extra indentation beyond a known prefix, in the file's characters. */
static void put_extra(sbuf *b, const reindent *ri, slice extra) {
  if (ri->unit_from == ' ') {
    size_t run = 0;
    for (size_t i = 0; i < extra.n; i++) {
      if (extra.p[i] != ' ') {
        for (; run; run--) bw_sb_putc(b, ' ');
        bw_sb_putc(b, extra.p[i]);
      } else if (++run == ri->unit) {
        bw_sb_putc(b, '\t');
        run = 0;
      }
    }
    for (; run; run--) bw_sb_putc(b, ' ');
  } else if (ri->unit_from == '\t') {
    for (size_t i = 0; i < extra.n; i++) {
      if (extra.p[i] != '\t') bw_sb_putc(b, extra.p[i]);
      else for (size_t u = 0; u < ri->unit; u++) bw_sb_putc(b, ' ');
    }
  } else {
    bw_sb_put(b, extra.p, extra.n);
  }
}

/* memcmp that takes the NULL of an empty buffer */
static int same_n(const void *a, const void *b, size_t n) {
  return n == 0 || !memcmp(a, b, n);
}

static int ends_with(slice a, slice b) {
  return a.n >= b.n && same_n(a.p + a.n - b.n, b.p, b.n);
}

/* The change from old's indent (converted) c to the file's f: mode and
 * prefix into x; 0 when neither is a suffix of the other. */
static int change_of(slice c, slice f, int *mode, sbuf *x) {
  x->len = 0;
  if (ends_with(f, c)) *mode = RI_ADD, bw_sb_put(x, f.p, f.n - c.n);
  else if (ends_with(c, f)) *mode = RI_REMOVE, bw_sb_put(x, c.p, c.n - f.n);
  else return 0;
  if (x->len == 0) *mode = RI_ADD;
  return 1;
}

static void reindent_free(reindent *ri) { free(ri->x.p); }

static int reindent_learn(reindent *ri, const view *v, const pat *p,
                          size_t first) {
  memset(ri, 0, sizeof *ri);
  ri->mode = RI_ADD;
  for (size_t j = 0; j < p->k; j++) {
    slice pl = p->lines[j];
    if (bw_trim(pl.p, pl.n, 1).n == 0) continue; /* blank lines say nothing */
    size_t a = v->ls[first + j];
    slice pi = bw_lead(pl.p, pl.n), fi = bw_lead(v->s + a, bw_line_end(v, first + j) - a);
    size_t h = 0;
    while (h < ri->n && (ri->from[h].n != pi.n || !same_n(ri->from[h].p, pi.p, pi.n)))
      h++;
    if (h == ri->n && ri->n < RI_PAIRS) {
      ri->from[ri->n] = pi;
      ri->line[ri->n] = j;
      ri->to[ri->n++] = fi;
    } else if (h < ri->n && (ri->to[h].n != fi.n || !same_n(ri->to[h].p, fi.p, fi.n))) {
      ri->clash[h] = 1;
      if (ri->mode != RI_NONE) ri->mode = RI_NONE, ri->conflict = j;
    }
    if (!ri->unit && all_of(pi, ' ') && all_of(fi, '\t') && pi.n % fi.n == 0)
      ri->unit_from = ' ', ri->unit = pi.n / fi.n;
    if (!ri->unit && all_of(pi, '\t') && all_of(fi, ' ') && fi.n % pi.n == 0)
      ri->unit_from = '\t', ri->unit = fi.n / pi.n;
  }
  sbuf c = {0}, x = {0};
  for (size_t h = 0; h < ri->n && ri->mode != RI_NONE; h++) {
    c.len = 0;
    put_extra(&c, ri, ri->from[h]);
    int mode;
    if (!change_of((slice){c.p, c.len}, ri->to[h], &mode, &x)) {
      ri->mode = RI_NONE, ri->conflict = ri->line[h];
    } else if (h == 0) {
      ri->mode = mode;
      bw_sb_put(&ri->x, x.p, x.len);
    } else if (mode != ri->mode || x.len != ri->x.len || !same_n(x.p, ri->x.p, x.len)) {
      ri->mode = RI_NONE, ri->conflict = ri->line[h];
    }
  }
  int oom = c.oom || x.oom || ri->x.oom;
  free(c.p);
  free(x.p);
  return oom ? BW_ENOMEM : BW_OK;
}

/* One line's indentation ind in the file's terms into b; 0 when it
 * cannot be known without guessing. */
static int reindent_one(const reindent *ri, slice ind, sbuf *b) {
  for (size_t h = 0; h < ri->n; h++) {
    if (ri->from[h].n != ind.n || !same_n(ri->from[h].p, ind.p, ind.n)) continue;
    if (ri->clash[h]) return 0; /* one old indent, two file indents */
    bw_sb_put(b, ri->to[h].p, ri->to[h].n);
    return 1;
  }
  if (ri->mode == RI_NONE) return 0;
  sbuf c = {0};
  put_extra(&c, ri, ind);
  int ok = 1;
  if (ri->mode == RI_ADD) {
    bw_sb_put(b, ri->x.p, ri->x.len);
    bw_sb_put(b, c.p, c.len);
  } else if (c.len >= ri->x.len && same_n(c.p, ri->x.p, ri->x.len)) {
    bw_sb_put(b, c.p + ri->x.len, c.len - ri->x.len);
  } else {
    /* shallower than what is taken off: only the margin is sure, when
       the block itself has a line there ("   x" sent for the line "x") */
    int margin = 0;
    for (size_t h = 0; h < ri->n; h++) margin |= ri->to[h].n == 0;
    ok = margin && c.len < ri->x.len && same_n(c.p, ri->x.p, c.len);
  }
  if (c.oom) b->oom = 1;
  free(c.p);
  return ok;
}

/* new_text re-indented line by line by the change the match needed;
 * 0 on success, else the 1-based line of new_text that cannot be. */
static size_t reindent_apply(const reindent *ri, const char *s, size_t n,
                             sbuf *b) {
  size_t start = 0, no = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '\n') continue;
    slice line = {s + start, i - start}, ind = bw_lead(line.p, line.n);
    no++;
    if (bw_trim(line.p, line.n, 1).n > 0) {
      if (!reindent_one(ri, ind, b)) return no;
      bw_sb_put(b, line.p + ind.n, line.n - ind.n);
    } else {
      bw_sb_put(b, line.p, line.n);
    }
    if (i < n) bw_sb_putc(b, '\n');
    start = i + 1;
  }
  return 0;
}

int bw_reindent(const char *old, size_t olen, const char *block, size_t blen,
                const char *neu, size_t nlen, char **out, size_t *out_len,
                size_t *bad) {
  *out = NULL;
  *bad = 0;
  bw_edit e = {old, olen, neu, nlen, 0, 0, 0, 0};
  pat p;
  view v;
  int rc = pat_init(&p, &e);
  if (rc == BW_INVALID_ARGUMENT && p.lines) rc = BW_OK; /* the same texts: fine here */
  if (!rc) rc = view_init(&v, block, blen);
  else v.ls = NULL;
  if (!rc && v.nl < p.k) rc = bw_fail(BW_INVALID_ARGUMENT, "the block has fewer lines than old");
  reindent ri;
  sbuf b = {0};
  if (!rc) rc = reindent_learn(&ri, &v, &p, 0);
  if (!rc) {
    *bad = reindent_apply(&ri, p.neu, p.nlen, &b);
    reindent_free(&ri);
    if (b.oom) rc = BW_ENOMEM;
    else if (*bad) rc = bw_fail(BW_AMBIGUOUS_TEXT, "new text cannot be re-indented without guessing");
  }
  if (!rc) {
    *out = b.p ? b.p : strdup("");
    *out_len = b.len;
    if (!*out) rc = BW_ENOMEM;
  } else {
    free(b.p);
  }
  pat_free(&p);
  free(v.ls);
  return rc;
}

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

/* new_text's line no (1-based) for a message. */
static void new_line_excerpt(const pat *p, size_t no, char *dst) {
  const char *s = p->neu, *e = p->neu + p->nlen;
  for (size_t i = 1; i < no; i++) s = memchr(s, '\n', (size_t)(e - s)) + 1;
  const char *q = memchr(s, '\n', (size_t)(e - s));
  bw_diag_excerpt(dst, s, (size_t)((q ? q : e) - s));
}

/* The block was found with its indentation ignored, but old's indents
 * do not map onto the file's by one change and new_text's line bad has
 * an indent that none of them gives: say where, never guess. */
static int reindent_refuse(const view *v, const pat *p, const reindent *ri, int level,
                           size_t edit, size_t first, size_t bad, bw_edit_diag *d) {
  d->edit = edit;
  d->level = level;
  d->matches = 1;
  d->nlines = 1;
  d->lines[0] = first + 1;
  d->reindent_line = bad;
  new_line_excerpt(p, bad, d->near_text);
  if (ri->mode == RI_NONE) {
    size_t j = ri->conflict, a = v->ls[first + j];
    d->diverge_line = first + j + 1;
    bw_diag_excerpt(d->want_text, p->lines[j].p, p->lines[j].n);
    bw_diag_excerpt(d->have_text, v->s + a, bw_line_end(v, first + j) - a);
  }
  return bw_fail(BW_AMBIGUOUS_TEXT, NULL);
}

/* A place found as text, not as whole lines (the exact level, or a
 * one-line unicode match inside a line), that starts right after a line's
 * indentation: old_text's first line has none there, the file some. When
 * old_text has no other line with text (one that matched as the file has
 * it would put new_text in the file's terms), new_text's later lines may
 * be meant as the file has them or relative to old_text, one indentation
 * apart: on the loose ladder, whose caller says its whitespace may be
 * off, that is a guess. new_text's first later line with text, else 0. */
static size_t frame_unknown(const view *v, const pat *p, const match *m) {
  size_t l = bw_line_of(v, m->start), a = v->ls[l];
  if (m->start == a || m->start != a + bw_lead(v->s + a, bw_line_end(v, l) - a).n) return 0;
  for (size_t j = 1; j < p->k; j++)
    if (bw_trim(p->lines[j].p, p->lines[j].n, 1).n > 0) return 0;
  const char *s = p->neu, *e = p->neu + p->nlen;
  const char *q = memchr(s, '\n', p->nlen);
  for (size_t no = 2; q; no++) {
    s = q + 1;
    q = memchr(s, '\n', (size_t)(e - s));
    if (bw_trim(s, (size_t)((q ? q : e) - s), 1).n > 0) return no;
  }
  return 0;
}

static int frame_refuse(const view *v, const pat *p, const match *m, int level,
                        size_t edit, size_t bad, bw_edit_diag *d) {
  size_t l = bw_line_of(v, m->start);
  d->edit = edit;
  d->level = level;
  d->matches = 1;
  d->nlines = 1;
  d->lines[0] = l + 1;
  d->reindent_line = bad;
  d->after_indent = 1;
  new_line_excerpt(p, bad, d->near_text);
  bw_diag_excerpt(d->have_text, v->s + v->ls[l], bw_line_end(v, l) - v->ls[l]);
  return bw_fail(BW_AMBIGUOUS_TEXT, NULL);
}

/* The span of one match, with its replacement in the right line ending. */
static int make_span(const view *v, pat *p, const match *m, int level, int loose,
                     size_t edit, span *out, bw_edit_diag *d) {
  *out = (span){m->start, m->end, p->neu, p->nlen, 0, edit};
  size_t guess = loose && m->line == NO_LINE ? frame_unknown(v, p, m) : 0;
  if (guess) return frame_refuse(v, p, m, level, edit, guess, d);
  const char *eol = eol_at(v, m->start, m->end);
  int crlf = eol[0] == '\r';
  if (level >= BW_LEVEL_INDENT && m->line != NO_LINE) {
    reindent ri;
    sbuf b = {0};
    int rc = reindent_learn(&ri, v, p, m->line);
    size_t bad = rc ? 0 : reindent_apply(&ri, p->neu, p->nlen, &b);
    if (!rc && bad) rc = reindent_refuse(v, p, &ri, level, edit, m->line, bad, d);
    reindent_free(&ri);
    if (!rc && b.oom) rc = BW_ENOMEM;
    if (rc) {
      free(b.p);
      return rc;
    }
    out->repl = b.p ? b.p : strdup("");
    out->rlen = b.len;
    out->owned = 1;
    if (!out->repl) return BW_ENOMEM;
    if (crlf) {
      char *c = bw_eol_copy(out->repl, out->rlen, "\r\n", &out->rlen);
      free((char *)out->repl);
      out->repl = c;
      if (!c) return BW_ENOMEM;
    }
    return BW_OK;
  }
  if (!crlf) return BW_OK;
  if (!p->neu_crlf) {
    p->neu_crlf = bw_eol_copy(p->neu, p->nlen, "\r\n", &p->neu_crlf_len);
    if (!p->neu_crlf) return BW_ENOMEM;
  }
  out->repl = p->neu_crlf;
  out->rlen = p->neu_crlf_len;
  return BW_OK;
}

/* ---- matching every edit ---- */

/* On the loose ladder, a place found with old_text's own indentation (the
 * exact or trailing-whitespace level) as whole lines, when the indentation
 * level finds the block at other places too: that indentation is all that
 * chose the place, and the caller said it may be off ("\t\t\t\t// x" sent
 * one tab deep for the "\t\t\t// x" meant hits another copy that deep).
 * Those places into other; 1 when there are several. */
static int indent_chose(const view *v, pat *p, const match *m, mlist *other, int *rc) {
  size_t l = bw_line_of(v, m->start), e = m->end;
  if (m->start != v->ls[l] || bw_lead(p->old, p->olen).n == p->olen) return 0;
  if (!p->trail_nl && e < v->n && v->s[e] != '\n' &&
      !(v->s[e] == '\r' && e + 1 < v->n && v->s[e + 1] == '\n'))
    return 0; /* ends inside a line: the indentation level cannot see it */
  *rc = bw_find_level(v, p, BW_LEVEL_INDENT, 0, other);
  return !*rc && other->n > 1;
}

static int match_edit(const view *v, pat *p, bw_edit *e, size_t idx,
                      const bw_edit_opts *o, spans *sp, bw_edit_diag *d) {
  int top = o->loose ? BW_LEVELS - 1 : BW_LEVEL_EXACT;
  mlist ml = {0};
  int rc = BW_OK, lv;
  for (lv = 0; lv <= top; lv++) {
    if ((rc = bw_find_level(v, p, lv, e->replace_all, &ml))) break;
    if (ml.n == 0) continue;
    if (ml.n > 1 && !e->replace_all) {
      d->edit = idx;
      d->level = lv;
      bw_list_lines(v, &ml, d);
      rc = bw_fail(BW_AMBIGUOUS_TEXT, NULL);
    } else if (o->loose && lv < BW_LEVEL_INDENT && ml.n == 1 && !e->replace_all) {
      mlist other = {0};
      if (indent_chose(v, p, &ml.m[0], &other, &rc)) {
        d->edit = idx;
        d->level = BW_LEVEL_INDENT;
        d->found_level = lv;
        d->found_line = bw_line_of(v, ml.m[0].start) + 1;
        bw_list_lines(v, &other, d);
        rc = bw_fail(BW_AMBIGUOUS_TEXT, NULL);
      }
      free(other.m);
    }
    break;
  }
  if (!rc && lv > top) {
    d->edit = idx;
    rc = bw_diagnose(v, p, top, d);
    if (!rc) rc = bw_fail(BW_NOT_FOUND_TEXT, NULL);
  }
  for (size_t i = 0; !rc && i < ml.n; i++) {
    span s;
    if (!(rc = make_span(v, p, &ml.m[i], lv, o->loose, idx, &s, d))) rc = spans_add(sp, s);
    else if (s.owned) free((char *)s.repl);
  }
  if (!rc) {
    e->count = ml.n;
    e->level = lv;
    e->line = bw_line_of(v, ml.m[0].start) + 1;
  }
  free(ml.m);
  return rc;
}

static int by_start(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->edit < y->edit ? -1 : x->edit > y->edit;
}

/* ---- splicing (the diff is diff.c's) ---- */

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

static int finish(const view *v, spans *sp, const bw_edit_opts *o,
                  bw_edit_out *out) {
  int rc = splice(v, sp, out);
  if (!rc) rc = bw_make_diff(v, sp, o, out);
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
  /* every old text first, then their exact places in one pass, then
   * each edit matched in order (an edit's own error still comes after the
   * errors of the edits before it) */
  size_t ready = 0;
  int init_rc = BW_OK;
  while (!rc && ready < n && !(init_rc = pat_init(&p[ready], &e[ready]))) ready++;
  if (!rc) rc = bw_exact_index(&v, p, ready, o->index_min, o->stop);
  for (size_t i = 0; !rc && i < ready; i++) {
    if ((rc = bw_stopped(o->stop))) break; /* cancelled, or past the budget */
    rc = match_edit(&v, &p[i], &e[i], i, o, &sp, &out->diag);
  }
  if (!rc && init_rc) {
    rc = init_rc;
    out->diag.edit = ready;
  }
  if (!rc && sp.n > 1) qsort(sp.s, sp.n, sizeof *sp.s, by_start);
  for (size_t i = 1; !rc && i < sp.n; i++) {
    if (sp.s[i].start >= sp.s[i - 1].end) continue;
    size_t a = sp.s[i - 1].edit, b = sp.s[i].edit;
    out->diag.edit = a < b ? a : b;
    out->diag.other = a < b ? b : a;
    out->diag.near_line = bw_line_of(&v, sp.s[i].start) + 1;
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
    if (pos == v.n && bw_file_ends_open(&v)) bw_sb_put(&b, "\n", 1); /* end the last line */
    bw_sb_put(&b, lf, nlen);
    if (lf[nlen - 1] != '\n' && !(pos == v.n && bw_file_ends_open(&v)))
      bw_sb_putc(&b, '\n'); /* lines are lines; a file without a final newline stays so */
    size_t rlen = 0;
    char *repl = b.oom ? NULL : bw_eol_copy(b.p, b.len, eol, &rlen);
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
  int rc = bw_edit_apply(data, len, a->e, a->n, o, out);
  for (size_t i = 0; !rc && i < a->n; i++) out->placed += a->e[i].count * a->e[i].new_len;
  return rc;
}

typedef struct insert_args {
  size_t line;
  const char *text;
  size_t tlen;
} insert_args;

static int apply_insert(const char *data, size_t len, const void *arg,
                        const bw_edit_opts *o, bw_edit_out *out) {
  const insert_args *a = arg;
  int rc = bw_insert_apply(data, len, a->line, a->text, a->tlen, o, out);
  if (!rc) out->placed = a->tlen;
  return rc;
}

/* The file's encoding: the one asked for (its BOM skipped when there),
 * else detected. */
static int file_charset(const char *data, size_t len, const char *want,
                        const char *fallback, bw_charset *cs) {
  if (!want) return bw_charset_detect(data, len, fallback, cs);
  memset(cs, 0, sizeof *cs);
  if (strlen(want) >= sizeof cs->name || !bw_charset_known(want))
    return bw_fail(BW_INVALID_ARGUMENT, "unknown charset");
  for (size_t i = 0; want[i]; i++)
    cs->name[i] = (char)(want[i] >= 'A' && want[i] <= 'Z' ? want[i] + 32 : want[i]);
  const char *bom_of = NULL;
  size_t bom = bw_charset_bom(data, len, &bom_of);
  if (bom && !strcmp(bom_of, cs->name)) cs->bom = bom;
  cs->utf8 = !strcmp(cs->name, "utf-8") || !strcmp(cs->name, "utf8");
  return BW_OK;
}

/* An edit of a file in another encoding: its text decoded to UTF-8 (and
 * checked to encode back to the same bytes, so nothing the agent did not
 * touch can change), edited, then encoded back behind the same BOM. */
static int apply_in(const bw_charset *cs, const char *data, size_t len,
                    apply_fn fn, const void *arg, const bw_edit_opts *o,
                    bw_edit_out *out, int *failed) {
  char *u = NULL, *back = NULL, *enc = NULL;
  size_t ulen, blen, elen;
  const char *body = data + cs->bom;
  size_t blen0 = len - cs->bom;
  int rc = bw_charset_decode(cs->name, body, blen0, &u, &ulen);
  if (!rc && memchr(u, '\0', ulen < BINARY_PROBE ? ulen : BINARY_PROBE))
    rc = bw_fail(BW_BINARY, NULL);
  if (!rc && (rc = bw_charset_encode(cs->name, u, ulen, &back, &blen)) == BW_OK &&
      (blen != blen0 || memcmp(back, body, blen)))
    rc = bw_fail(BW_INVALID_ARGUMENT, "the file does not read back to the same bytes in that charset");
  free(back);
  *failed = rc != BW_OK;
  if (!rc) rc = fn(u, ulen, arg, o, out);
  if (!rc) *failed = (rc = bw_charset_encode(cs->name, out->text, out->len, &enc, &elen)) != BW_OK;
  if (!rc) {
    char *t = malloc(cs->bom + elen + 1);
    if (!t) rc = BW_ENOMEM;
    else {
      memcpy(t, data, cs->bom);
      memcpy(t + cs->bom, enc, elen);
      free(out->text);
      out->text = t;
      out->len = cs->bom + elen;
    }
  }
  free(enc);
  free(u);
  if (rc) bw_edit_out_free(out);
  return rc;
}

/* held: the directory's write lock, taken by the caller (or NULL) */
static int read_edit_write(const bw_root *r, const char *rel,
                           const bw_edit_file_opts *o, bw_edit_file_res *res,
                           apply_fn fn, const void *arg,
                           const bw_dir_lock *held) {
  char *data;
  size_t len;
  int rc = bw_read_copy(r, rel, o->max_bytes ? o->max_bytes : (size_t)1 << 40, &data, &len);
  if (rc) return rc;
  res->old_size = len;
  bw_charset cs;
  rc = file_charset(data, len, o->charset, o->charsets, &cs);
  res->charset_failed = rc != BW_OK;
  if (!rc && cs.utf8 && memchr(data, '\0', len < BINARY_PROBE ? len : BINARY_PROBE))
    rc = bw_fail(BW_BINARY, NULL);
  if (!rc) memcpy(res->charset, cs.name, sizeof res->charset);
  if (!rc) rc = bw_sha256(data, len, res->old_hash);
  if (!rc && o->expected_hash && strcmp(o->expected_hash, res->old_hash)) {
    strcpy(res->current_hash, res->old_hash);
    rc = bw_fail(BW_HASH_MISMATCH, NULL);
  }
  if (!rc && cs.utf8) rc = fn(data, len, arg, &o->e, &res->out);
  else if (!rc) rc = apply_in(&cs, data, len, fn, arg, &o->e, &res->out, &res->charset_failed);
  if (!rc && !o->dry_run && o->commit) rc = o->commit(o->commit_ud, res->out.placed);
  if (!rc && o->dry_run) rc = bw_sha256(res->out.text, res->out.len, res->hash);
  if (!rc && !o->dry_run) { /* compare-and-set against what we read */
    bw_write_opts wo = {.expected_hash = res->old_hash, .max_compare = o->max_bytes,
                        .held = held};
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

/* Read, edit and compare-and-set, all under the directory's write lock,
 * so a concurrent edit by another burrow process lands before our read or
 * after our write, never between: none is lost. */
static int file_op(const bw_root *r, const char *rel, const bw_edit_file_opts *o,
                   bw_edit_file_res *res, apply_fn fn, const void *arg) {
  memset(res, 0, sizeof *res);
  if (r->readonly && !o->dry_run) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  bw_dir_lock lk = BW_DIR_UNLOCKED;
  if (!o->dry_run && bw_lock_parent(r, rel, 0, &lk) == BW_EAGAIN)
    return BW_EAGAIN;
  /* any other failure: the read says what is wrong with the path, or, if
     it reads, the write takes the lock itself */
  int rc = read_edit_write(r, rel, o, res, fn, arg, lk.fd >= 0 ? &lk : NULL);
  bw_unlock_dir(&lk);
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
