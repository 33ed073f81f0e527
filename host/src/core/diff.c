/*
 * diff.c - the unified diff of an edit, built from the spans applied (no
 * diff algorithm): each span's lines become a region, grown while its new
 * text ends mid-line, lines unchanged at either end given back as context;
 * regions within 2 * context lines share a hunk. Cut at whole lines past
 * max_diff.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edit.h"

/* Changed lines [a, e) (e == a: nothing removed) and the spans in them. */
typedef struct region {
  size_t a, e;
  size_t s0, s1;
} region;

/* Take span i into the region: the lines it touches become changed. */
static void region_take(const view *v, region *r, const span *s) {
  size_t e = s->end > s->start ? bw_line_of(v, s->end - 1) + 1
             : s->start > v->ls[r->a] ? bw_line_of(v, s->start) + 1 /* mid-line */
                                      : r->e;
  if (e > v->nl) e = v->nl;
  if (e > r->e) r->e = e;
}

/* Grow a region until its new text ends on a line boundary (a span that
 * ate a newline joins the next line) and holds every span it touches;
 * tmp gets the region's new bytes. Built as it grows, each byte once: the
 * text after the last span, up to the region's end, is all that is put
 * again at each step, and the region grows only while that is empty (a
 * non-empty one ends with the newline of its last line), so a replace_all
 * of every newline costs the file's length, not lines times bytes. */
static int region_close(const view *v, const spans *sp, region *r, sbuf *tmp) {
  size_t pos = v->ls[r->a], k = r->s0;
  tmp->len = 0;
  for (;;) {
    while (r->s1 < sp->n && (r->s1 == r->s0 || sp->s[r->s1].start < v->ls[r->e]))
      region_take(v, r, &sp->s[r->s1++]);
    for (; k < r->s1; k++) { /* the spans taken since: their gap, their text */
      bw_sb_put(tmp, v->s + pos, sp->s[k].start - pos);
      bw_sb_put(tmp, sp->s[k].repl, sp->s[k].rlen);
      pos = sp->s[k].end;
    }
    size_t kept = tmp->len;
    if (v->ls[r->e] > pos) bw_sb_put(tmp, v->s + pos, v->ls[r->e] - pos);
    if (tmp->oom) return BW_ENOMEM;
    int open = tmp->len > 0 && tmp->p[tmp->len - 1] != '\n';
    if (!open || r->e >= v->nl) return BW_OK;
    tmp->len = kept; /* the text after the last span goes on to the new end */
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

static void put_line(differ *df, char mark, const char *s, size_t n,
                     int open) {
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
  bw_sb_putc(&df->hunk, mark);
  bw_sb_put(&df->hunk, s, n);
  bw_sb_putc(&df->hunk, '\n');
  if (open) bw_sb_put(&df->hunk, "\\ No newline at end of file\n", 28);
}

static void put_old(differ *df, char mark, size_t i) {
  const view *v = df->v;
  put_line(df, mark, v->s + v->ls[i], v->ls[i + 1] - v->ls[i],
           i + 1 == v->nl && bw_file_ends_open(v));
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
    bw_sb_put(&df->diff, head, (size_t)hl);
    bw_sb_put(&df->diff, df->hunk.p, df->hunk.len);
    return;
  }
  df->out->diff_truncated = 1;
  if ((size_t)hl >= room) return;
  size_t keep = room - (size_t)hl; /* the hunk's lines that fit, whole */
  while (keep > 0 && df->hunk.p[keep - 1] != '\n') keep--;
  if (keep == 0) return;
  bw_sb_put(&df->diff, head, (size_t)hl);
  bw_sb_put(&df->diff, df->hunk.p, keep);
}

int bw_make_diff(const view *v, const spans *sp, const bw_edit_opts *o,
                 bw_edit_out *out) {
  differ df = {.v = v, .o = o, .out = out};
  size_t ctx = o->context, i = 0, first = 0, prev_e = 0;
  int in_hunk = 0, rc = BW_OK;
  while (i < sp->n && !rc) {
    region r = {.a = bw_line_of(v, sp->s[i].start), .s0 = i, .s1 = i};
    if (r.a == v->nl && r.a > 0 && bw_file_ends_open(v)) r.a--; /* at EOF */
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
  bw_sb_putc(&df.diff, '\0'); /* a C string too, for callers that want one */
  df.diff.len--;
  if (df.diff.oom || df.hunk.oom || df.tmp.oom) rc = BW_ENOMEM;
  free(df.hunk.p);
  free(df.tmp.p);
  out->diff = df.diff.p;
  out->diff_len = df.diff.len;
  return rc;
}
